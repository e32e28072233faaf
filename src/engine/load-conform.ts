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
import { BadFileError, ResourceError } from '../errors.js';
import { ambiguityError, castError } from './cast-error.js';
import { parseDuckType } from './duck-type.js';
import type { DuckSession } from './duckdb.js';
import { fitCastSql, misfitSql } from './fit-cast.js';
import { csvDialect, fileSelectSql, LINEAGE_COLUMNS, SOURCE_ROW, temporalFormats, type CsvOptions, type LoadFile } from './file-select.js';
import { ident } from './sql.js';
import { ambiguitySql } from './text-cast.js';
import { deltaTypeToDuckForWrite } from './type-map-write.js';

/** A column and its DuckDB type. */
export interface FileColumn {
  name: string;
  type: string;
}

/** How one file is read into the table's types. */
export interface ConformedFile {
  file: LoadFile;
  /** The file's data columns as read (CSV columns read as text say VARCHAR). */
  columns: FileColumn[];
  /** Columns the table lacks. */
  newColumns: string[];
  /** SELECT of the file's rows in the table's types, plus lineage columns. */
  select: string;
  /** The select list of `select` without the lineage columns (the casts into the table's types). */
  projection: string;
}

/** The file's columns as DuckDB reads them; a file DuckDB cannot read is a BadFileError naming it. */
export async function describeFile(session: DuckSession, file: LoadFile, csv: CsvOptions | undefined, text: readonly string[] = []): Promise<FileColumn[]> {
  try {
    const rows = await session.all(`DESCRIBE ${fileSelectSql(file, csv, text)}`);
    const lineage = new Set<string>(LINEAGE_COLUMNS);
    return rows.map((r) => ({ name: String(r['column_name']), type: String(r['column_type']) })).filter((c) => !lineage.has(c.name));
  } catch (err) {
    throw unreadable(file, err);
  }
}

/** Lines of DuckDB's long CSV messages that say what is wrong and where (not the data itself). */
const TELLING_LINES = /^(It was not possible to .*|CSV Error on Line: \d+|Expected Number of Columns: .*|Error when converting column .*)$/;

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
  const message = err instanceof Error ? err.message : String(err);
  if (RESOURCE_FAILURE.test(message)) {
    if (/No space left on device/i.test(message)) throw err;
    throw new ResourceError(
      `[load] DuckDB ran out of memory while reading ${file.key} (the file is not at fault): ${message.split('\n')[0]}; ` +
        'raise engine.memoryLimit, lower engine.threads or maxFilesPerBatch, then run again',
      { kind: 'terminal', context: { key: file.key }, cause: err },
    );
  }
  const lines = (err instanceof Error ? err.message : String(err)).split(file.localPath).join(file.key).split('\n');
  const telling = lines.slice(1).filter((l) => TELLING_LINES.test(l.trim())).map((l) => l.trim());
  const line = /CSV Error on Line: (\d+)/.exec(lines.join('\n'))?.[1];
  return new BadFileError(`[load] cannot read ${file.key}: ${[lines[0]!, ...telling].join('; ')}`, {
    context: { key: file.key, ...(line ? { line: Number(line) } : {}) },
    cause: err,
  });
}

/** Plan how to read `file` in `schema`'s types. */
export async function conformFile(session: DuckSession, file: LoadFile, schema: StructType, csv?: CsvOptions): Promise<ConformedFile> {
  return conformWith(session, file, schema, csv, false);
}

async function conformWith(session: DuckSession, file: LoadFile, schema: StructType, csv: CsvOptions | undefined, allText: boolean): Promise<ConformedFile> {
  const sniffed = await describeFile(session, file, csv);
  const isCsv = file.format === 'csv' || file.format === 'tsv';
  const text = isCsv ? sniffed.filter((c) => allText || fieldOf(schema, c.name)).map((c) => c.name) : [];
  const textSet = new Set(text);
  const columns = sniffed.map((c) => (textSet.has(c.name) ? { name: c.name, type: 'VARCHAR' } : c));
  const projection = columns.map((c) => {
    const field = fieldOf(schema, c.name);
    return field ? `${fitCastSql(ident(c.name), c.type, field.type, field.name, temporalFormats(csv))} AS ${ident(field.name)}` : ident(c.name);
  });
  const select = `SELECT ${[...projection, ...LINEAGE_COLUMNS.map(ident)].join(', ')} FROM (${fileSelectSql(file, csv, text)})`;
  const newColumns = columns.filter((c) => !fieldOf(schema, c.name)).map((c) => c.name);
  return { file, columns, newColumns, select, projection: projection.join(', ') };
}

