/**
 * Reading source files in the target table's types. Each file is described first (DuckDB infers
 * its columns: Parquet's own schema, CSV and JSON by sniffing), then read with every column the
 * table has cast to the table's type by a checked cast (./fit-cast.ts). So files whose inferred
 * types differ (one CSV's `amount` all integers, another's with decimals, a third's empty) all
 * load as the table's DECIMAL, the batch's key and orderBy are typed before dedupe, and a value
 * that does not fit fails naming its file, row and column.
 *
 * CSV columns the table has are read as text and converted by the exact rules of
 * ./text-cast.ts, never in the sniffer's types (which trim blanks, read `1e3` as a number and
 * guess a date format per file). Columns the table lacks keep their inferred types (schema
 * evolution).
 */
import type { StructField, StructType } from '../delta/schema.js';
import { BadFileError, ResourceError, SchemaError } from '../errors.js';
import { ambiguityError, castError } from './cast-error.js';
import { csvPhysicalLine, csvRecordLine } from './csv-records.js';
import { parseDuckType, type DuckType } from './duck-type.js';
import type { DuckSession } from './duckdb.js';
import { fitCastSql, misfitSql } from './fit-cast.js';
import { recordTexts, type PathValues } from './json-numbers.js';
import { isNestedDuck, leafChecks, nestedAdditions } from './nested-fit.js';
import {
  csvDialect,
  csvHeaderSql,
  describeDialect,
  fileSelectSql,
  LINEAGE_COLUMNS,
  SOURCE_ROW,
  temporalFormats,
  type CsvDialect,
  type CsvOptions,
  type LoadFile,
} from './file-select.js';
import { ident, str } from './sql.js';
import { ambiguitySql } from './text-cast.js';
import { deltaTypeToDuckForWrite } from './type-map-write.js';

/** A column and its DuckDB type. */
export interface FileColumn {
  name: string;
  type: string;
  /**
   * A Parquet INT96 timestamp (Spark's, Hive's, Impala's legacy encoding): DuckDB reads it as a
   * naive TIMESTAMP, but it is an instant, as Spark reads it (./parquet-timestamps.ts).
   */
  int96?: true;
}

/** How one file is read into the table's types. */
export interface ConformedFile {
  file: LoadFile;
  /** The file's data columns as read (CSV columns read as text say VARCHAR). */
  columns: FileColumn[];
  /** SELECT of the file's rows in the table's types, plus lineage columns. */
  select: string;
  /** The select list of `select` without the lineage columns (the casts into the table's types). */
  projection: string;
  /** The file's rows as read, before the casts (CSV columns of the table as text), with lineage. */
  raw: string;
}

/** The file's columns as DuckDB reads them; a file DuckDB cannot read is a BadFileError naming it. */
export async function describeFile(
  session: DuckSession,
  file: LoadFile,
  csv: CsvOptions | undefined,
  text: readonly string[] = [],
): Promise<FileColumn[]> {
  let rows;
  try {
    rows = await session.all(`DESCRIBE ${fileSelectSql(file, csv, text)}`);
  } catch (err) {
    throwIfResourceFailure(file.key, err);
    // A CSV line DuckDB's sniffer stopped at (a Latin-1 byte) is named as a later read names it.
    const line =
      file.format === 'csv' || file.format === 'tsv'
        ? await csvLineError(session, file, csvDialect(file.format, csv), err)
        : null;
    throw line ?? unreadable(file, err);
  }
  const all = rows.map((r) => ({ name: String(r['column_name']), type: String(r['column_type']) }));
  // The lineage columns come last, once each; the file's own columns are the ones before them.
  const columns = all.slice(0, all.length - LINEAGE_COLUMNS.length);
  if (file.format === 'parquet' && columns.some((c) => c.type === 'TIMESTAMP'))
    await markInt96(session, file, columns);
  if (file.format === 'parquet' && columns.some((c) => c.type.includes('DOUBLE')))
    await refuseWideDecimals(session, file);
  if (file.format === 'parquet' && columns.some((c) => hasRenamedField(parseDuckType(c.type))))
    await refuseCaseClashingFields(session, file);
  if ((file.format === 'csv' || file.format === 'tsv') && columns.length > 0) {
    const dialect = csvDialect(file.format, csv);
    if (dialect.header) await checkCsvHeader(session, file, dialect, columns.length);
  }
  checkColumnNames(
    file,
    columns.map((c) => c.name),
  );
  return columns;
}

