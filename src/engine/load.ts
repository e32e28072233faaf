/**
 * Load source files into one DuckDB table with lineage columns. Files are read in bulk (Parquet
 * files of the same columns by one read_parquet, ./parquet-list.ts); when DuckDB rejects the bulk
 * read, each file is tried alone so the error names the bad file.
 *
 * Every file is read in one schema (./load-conform.ts): the target table's, the columns the job
 * declares (`source.columns`), and for CSV columns neither knows, the types inferred once from
 * all the batch's CSV files together (./infer-text-types.ts).
 * A zero-byte CSV or JSON file holds no rows (some producers write empty files); a zero-byte
 * Parquet file is not a Parquet file.
 */
import { stat } from 'node:fs/promises';
import type { StructField, StructType } from '../delta/schema.js';
import { BadFileError } from '../errors.js';
import type { DuckSession } from './duckdb.js';
import { countCsvFields, csvDialect, csvFirstLineSql, csvStrictReadSql, describeDialect, fileSelectSql, LINEAGE_COLUMNS, type CsvOptions, type LoadFile } from './file-select.js';
import { parseDuckType } from './duck-type.js';
import { inferTextColumns } from './infer-text-types.js';
import { inexactAcrossFiles, inexactNumber, scanJsonNumbers, type ColumnNumbers } from './json-numbers.js';
import { nestedAdditions, withNewFields } from './nested-fit.js';
import { conformFile, describeFile, diagnoseFile, throwIfResourceFailure, unreadable, type ConformedFile, type FileColumn } from './load-conform.js';
import { parquetListSql } from './parquet-list.js';
import { ident } from './sql.js';

export { fileSelectSql, SOURCE_FILE, SOURCE_MODIFIED, SOURCE_ROW, type CsvOptions, type LoadFile } from './file-select.js';

export interface LoadOptions {
  /** Name of the table to create (replaced if it exists). */
  table: string;
  csv?: CsvOptions;
  /** Reads (a file, or a list of Parquet files) per UNION statement; bounds the SQL text size. */
  chunkSize?: number;
  /**
   * The target table's schema, when it exists: its columns are read in its types, and a value
   * that does not fit is a BadFileError naming file, row and column. Without it CSV columns are
   * inferred from the batch (see the module comment) and Parquet and JSON files bring their own
   * types, which the bulk read combines.
   */
  schema?: StructType;
  /** Columns whose type the job declares (`source.columns`), for columns the table lacks. */
  declared?: readonly StructField[];
  /** The job's key columns: never inferred as a floating type. */
  keyColumns?: readonly string[];
  /**
   * Struct fields the files add to the table's columns (`obj.z`) are read into the column's type
   * widened by them (`schemaEvolution: addColumns`; the MERGE then adds them to the table);
   * otherwise such a file is refused naming the fields.
   */
  addNestedFields?: boolean;
}

/** A column the files bring that the target schema lacks. */
export interface NewColumn {
  name: string;
  /** Keys of the files that have it. */
  files: string[];
}

/** What a load read. */
export interface LoadResult {
  rows: number;
  /** Columns not in `LoadOptions.schema`, with their files (empty without a schema). */
  newColumns: NewColumn[];
  /** Keys of zero-byte files, which hold no rows. */
  emptyFiles: string[];
}

/** Load `files` into `opts.table`; returns the row count. Nothing to read creates no table and returns 0. */
export async function loadFiles(session: DuckSession, files: LoadFile[], opts: LoadOptions): Promise<number> {
  return (await loadSourceFiles(session, files, opts)).rows;
}

/** Load `files` into `opts.table` (see the module comment). Nothing to read creates no table. */
export async function loadSourceFiles(session: DuckSession, files: readonly LoadFile[], opts: LoadOptions): Promise<LoadResult> {
  const { readable, emptyFiles } = await skipEmpty(files);
  if (readable.length === 0) return { rows: 0, newColumns: [], emptyFiles };
  const described = new Map<LoadFile, FileColumn[]>();
  const schema = await batchSchema(session, readable, opts, described);
  const plans = schema ? await conformAll(session, readable, schema, opts.csv, described) : null;
  const units = readUnits(readable, plans, opts.csv);
  const chunkSize = opts.chunkSize ?? 64;
  const readOpts = schema ? { ...opts, schema } : opts;
  if (units.reduce((n, u) => n + u.scans, 0) <= chunkSize) {
    // The common case: one statement creates the table, with no intermediate copy.
    await createFrom(session, opts.table, units, readOpts);
  } else {
    await createInParts(session, units, chunkSize, readOpts);
  }
  const row = await session.one(`SELECT count(*)::BIGINT AS n FROM ${ident(opts.table)}`);
  return { rows: Number(row?.['n'] ?? 0), newColumns: plans && opts.schema ? newColumnsOf(plans, opts.schema) : [], emptyFiles };
}

