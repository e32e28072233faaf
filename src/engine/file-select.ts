/**
 * The SELECT that reads one source file with DuckDB (Parquet, CSV/TSV, JSON/NDJSON, gzip or zstd
 * where the format allows), plus its lineage columns: the source file, its modification time
 * and each row's 1-based position.
 */
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

function csvArgs(format: 'csv' | 'tsv', opts: CsvOptions | undefined, path: string, text: readonly string[]): string {
  // Pin the delimiter and forbid skipped rows: left alone, DuckDB's sniffer "repairs" a ragged
  // file by skipping rows or reading one wide column, which would drop data silently.
  const delimiter = opts?.delimiter ?? (format === 'tsv' ? '\t' : ',');
  const args = [str(path), `delim = ${str(delimiter)}`, 'skip = 0', 'strict_mode = true', 'null_padding = false'];
  if (opts?.header !== undefined) args.push(`header = ${opts.header}`);
  if (opts?.quote !== undefined) args.push(`quote = ${str(opts.quote)}`);
  if (opts?.nullstr !== undefined) args.push(`nullstr = ${str(opts.nullstr)}`);
  const compression = compressionOf(path);
  if (compression !== 'none') args.push(`compression = ${str(compression)}`);
  if (text.length > 0) args.push(`types = {${text.map((c) => `${str(c)}: 'VARCHAR'`).join(', ')}}`);
  return args.join(', ');
}

/**
 * SELECT of one file's rows plus lineage columns. `text` names CSV columns to read as text
 * (VARCHAR) instead of the sniffed type; they must exist in the file.
 */
export function fileSelectSql(file: LoadFile, csv?: CsvOptions, text: readonly string[] = []): string {
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
      return `SELECT *, ${lineage}, row_number() OVER () AS ${ident(SOURCE_ROW)} FROM read_csv(${csvArgs(file.format, csv, file.localPath, text)})`;
    case 'json':
    case 'ndjson':
      return `SELECT *, ${lineage}, row_number() OVER () AS ${ident(SOURCE_ROW)} FROM read_json(${str(file.localPath)}, format = ${file.format === 'ndjson' ? "'newline_delimited'" : "'auto'"}${jsonCompression})`;
  }
}
