/**
 * Load source files into one DuckDB table with lineage columns. Files are read in bulk; when
 * DuckDB rejects the bulk read, each file is tried alone so the error names the bad file.
 */
import { BadFileError } from '../errors.js';
import type { DuckSession } from './duckdb.js';
import type { SourceFormat } from './source-format.js';
import { compressionOf } from './source-format.js';
import { ident, literal, str } from './sql.js';

/** Lineage columns every loaded row carries. */
export const SOURCE_FILE = '_source_file';
export const SOURCE_MODIFIED = '_source_modified';
export const SOURCE_ROW = '_source_row';
export const LINEAGE_COLUMNS = [SOURCE_FILE, SOURCE_MODIFIED, SOURCE_ROW] as const;

export interface CsvOptions {
  header?: boolean;
  delimiter?: string;
  quote?: string;
  nullstr?: string;
}

export interface LoadFile {
  /** Path DuckDB reads (in place or in the spool); must be free of glob characters. */
  localPath: string;
  /** Source object key, recorded as `_source_file` and used in errors. */
  key: string;
  lastModified: Date;
  format: SourceFormat;
}

export interface LoadOptions {
  /** Name of the table to create (replaced if it exists). */
  table: string;
  csv?: CsvOptions;
  /** Files per UNION statement; bounds the SQL text size. */
  chunkSize?: number;
}

function csvArgs(format: 'csv' | 'tsv', opts: CsvOptions | undefined, path: string): string {
  // Pin the delimiter and forbid skipped rows: left alone, DuckDB's sniffer "repairs" a ragged
  // file by skipping rows or reading one wide column, which would drop data silently.
  const delimiter = opts?.delimiter ?? (format === 'tsv' ? '\t' : ',');
  const args = [str(path), `delim = ${str(delimiter)}`, 'skip = 0', 'strict_mode = true', 'null_padding = false'];
  if (opts?.header !== undefined) args.push(`header = ${opts.header}`);
  if (opts?.quote !== undefined) args.push(`quote = ${str(opts.quote)}`);
  if (opts?.nullstr !== undefined) args.push(`nullstr = ${str(opts.nullstr)}`);
  const compression = compressionOf(path);
  if (compression !== 'none') args.push(`compression = ${str(compression)}`);
  return args.join(', ');
}

/** SELECT of one file's rows plus lineage columns. */
export function fileSelectSql(file: LoadFile, csv?: CsvOptions): string {
  const lineage =
    `${literal(file.key)} AS ${ident(SOURCE_FILE)}, ` +
    `${str(file.lastModified.toISOString())}::TIMESTAMPTZ AS ${ident(SOURCE_MODIFIED)}`;
  const compression = compressionOf(file.localPath);
  const jsonCompression = compression === 'none' ? '' : `, compression = ${str(compression)}`;
  switch (file.format) {
    case 'parquet':
      return `SELECT * EXCLUDE (file_row_number), ${lineage}, file_row_number + 1 AS ${ident(SOURCE_ROW)} FROM read_parquet(${str(file.localPath)}, file_row_number = true, hive_partitioning = false)`;
    case 'csv':
    case 'tsv':
      return `SELECT *, ${lineage}, row_number() OVER () AS ${ident(SOURCE_ROW)} FROM read_csv(${csvArgs(file.format, csv, file.localPath)})`;
    case 'json':
    case 'ndjson':
      return `SELECT *, ${lineage}, row_number() OVER () AS ${ident(SOURCE_ROW)} FROM read_json(${str(file.localPath)}, format = ${file.format === 'ndjson' ? "'newline_delimited'" : "'auto'"}${jsonCompression})`;
  }
}

/** Replace the local path in DuckDB's message with the object key, so errors name the source. */
function describeFailure(err: unknown, file: LoadFile): string {
  const message = err instanceof Error ? err.message : String(err);
  return message.split(file.localPath).join(file.key).split('\n')[0]!;
}

/** Find the first file DuckDB cannot read on its own; throws a BadFileError naming it. */
async function diagnose(session: DuckSession, files: LoadFile[], csv: CsvOptions | undefined, bulkError: unknown): Promise<never> {
  for (const file of files) {
    try {
      await session.run(`SELECT count(*) FROM (${fileSelectSql(file, csv)})`);
    } catch (err) {
      throw new BadFileError(`[load] cannot read ${file.key}: ${describeFailure(err, file)}`, { context: { key: file.key }, cause: err });
    }
  }
  // Every file reads alone: the files disagree with each other (e.g. incompatible column types).
  const message = bulkError instanceof Error ? bulkError.message.split('\n')[0] : String(bulkError);
  throw new BadFileError(`[load] files ${files.map((f) => f.key).join(', ')} cannot be combined: ${message}`, {
    context: { key: files[0]?.key },
    cause: bulkError,
  });
}

/** Load `files` into `opts.table`; returns the row count. An empty list creates no table and returns 0. */
export async function loadFiles(session: DuckSession, files: LoadFile[], opts: LoadOptions): Promise<number> {
  if (files.length === 0) return 0;
  const chunkSize = opts.chunkSize ?? 64;
  const parts: string[] = [];
  try {
    for (let i = 0; i < files.length; i += chunkSize) {
      const chunk = files.slice(i, i + chunkSize);
      const part = `${opts.table}__part${parts.length}`;
      const union = chunk.map((f) => fileSelectSql(f, opts.csv)).join('\nUNION ALL BY NAME\n');
      try {
        await session.run(`CREATE OR REPLACE TEMP TABLE ${ident(part)} AS ${union}`);
      } catch (err) {
        await diagnose(session, chunk, opts.csv, err);
      }
      parts.push(part);
    }
    const all = parts.map((p) => `SELECT * FROM ${ident(p)}`).join('\nUNION ALL BY NAME\n');
    await session.run(`CREATE OR REPLACE TEMP TABLE ${ident(opts.table)} AS ${all}`);
  } finally {
    for (const p of parts) await session.run(`DROP TABLE IF EXISTS ${ident(p)}`);
  }
  const row = await session.one(`SELECT count(*)::BIGINT AS n FROM ${ident(opts.table)}`);
  return Number(row?.['n'] ?? 0);
}