/** Too many reads for one statement: a temp table per chunk, then one table of them all. */
async function createInParts(session: DuckSession, units: readonly ReadUnit[], chunkSize: number, opts: LoadOptions): Promise<void> {
  const parts: string[] = [];
  try {
    for (const chunk of chunks(units, chunkSize)) {
      const part = `${opts.table}__part${parts.length}`;
      await createFrom(session, part, chunk, opts);
      parts.push(part);
    }
    const all = parts.map((p) => `SELECT * FROM ${ident(p)}`).join('\nUNION ALL BY NAME\n');
    await session.run(`CREATE OR REPLACE TEMP TABLE ${ident(opts.table)} AS ${all}`);
  } finally {
    for (const p of parts) await session.run(`DROP TABLE IF EXISTS ${ident(p)}`);
  }
}

/**
 * Create `table` from the UNION ALL BY NAME of `units`. When that fails and some unit reads many
 * Parquet files at once, the files are read one by one instead (DuckDB's union_by_name can refuse
 * types that UNION ALL BY NAME combines); when that fails too, the bad file is named.
 */
async function createFrom(session: DuckSession, table: string, units: readonly ReadUnit[], opts: LoadOptions): Promise<void> {
  const create = (selects: readonly string[]) =>
    session.run(`CREATE OR REPLACE TEMP TABLE ${ident(table)} AS ${selects.join('\nUNION ALL BY NAME\n')}`);
  try {
    await create(units.map((u) => u.select));
    return;
  } catch (err) {
    const files = units.flatMap((u) => u.files);
    if (!units.some((u) => u.perFile.length > 1)) return diagnose(session, files, opts, err);
  }
  try {
    await create(units.flatMap((u) => u.perFile));
  } catch (err) {
    await diagnose(session, units.flatMap((u) => u.files), opts, err);
  }
}

/** One SELECT reading some of the files, and the same files' reads one by one. */
interface ReadUnit {
  files: LoadFile[];
  select: string;
  perFile: string[];
  /** File scans the SELECT opens at once (a read_parquet of many files is one; each CSV read is one): each holds its buffers. */
  scans: number;
}

/** Consecutive units of at most `size` scans each (a unit larger than that alone). */
function chunks(units: readonly ReadUnit[], size: number): ReadUnit[][] {
  const out: ReadUnit[][] = [];
  let current: ReadUnit[] = [];
  let scans = 0;
  for (const u of units) {
    if (current.length > 0 && scans + u.scans > size) {
      out.push(current);
      current = [];
      scans = 0;
    }
    current.push(u);
    scans += u.scans;
  }
  if (current.length > 0) out.push(current);
  return out;
}

/** Files read together: Parquet files by one read_parquet, CSV files by one union of their texts. */
interface ReadGroup {
  kind: 'parquet' | 'text';
  files: LoadFile[];
  perFile: string[];
  raws: string[];
  projection?: string;
}

/** CSV files per union: a union of many reads binds slowly. */
const TEXT_GROUP = 16;

/**
 * How to read `files`: Parquet files that DuckDB reads with the same columns (all of them, without
 * a schema; those of equal described columns, with one) in one read_parquet; CSV files of the same
 * columns read in the table's types by one union of their texts under one projection (the
 * conversions are long expressions: compiled once per group, not once per file); JSON files, and
 * CSV files without a schema, one by one. Units keep the order of the files' first appearance.
 */
function readUnits(files: readonly LoadFile[], plans: readonly ConformedFile[] | null, csv?: CsvOptions): ReadUnit[] {
  const open = new Map<string, ReadGroup>();
  const order: (ReadUnit | ReadGroup)[] = [];
  files.forEach((file, i) => {
    const plan = plans?.[i];
    const select = plan ? plan.select : fileSelectSql(file, csv);
    const kind = file.format === 'parquet' ? 'parquet' : plan && (file.format === 'csv' || file.format === 'tsv') ? 'text' : null;
    if (kind === null) return void order.push({ files: [file], select, perFile: [select], scans: 1 });
    const signature = `${kind}:${plan ? JSON.stringify(plan.columns) : '*'}`;
    let group = open.get(signature);
    if (!group || (kind === 'text' && group.files.length >= TEXT_GROUP)) {
      group = { kind, files: [], perFile: [], raws: [], ...(plan ? { projection: plan.projection } : {}) };
      open.set(signature, group);
      order.push(group);
    }
    group.files.push(file);
    group.perFile.push(select);
    if (plan) group.raws.push(plan.raw);
  });
  return order.map((entry) =>
    'select' in entry ? entry : { files: entry.files, select: groupSelect(entry), perFile: entry.perFile, scans: entry.kind === 'text' ? entry.files.length : 1 },
  );
}