function fieldOf(schema: StructType, name: string): StructField | undefined {
  const lower = name.toLowerCase();
  return schema.fields.find((f) => f.name === name) ?? schema.fields.find((f) => f.name.toLowerCase() === lower);
}

/**
 * Why `file` cannot be loaded in `schema`'s types: a BadFileError naming the first value that
 * does not fit (file, row, column), or DuckDB's reason; null when the file loads on its own.
 * CSV columns are all read as text here, so a value the sniffer mistyped cannot hide the row.
 */
export async function diagnoseFile(session: DuckSession, file: LoadFile, schema: StructType, csv?: CsvOptions): Promise<BadFileError | null> {
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
async function firstMisfit(session: DuckSession, plan: ConformedFile, schema: StructType, csv?: CsvOptions): Promise<BadFileError | null> {
  const formats = temporalFormats(csv);
  const checks = plan.columns.flatMap((c) => {
    const field = fieldOf(schema, c.name);
    const sql = field ? misfitSql(ident(c.name), c.type, field.type, formats) : null;
    if (!field || !sql) return [];
    const ambiguity = c.type === 'VARCHAR' ? ambiguitySql(ident(c.name), parseDuckType(deltaTypeToDuckForWrite(field.type)), formats) : null;
    return [{ column: c, field, sql, ambiguity }];
  });
  if (checks.length === 0) return null;
  const isCsv = plan.file.format === 'csv' || plan.file.format === 'tsv';
  const text = plan.columns.filter((c) => c.type === 'VARCHAR').map((c) => c.name);
  const flags = checks.flatMap((k, i) => [
    `${k.sql} AS m${i}`,
    `CAST(${ident(k.column.name)} AS VARCHAR) AS v${i}`,
    ...(k.ambiguity ? [`${k.ambiguity.predicate} AS a${i}`, `CAST(${k.ambiguity.first} AS VARCHAR) AS f${i}`, `CAST(${k.ambiguity.second} AS VARCHAR) AS s${i}`] : []),
  ]);
  const line = isCsv ? `, ${csvLineSql(text, csvDialect(plan.file.format as 'csv' | 'tsv', csv).header)} AS line` : '';
  const sql =
    `SELECT * FROM (SELECT ${ident(SOURCE_ROW)} AS r${line}, ${flags.join(', ')} FROM (${fileSelectSql(plan.file, csv, text)})) ` +
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
  const where = { file: plan.file.key, row: row['r'], ...(isCsv ? { line: row['line'] } : {}) };
  if (row[`a${i}`] === true) {
    const temporal = deltaTypeToDuckForWrite(k.field.type) === 'DATE' ? 'dateFormat' : 'timestampFormat';
    return ambiguityError({ column: k.field.name, value: row[`v${i}`], readings: [row[`f${i}`], row[`s${i}`]], setting: temporal, ...where }, '[load]');
  }
  return castError({ column: k.field.name, type: deltaTypeToDuckForWrite(k.field.type, k.field.name), sourceType: k.column.type, value: row[`v${i}`], ...where }, '[load]');
}

/**
 * The CSV line a data row starts on (1-based, the header counted): rows before it plus the line
 * breaks inside their quoted fields. `text` are the file's columns, all read as text.
 */
function csvLineSql(text: readonly string[], header: boolean): string {
  const breaks = text.length === 0 ? '0' : text.map((c) => `coalesce(length(${ident(c)}) - length(replace(${ident(c)}, chr(10), '')), 0)`).join(' + ');
  const before = `coalesce(sum(${breaks}) OVER (ORDER BY ${ident(SOURCE_ROW)} ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)`;
  return `${ident(SOURCE_ROW)} + ${header ? 1 : 0} + ${before}`;
}