/** Flag the top-level TIMESTAMP columns that the Parquet file holds as INT96. */
async function markInt96(
  session: DuckSession,
  file: LoadFile,
  columns: FileColumn[],
): Promise<void> {
  let rows;
  try {
    rows = await session.all(
      `SELECT name FROM parquet_schema(${str(file.localPath)}) WHERE type = 'INT96'`,
    );
  } catch (err) {
    throw unreadable(file, err);
  }
  const names = new Set(rows.map((r) => String(r['name'])));
  for (const c of columns) if (c.type === 'TIMESTAMP' && names.has(c.name)) c.int96 = true;
}

/** A struct field (at any depth) named as DuckDB renames a second spelling of a name (`A_1`). */
function hasRenamedField(t: DuckType): boolean {
  switch (t.kind) {
    case 'struct':
      return t.fields.some((f) => /_\d+$/.test(f.name) || hasRenamedField(f.type));
    case 'list':
    case 'array':
      return hasRenamedField(t.element);
    case 'map':
      return hasRenamedField(t.key) || hasRenamedField(t.value);
    default:
      return false;
  }
}

/**
 * A Parquet group whose fields are named alike but for case (`a` and `A`), or twice, is refused
 * naming both: DuckDB renames the second (`A_1`, a name the file does not hold), and Delta field
 * names ignore case. (Top-level names: checkColumnNames.)
 */
async function refuseCaseClashingFields(session: DuckSession, file: LoadFile): Promise<void> {
  let rows;
  try {
    rows = await session.all(
      `SELECT name, coalesce(num_children, 0) AS n FROM parquet_schema(${str(file.localPath)})`,
    );
  } catch (err) {
    throw unreadable(file, err);
  }
  // parquet_schema lists the schema depth first, the root first: rebuild each group's children.
  const stack: { path: string; left: number; names: Map<string, string> }[] = [];
  for (const [i, r] of rows.entries()) {
    const name = String(r['name']);
    const parent = stack.at(-1);
    const path = i === 0 ? '' : parent && parent.path !== '' ? `${parent.path}.${name}` : name;
    if (parent) {
      parent.left--;
      const first = parent.names.get(name.toLowerCase());
      if (first !== undefined && parent.path !== '') {
        const firstPath = `${parent.path}.${first}`;
        throw new BadFileError(
          `[load] cannot load ${file.key}: it has fields ${JSON.stringify(firstPath)} and ${JSON.stringify(path)}, whose names ${first === name ? 'are the same' : 'differ only by case'}: ` +
            'Delta field names ignore case, so they would be one field (DuckDB renames the second); rename one in the source',
          { context: { key: file.key, column: path, columns: [firstPath, path] } },
        );
      }
      parent.names.set(name.toLowerCase(), name);
    }
    const children = Number(r['n']);
    if (children > 0) stack.push({ path, left: children, names: new Map() });
    while (stack.length > 0 && stack.at(-1)!.left === 0) stack.pop();
  }
}

/**
 * A Parquet decimal of more than 38 digits (pyarrow's `decimal256`) has no Delta type, and DuckDB
 * reads it as a DOUBLE, wrongly (a `decimal(45,0)` 1 read as 1099511627776, DuckDB 1.5), where a
 * right reading would still round it: such a column, top-level or nested, is refused naming it.
 */