function groupSelect(g: ReadGroup): string {
  if (g.files.length === 1) return g.perFile[0]!;
  if (g.kind === 'text') return `SELECT ${[g.projection!, ...LINEAGE_COLUMNS.map(ident)].join(', ')} FROM (${g.raws.join('\nUNION ALL BY NAME\n')})`;
  return parquetListSql(g.files, { unionByName: g.projection === undefined, ...(g.projection === undefined ? {} : { projection: g.projection }) });
}

/** Zero-byte files hold no rows, except that a Parquet file cannot be empty. */
async function skipEmpty(files: readonly LoadFile[]): Promise<{ readable: LoadFile[]; emptyFiles: string[] }> {
  const readable: LoadFile[] = [];
  const emptyFiles: string[] = [];
  for (const file of files) {
    const size = (await stat(file.localPath)).size;
    if (size > 0) readable.push(file);
    else if (file.format === 'parquet') {
      throw new BadFileError(`[load] cannot read ${file.key}: the file is empty (0 bytes), not a Parquet file`, { context: { key: file.key } });
    } else emptyFiles.push(file.key);
  }
  return { readable, emptyFiles };
}

/**
 * The types the batch is read in: the table's, then the declared columns it lacks, then the
 * inferred types of CSV columns still unknown (./infer-text-types.ts: from all the batch's CSV
 * files together, never per file). Undefined when there is nothing to read in given types (no
 * table, nothing declared, no CSV): Parquet and JSON files bring their own types.
 */
async function batchSchema(session: DuckSession, files: readonly LoadFile[], opts: LoadOptions, described: Map<LoadFile, FileColumn[]>): Promise<StructType | undefined> {
  const base = [...(opts.schema?.fields ?? [])];
  const known = new Set(base.map((f) => f.name.toLowerCase()));
  for (const f of opts.declared ?? []) {
    if (known.has(f.name.toLowerCase())) continue;
    base.push(f);
    known.add(f.name.toLowerCase());
  }
  // Every file is described once (its names checked, ./load-conform.ts), and CSV columns the
  // types do not know yet are inferred from their texts.
  const texts = [];
  const jsons: { file: LoadFile; numbers: Map<string, ColumnNumbers> }[] = [];
  for (const file of files) {
    try {
      const columns = await describeFile(session, file, opts.csv);
      described.set(file, columns);
      if (file.format === 'csv' || file.format === 'tsv') texts.push({ file, columns: columns.map((c) => c.name) });
    } catch (err) {
      throw err instanceof BadFileError ? await withCsvLine(session, file, opts.csv, err) : err;
    }
    if (file.format === 'json' || file.format === 'ndjson') {
      // DuckDB reads JSON numbers through doubles: a number it cannot give back exactly is refused (./json-numbers.ts).
      const numbers = await scanJsonNumbers(session, file);
      const bad = inexactNumber(file, numbers);
      if (bad) throw bad;
      jsons.push({ file, numbers });
    }
  }
  const mixed = inexactAcrossFiles(jsons, known);
  if (mixed) throw mixed;
  if (opts.addNestedFields) widenNested(base, described);
  let inferred: StructField[];
  try {
    inferred = await inferTextColumns(session, { files: texts, known, ...(opts.csv ? { csv: opts.csv } : {}), ...(opts.keyColumns ? { keyColumns: opts.keyColumns } : {}) });
  } catch (err) {
    // A file DuckDB cannot read as text past its sniffer sample (a ragged row): name it.
    for (const { file, columns } of texts) {
      try {
        await session.one(`SELECT count(*) AS n FROM (${fileSelectSql(file, opts.csv, columns)})`);
      } catch (fileErr) {
        throw await withCsvLine(session, file, opts.csv, unreadable(file, fileErr));
      }
    }
    throw err;
  }
  const fields = [...base, ...inferred];
  return fields.length === 0 && !opts.schema ? undefined : { type: 'struct', fields };
}

/** The fields of `fields` widened, in place, by the struct fields the described files add to them. */
function widenNested(fields: StructField[], described: ReadonlyMap<LoadFile, FileColumn[]>): void {
  for (const columns of described.values()) {
    for (const c of columns) {
      const i = fields.findIndex((f) => f.name.toLowerCase() === c.name.toLowerCase());
      const field = fields[i];
      if (!field || nestedAdditions(c.type, field.type, field.name).length === 0) continue;
      fields[i] = { ...field, type: withNewFields(field.type, parseDuckType(c.type), field.name) };
    }
  }
}

async function conformAll(
  session: DuckSession,
  files: readonly LoadFile[],
  schema: StructType,
  csv: CsvOptions | undefined,
  described: ReadonlyMap<LoadFile, FileColumn[]>,
): Promise<ConformedFile[]> {
  const plans: ConformedFile[] = [];
  for (const file of files) {
    try {
      plans.push(await conformFile(session, file, schema, csv, described.get(file)));
    } catch (err) {
      throw err instanceof BadFileError ? await withCsvLine(session, file, csv, err) : err;
    }
  }
  return plans;
}

/** The columns the files bring that `schema` (the table's) lacks. */
function newColumnsOf(plans: readonly ConformedFile[], schema: StructType): NewColumn[] {
  const byName = new Map<string, NewColumn>();
  const known = new Set(schema.fields.map((f) => f.name.toLowerCase()));
  for (const p of plans) {
    for (const { name } of p.columns.filter((c) => !known.has(c.name.toLowerCase()))) {
      const entry = byName.get(name.toLowerCase()) ?? { name, files: [] };
      entry.files.push(p.file.key);
      byName.set(name.toLowerCase(), entry);
    }
  }
  return [...byName.values()];
}

/** Find the first file DuckDB cannot read on its own; throws a BadFileError naming it. */
async function diagnose(session: DuckSession, files: readonly LoadFile[], opts: LoadOptions, bulkError: unknown): Promise<never> {
  for (const file of files) {
    if (opts.schema) {
      const bad = await diagnoseFile(session, file, opts.schema, opts.csv);
      if (bad) throw await withCsvLine(session, file, opts.csv, bad);
      continue;
    }
    try {
      await session.run(`CREATE OR REPLACE TEMP TABLE __tm_probe AS ${fileSelectSql(file, opts.csv)}`);
    } catch (err) {
      throw await withCsvLine(session, file, opts.csv, unreadable(file, err));
    } finally {
      await session.run('DROP TABLE IF EXISTS __tm_probe');
    }
  }
  // Every file reads alone: the files disagree with each other (e.g. incompatible column types),
  // or the machine could not hold them all at once.
  throwIfResourceFailure(`${files.length} files`, bulkError, files.length);
  const message = bulkError instanceof Error ? bulkError.message.split('\n')[0] : String(bulkError);
  const named = files.length > 5 ? `${files.slice(0, 5).map((f) => f.key).join(', ')} and ${files.length - 5} more` : files.map((f) => f.key).join(', ');
  throw new BadFileError(`[load] files ${named} cannot be combined: ${message}`, {
    context: { key: files[0]?.key },
    cause: bulkError,
  });
}

/**
 * DuckDB's sniffer refuses a CSV file that breaks the pinned dialect within its sample
 * ("not possible to automatically detect the CSV parsing dialect") without naming a line. Read
 * the file again without the sniffer, as many text columns as the first line has fields, so
 * DuckDB names the line; `bad` itself when the file is not CSV, already names a line, row or
 * column, or reads that way (the problem is elsewhere).
 */
async function withCsvLine(session: DuckSession, file: LoadFile, csv: CsvOptions | undefined, bad: BadFileError): Promise<BadFileError> {
  if (file.format !== 'csv' && file.format !== 'tsv') return bad;
  if (bad.context.line !== undefined || bad.context.row !== undefined || bad.context.column !== undefined) return bad;
  const dialect = csvDialect(file.format, csv);
  try {
    const first = await session.one(csvFirstLineSql(file.localPath));
    const fields = typeof first?.['line'] === 'string' ? countCsvFields(first['line'], dialect) : null;
    if (fields === null) return bad;
    await session.run(csvStrictReadSql(file.localPath, dialect, fields));
    return bad;
  } catch (err) {
    const text = err instanceof Error ? err.message : String(err);
    const line = /CSV Error on Line: (\d+)/.exec(text)?.[1];
    if (line === undefined) return bad;
    return new BadFileError(`[load] cannot read ${file.key}: line ${line}: ${csvProblem(text)}; the job reads CSV with ${describeDialect(dialect)} (source.csv)`, {
      context: { key: file.key, line: Number(line) },
      cause: bad.cause ?? err,
    });
  }
}

/** What DuckDB says is wrong with a CSV line. Its message also quotes the line: data, never copied. */
function csvProblem(duckMessage: string): string {
  const columns = /Expected Number of Columns: (\d+) Found: (\d+)/.exec(duckMessage);
  if (columns) return `expected ${columns[1]} fields, found ${columns[2]}`;
  if (/unterminated quote/i.test(duckMessage)) return 'a quoted field is not closed (unterminated quote)';
  if (/invalid unicode/i.test(duckMessage)) return 'invalid UTF-8 (is it a text file?)';
  const size = /Maximum line size of \d+ bytes exceeded/.exec(duckMessage);
  return size ? size[0] : 'the line does not follow the dialect';
}