async function refuseWideDecimals(session: DuckSession, file: LoadFile): Promise<void> {
  let rows;
  try {
    rows = await session.all(
      `SELECT name, precision, scale FROM parquet_schema(${str(file.localPath)}) WHERE precision > 38`,
    );
  } catch (err) {
    throw unreadable(file, err);
  }
  const wide = rows[0];
  if (!wide) return;
  const name = String(wide['name']);
  const type = `decimal(${String(wide['precision'])},${String(wide['scale'])})`;
  throw new BadFileError(
    `[load] cannot load ${file.key}: its column ${JSON.stringify(name)} is a Parquet ${type}, wider than the 38 digits of a Delta decimal (DuckDB would read it as a double, changing its values); ` +
      'write it as decimal(38,s) or as a string upstream',
    { context: { key: file.key, column: name, type } },
  );
}

/**
 * A CSV header that names one column twice (`id,x,x`, or `x` and ` x `, which DuckDB trims to one
 * name) is refused naming both fields: DuckDB would rename the second `x_1`, a name the file does
 * not hold, and a file that does hold an `x_1` column would share it. Names that differ only by
 * case are refused as in `checkColumnNames`, by the names as written.
 */
async function checkCsvHeader(
  session: DuckSession,
  file: LoadFile,
  dialect: CsvDialect,
  fields: number,
): Promise<void> {
  let header;
  try {
    header = await session.one(csvHeaderSql(file.localPath, dialect, fields));
  } catch (err) {
    throw unreadable(file, err);
  }
  if (!header) return;
  const seen = new Map<string, { name: string; field: number }>();
  for (let i = 0; i < fields; i++) {
    const name = header[`c${i}`] == null ? '' : String(header[`c${i}`]);
    // DuckDB names an empty header field `column<N>`: no clash of its own.
    if (name.trim() === '') continue;
    const first = seen.get(name.trim().toLowerCase());
    if (first === undefined) {
      seen.set(name.trim().toLowerCase(), { name, field: i + 1 });
      continue;
    }
    if (first.name.trim() !== name.trim()) throw caseClash(file, first.name, name);
    throw new BadFileError(
      `[load] cannot load ${file.key}: line 1, its header names column ${JSON.stringify(name.trim())} twice (fields ${first.field} and ${i + 1}); ` +
        'one name holds one column: rename one in the source',
      { context: { key: file.key, line: 1, column: name.trim(), fields: [first.field, i + 1] } },
    );
  }
}

/**
 * A file's column names must mean one thing each: a column named like tidemark's lineage
 * (`_source_file`, `_source_modified`, `_source_row`, in any case) would share a column with it,
 * and names that differ only by case (`Amount`, `amount`) are one column to Delta and to every
 * reader, where DuckDB renames the second (`amount_1`). Both are refused naming the file and the
 * names. Across files, names are matched ignoring case (`Amount` in one file and `amount` in the
 * next are the same column).
 */
export function checkColumnNames(file: LoadFile, names: readonly string[]): void {
  const reserved = names.find((n) =>
    (LINEAGE_COLUMNS as readonly string[]).includes(n.toLowerCase()),
  );
  if (reserved !== undefined) {
    throw new BadFileError(
      `[load] cannot load ${file.key}: it has a column named ${JSON.stringify(reserved)}, a name tidemark reserves for its lineage columns (${LINEAGE_COLUMNS.join(', ')}); rename the column in the source`,
      { context: { key: file.key, column: reserved } },
    );
  }
  const lower = new Map<string, string>();
  for (const n of names) {
    // The names as the file spells them (JSON keys), or as DuckDB renamed the second (`amount_1`).
    const first = lower.get(n.toLowerCase());
    if (first !== undefined && first !== n) throw caseClash(file, first, n);
    if (first === undefined) lower.set(n.toLowerCase(), n);
  }
  for (const n of names) {
    const renamed = /^(.*)_\d+$/.exec(n);
    const first = renamed ? lower.get(renamed[1]!.toLowerCase()) : undefined;
    if (!renamed || first === undefined || first === renamed[1]) continue;
    throw caseClash(file, first, renamed[1]!);
  }
}

/**
 * Keys of one JSON object path that differ only by case (`{"s": {"a": 1, "A": 2}}`, in one record
 * or in two), named with the line of the second: what a read of the file that stopped at DuckDB's
 * 'Duplicate name "A" in struct' (with a hint to ignore errors, which would drop rows) is told as.
 * One name holds one field in Delta. `name`: the key DuckDB named; an object DuckDB reads as a
 * MAP may hold other such keys.
 */
export function nestedCaseClash(
  file: LoadFile,
  paths: Iterable<PathValues>,
  name: string,
): BadFileError | null {
  const seen = new Map<string, PathValues>();
  for (const p of paths) {
    if (p.segments.length < 2) continue; // top-level: checkColumnNames
    // Only keys spelled as the one DuckDB stopped at: a MAP's keys may differ by case too.
    if (p.segments.at(-1)!.toLowerCase() !== name.toLowerCase()) continue;
    const lower = p.segments.map((s) => s.toLowerCase()).join('\u0001');
    const first = seen.get(lower);
    if (first === undefined) {
      seen.set(lower, p);
      continue;
    }
    const line = Math.min(...Object.values(p.first).map((at) => at.line));
    return new BadFileError(
      `[load] cannot load ${file.key}: line ${line}, it has fields ${JSON.stringify(first.column)} and ${JSON.stringify(p.column)}, whose names differ only by case: ` +
        'Delta field names ignore case, so they would be one field; rename one in the source',
      { context: { key: file.key, line, column: p.column, columns: [first.column, p.column] } },
    );
  }
  return null;
}

function caseClash(file: LoadFile, first: string, second: string): BadFileError {
  return new BadFileError(
    `[load] cannot load ${file.key}: it has columns ${JSON.stringify(first)} and ${JSON.stringify(second)}, whose names differ only by case: ` +
      'Delta column names ignore case, so they would be one column; rename one in the source',
    { context: { key: file.key, column: first, columns: [first, second] } },
  );
}

/**
 * A BadFileError for a CSV file that breaks the job's dialect at DuckDB's "CSV Error on Line: N"
 * (`duckError`), naming the line and what is wrong with it; null when DuckDB named no line.
 * DuckDB's N counts the lines a record could start on (a line break inside quotes is not
 * counted): the error names the file's own line (./csv-records.ts).
 */
export async function csvLineError(
  session: DuckSession,
  file: LoadFile,
  dialect: CsvDialect,
  duckError: unknown,
  cause?: unknown,
): Promise<BadFileError | null> {
  const text = duckError instanceof Error ? duckError.message : String(duckError);
  const counted = /CSV Error on Line: (\d+)/.exec(text)?.[1];
  if (counted === undefined) return null;
  let line = Number(counted);
  try {
    line = (await csvPhysicalLine(session, file, dialect, line)) ?? line;
  } catch {
    // DuckDB's count stands: the file's lines cannot be read here.
  }
  return new BadFileError(
    `[load] cannot read ${file.key}: line ${line}: ${csvProblem(text)}; the job reads CSV with ${describeDialect(dialect)} (source.csv)`,
    {
      context: { key: file.key, line },
      cause: cause ?? duckError,
    },
  );
}

/** What DuckDB says is wrong with a CSV line. Its message also quotes the line: data, never copied. */
function csvProblem(duckMessage: string): string {
  const columns = /Expected Number of Columns: (\d+) Found: (\d+)/.exec(duckMessage);
  if (columns) return `expected ${columns[1]} fields, found ${columns[2]}`;
  if (/unterminated quote/i.test(duckMessage))
    return 'a quoted field is not closed (unterminated quote)';
  if (/invalid unicode/i.test(duckMessage))
    return 'invalid UTF-8 (is it a text file? tidemark reads CSV as UTF-8: convert a Latin-1, Windows-1252 or UTF-16 export to UTF-8 upstream)';
  const size = /Maximum line size of \d+ bytes exceeded/.exec(duckMessage);
  return size ? size[0] : 'the line does not follow the dialect';
}

/** Lines of DuckDB's long CSV messages that say what is wrong and where (not the data itself). */
const TELLING_LINES =
  /^(It was not possible to .*|CSV Error on Line: \d+|Expected Number of Columns: .*|Error when converting column .*)$/;

/** DuckDB messages that say the machine, not the file, failed: memory, or the disk it spills to. */
const RESOURCE_FAILURE = /^Out of Memory Error|No space left on device|could not allocate block/i;

/**
 * A BadFileError for a file DuckDB cannot read, with DuckDB's reason (local path replaced by the
 * key) and, for CSV, the line it stopped at (`context.line`, 1-based, counting the header).
 * Running out of memory or disk is no fault of the file, and quarantining a good file for it
 * would lose its rows: that is thrown as a ResourceError (a full disk as the original error,
 * which the job scope names with its spool folder).
 */
export function unreadable(file: LoadFile, err: unknown): BadFileError {
  throwIfResourceFailure(file.key, err);
  const lines = (err instanceof Error ? err.message : String(err))
    .split(file.localPath)
    .join(file.key)
    .split('\n');
  const telling = lines
    .slice(1)
    .filter((l) => TELLING_LINES.test(l.trim()))
    .map((l) => l.trim());
  // DuckDB's JSON reader quotes the whole record of a duplicate key: data, never copied.
  const twice = /in line (\d+): Object .* has duplicate key "(.*)"$/.exec(lines[0]!);
  if (twice)
    return new BadFileError(
      `[load] cannot read ${file.key}: line ${twice[1]}: an object has the key ${JSON.stringify(twice[2])} twice; one key holds one field: remove one in the source`,
      { context: { key: file.key, line: Number(twice[1]), column: twice[2]! }, cause: err },
    );
  const line = /CSV Error on Line: (\d+)/.exec(lines.join('\n'))?.[1];
  return new BadFileError(`[load] cannot read ${file.key}: ${[lines[0]!, ...telling].join('; ')}`, {
    context: { key: file.key, ...(line ? { line: Number(line) } : {}) },
    cause: err,
  });
}

/** Running out of memory or disk while reading `what` (a file, or a batch's files): thrown as such, never blamed on a file. */
export function throwIfResourceFailure(what: string, err: unknown, files = 1): void {
  const message = err instanceof Error ? err.message : String(err);
  if (!RESOURCE_FAILURE.test(message)) return;
  if (/No space left on device/i.test(message)) throw err;
  throw new ResourceError(
    `[load] DuckDB ran out of memory while reading ${what} (${files === 1 ? 'the file is' : 'the files are'} not at fault): ${message.split('\n')[0]}; ` +
      'raise engine.memoryLimit, lower engine.threads or maxFilesPerBatch, then run again',
    { kind: 'terminal', context: { key: what }, cause: err },
  );
}

/** Plan how to read `file` in `schema`'s types; `described`: the file's columns, when already described. */
export async function conformFile(
  session: DuckSession,
  file: LoadFile,
  schema: StructType,
  csv?: CsvOptions,
  described?: FileColumn[],
): Promise<ConformedFile> {
  return conformWith(session, file, schema, csv, false, described);
}

async function conformWith(
  session: DuckSession,
  file: LoadFile,
  schema: StructType,
  csv: CsvOptions | undefined,
  allText: boolean,
  described?: FileColumn[],
): Promise<ConformedFile> {
  const sniffed = described ?? (await describeFile(session, file, csv));
  const isCsv = file.format === 'csv' || file.format === 'tsv';
  const text = isCsv
    ? sniffed.filter((c) => allText || fieldOf(schema, c.name)).map((c) => c.name)
    : [];
  const textSet = new Set(text);
  const columns = sniffed.map((c) => (textSet.has(c.name) ? { name: c.name, type: 'VARCHAR' } : c));
  refuseNewNestedFields(file, columns, schema);
  const projection = columns.map((c) => {
    const field = fieldOf(schema, c.name);
    if (field)
      return `${fitCastSql(ident(c.name), c.type, field.type, field.name, temporalFormats(csv))} AS ${ident(field.name)}`;
    // A column DuckDB reads as JSON (texts mixed with other values) is read as text; ./json-texts.ts puts the file's texts in.
    return c.type === 'JSON'
      ? `CAST(${ident(c.name)} AS VARCHAR) AS ${ident(c.name)}`
      : ident(c.name);
  });
  const raw = fileSelectSql(file, csv, text);
  const select = `SELECT ${[...projection, ...LINEAGE_COLUMNS.map(ident)].join(', ')} FROM (${raw})`;
  return { file, columns, select, projection: projection.join(', '), raw };
}

/**
 * A struct field the table's column lacks (`obj.z`) would be dropped by the cast: refused naming
 * it. Under `schemaEvolution: addColumns` the load widens the column's type first (../engine/load.ts),
 * so no field is left to refuse here.
 */
function refuseNewNestedFields(
  file: LoadFile,
  columns: readonly FileColumn[],
  schema: StructType,
): void {
  for (const c of columns) {
    const field = fieldOf(schema, c.name);
    const added = field ? nestedAdditions(c.type, field.type, field.name) : [];
    if (added.length === 0) continue;
    throw new SchemaError(
      `[load] ${file.key} has ${added.length === 1 ? 'a field' : 'fields'} ${added.map((a) => JSON.stringify(a)).join(', ')} that the table's column ${JSON.stringify(field!.name)} lacks; ` +
        "schemaEvolution is 'fail' (set it to 'addColumns' to add them)",
      { context: { key: file.key, column: added[0]!, columns: added } },
    );
  }
}

function fieldOf(schema: StructType, name: string): StructField | undefined {
  const lower = name.toLowerCase();
  return (
    schema.fields.find((f) => f.name === name) ??
    schema.fields.find((f) => f.name.toLowerCase() === lower)
  );
}

/**
 * Why `file` cannot be loaded in `schema`'s types: a BadFileError naming the first value that
 * does not fit (file, row, column), or DuckDB's reason; null when the file loads on its own.
 * CSV columns are all read as text here, so a value the sniffer mistyped cannot hide the row.
 */
export async function diagnoseFile(
  session: DuckSession,
  file: LoadFile,
  schema: StructType,
  csv?: CsvOptions,
): Promise<BadFileError | null> {
  let plan: ConformedFile;
  try {
    plan = await conformWith(session, file, schema, csv, true);
  } catch (err) {
    return err instanceof BadFileError ? err : unreadable(file, err);
  }
  const misfit = await firstMisfit(session, plan, schema, csv);
  if (misfit) return misfit;
  try {
    await session.run(`CREATE OR REPLACE TEMP TABLE __tm_probe AS ${plan.select}`);
    return null;
  } catch (err) {
    return unreadable(file, err);
  } finally {
    await session.run('DROP TABLE IF EXISTS __tm_probe');
  }
}

/** The first row of the file with a value that does not fit its column (or a date text that reads two ways), as a BadFileError. */
async function firstMisfit(
  session: DuckSession,
  plan: ConformedFile,
  schema: StructType,
  csv?: CsvOptions,
): Promise<BadFileError | null> {
  const formats = temporalFormats(csv);
  const checks: MisfitCheck[] = plan.columns.flatMap((c) => {
    const field = fieldOf(schema, c.name);
    const sql = field ? misfitSql(ident(c.name), c.type, field.type, formats) : null;
    if (!field || !sql) return [];
    const source = parseDuckType(c.type);
    const leaves = isNestedDuck(source)
      ? leafChecks(ident(c.name), source, field.type, field.name, misfitSql, formats)
      : [];
    // A nested column: its leaves name the field (obj.x); the whole column's check comes last.
    const nested = leaves.map((l) => ({
      name: l.path,
      top: c.name,
      sql: l.predicate,
      value: l.value,
      type: deltaTypeToDuckForWrite(l.target, l.path),
      sourceType: l.sourceType,
      ambiguity: null,
    }));
    const ambiguity =
      c.type === 'VARCHAR'
        ? ambiguitySql(ident(c.name), parseDuckType(deltaTypeToDuckForWrite(field.type)), formats)
        : null;
    const whole = {
      name: field.name,
      top: c.name,
      sql,
      value: `CAST(${ident(c.name)} AS VARCHAR)`,
      type: deltaTypeToDuckForWrite(field.type, field.name),
      sourceType: c.type,
      ambiguity,
    };
    return [...nested, whole];
  });
  if (checks.length === 0) return null;
  const isCsv = plan.file.format === 'csv' || plan.file.format === 'tsv';
  const text = plan.columns.filter((c) => c.type === 'VARCHAR').map((c) => c.name);
  const flags = checks.flatMap((k, i) => [
    `${k.sql} AS m${i}`,
    `CAST(${k.value} AS VARCHAR) AS v${i}`,
    ...(k.ambiguity
      ? [
          `${k.ambiguity.predicate} AS a${i}`,
          `CAST(${k.ambiguity.first} AS VARCHAR) AS f${i}`,
          `CAST(${k.ambiguity.second} AS VARCHAR) AS s${i}`,
        ]
      : []),
  ]);
  const sql =
    `SELECT * FROM (SELECT ${ident(SOURCE_ROW)} AS r, ${flags.join(', ')} FROM (${fileSelectSql(plan.file, csv, text)})) ` +
    `WHERE ${checks.map((_, i) => `m${i}`).join(' OR ')} ORDER BY r LIMIT 1`;
  let row: Record<string, unknown> | undefined;
  try {
    row = await session.one(sql);
  } catch (err) {
    return unreadable(plan.file, err);
  }
  if (!row) return null;
  const i = checks.findIndex((_, j) => row![`m${j}`] === true);
  const k = checks[i]!;
  const line = isCsv
    ? await csvDataRowLine(session, plan, csv, Number(row['r']))
    : await jsonRecordLine(session, plan.file, checks[i]!.top, Number(row['r']));
  const where = { file: plan.file.key, row: row['r'], ...(line != null ? { line } : {}) };
  if (row[`a${i}`] === true) {
    const temporal = k.type === 'DATE' ? 'dateFormat' : 'timestampFormat';
    return ambiguityError(
      {
        column: k.name,
        value: row[`v${i}`],
        readings: [row[`f${i}`], row[`s${i}`]],
        setting: temporal,
        ...where,
      },
      '[load]',
    );
  }
  return castError(
    {
      column: k.name,
      type: k.type,
      sourceType: k.sourceType,
      value: row[`v${i}`],
      typeOf: 'read',
      ...where,
    },
    '[load]',
  );
}

/**
 * The line a JSON or NDJSON file's `row`-th record holds its `column` on (read once more, only
 * for the error); undefined for other formats, or where the record has no such value.
 */
async function jsonRecordLine(
  session: DuckSession,
  file: LoadFile,
  column: string,
  row: number,
): Promise<number | undefined> {
  if (file.format !== 'json' && file.format !== 'ndjson') return undefined;
  try {
    const { texts } = await recordTexts(session, file, new Set([column.toLowerCase()]));
    return texts.find((t) => t.row === row)?.line;
  } catch {
    return undefined; // the error names the row still
  }
}

/** One value check of `firstMisfit`: a column, or a leaf of a nested one (`obj.x`). */
interface MisfitCheck {
  name: string;
  /** The file's top-level column the value is in. */
  top: string;
  sql: string;
  /** SQL of the checked value (shown in the message). */
  value: string;
  /** DuckDB type written for it, and its source type. */
  type: string;
  sourceType: string;
  ambiguity: { predicate: string; first: string; second: string } | null;
}

/**
 * The line a CSV file's `row`-th data row starts on (read once more, only for the error: blank
 * lines DuckDB skipped and line breaks inside quoted fields are counted); undefined where the
 * file's lines cannot be read.
 */
async function csvDataRowLine(
  session: DuckSession,
  plan: ConformedFile,
  csv: CsvOptions | undefined,
  row: number,
): Promise<number | undefined> {
  const dialect = csvDialect(plan.file.format as 'csv' | 'tsv', csv);
  try {
    const record = row + (dialect.header ? 1 : 0);
    return await csvRecordLine(session, plan.file, dialect, plan.columns.length, record);
  } catch {
    return undefined; // the error names the row still
  }
}
