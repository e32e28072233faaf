/**
 * The SELECT that reads one source file with DuckDB (Parquet, CSV/TSV, JSON/NDJSON, gzip or zstd
 * where the format allows), plus its lineage columns: the source file, its modification time
 * and each row's 1-based position.
 */
import type { SourceFormat } from './source-format.js';
import { compressionOf } from './source-format.js';
import { ident, literal, str } from './sql.js';
import type { TemporalFormats } from './text-cast.js';

/** Lineage columns every loaded row carries. */
export const SOURCE_FILE = '_source_file';
export const SOURCE_MODIFIED = '_source_modified';
export const SOURCE_ROW = '_source_row';
export const LINEAGE_COLUMNS = [SOURCE_FILE, SOURCE_MODIFIED, SOURCE_ROW] as const;

/** `source.csv` as configured; anything not set takes the RFC 4180 default (see `csvDialect`). */
export interface CsvOptions {
  header?: boolean;
  delimiter?: string;
  quote?: string;
  escape?: string;
  nullstr?: string;
  /** strptime format of date texts (`%d/%m/%Y`); ISO dates always read. */
  dateFormat?: string;
  /** strptime format of timestamp texts; ISO 8601 timestamps always read. */
  timestampFormat?: string;
}

/** The job's date and timestamp formats, for the text conversions (./text-cast.ts). */
export function temporalFormats(opts: CsvOptions = {}): TemporalFormats {
  return {
    ...(opts.dateFormat !== undefined ? { date: opts.dateFormat } : {}),
    ...(opts.timestampFormat !== undefined ? { timestamp: opts.timestampFormat } : {}),
  };
}

/** The one dialect a job reads every CSV/TSV file with. */
export interface CsvDialect {
  header: boolean;
  delimiter: string;
  /** Empty: fields are never quoted. */
  quote: string;
  escape: string;
  nullstr?: string;
}

/**
 * The job's dialect: RFC 4180 (`,`, `"` quotes escaped by doubling, a header row) unless
 * `source.csv` says otherwise; TSV files default to a tab. The escape follows the quote.
 */
export function csvDialect(format: 'csv' | 'tsv', opts: CsvOptions = {}): CsvDialect {
  const quote = opts.quote ?? '"';
  return {
    header: opts.header ?? true,
    delimiter: opts.delimiter ?? (format === 'tsv' ? '\t' : ','),
    quote,
    escape: opts.escape ?? quote,
    ...(opts.nullstr !== undefined ? { nullstr: opts.nullstr } : {}),
  };
}

/** `delimiter ',', quote '"', escape '"' and a header row`: the dialect as error messages show it. */
export function describeDialect(d: CsvDialect): string {
  const show = (c: string) => (c === '' ? 'none' : c === '\t' ? 'tab' : `'${c}'`);
  return `delimiter ${show(d.delimiter)}, quote ${show(d.quote)}, escape ${show(d.escape)} and ${d.header ? 'a header row' : 'no header row'}`;
}

export interface LoadFile {
  /** Path DuckDB reads (in place or in the spool); must be free of glob characters. */
  localPath: string;
  /** Source object key, recorded as `_source_file` and used in errors. */
  key: string;
  lastModified: Date;
  format: SourceFormat;
}

/**
 * read_csv options that pin the whole dialect, so DuckDB's sniffer detects column types only.
 * Left to it, the sniffer guesses a dialect per file (one file read as unquoted, its `"new`
 * loaded quote and all), takes `#` lines for comments and drops them, and "repairs" a ragged
 * file by skipping rows; strict mode makes a file that breaks the dialect an error instead.
 */
function dialectArgs(d: CsvDialect, path: string): string[] {
  const args = [
    `delim = ${str(d.delimiter)}`,
    `quote = ${str(d.quote)}`,
    `escape = ${str(d.escape)}`,
    `header = ${d.header}`,
    "comment = ''",
    'skip = 0',
    'strict_mode = true',
    'null_padding = false',
    // RFC 4180: a quoted empty field is an empty string; only an unquoted one is NULL.
    'allow_quoted_nulls = false',
    // Local files are read in place: a `dt=2026-11-30/` folder in the path is no column.
    'hive_partitioning = false',
  ];
  if (d.nullstr !== undefined) args.push(`nullstr = ${str(d.nullstr)}`);
  const compression = compressionOf(path);
  if (compression !== 'none') args.push(`compression = ${str(compression)}`);
  return args;
}

/** The read_csv options of the job's dialect for files like `path` (its compression), as SQL text. */
export function csvListArgs(
  format: 'csv' | 'tsv',
  opts: CsvOptions | undefined,
  path: string,
): string {
  return dialectArgs(csvDialect(format, opts), path).join(', ');
}

function csvArgs(
  format: 'csv' | 'tsv',
  opts: CsvOptions | undefined,
  path: string,
  text: readonly string[],
): string {
  const args = [str(path), ...dialectArgs(csvDialect(format, opts), path)];
  if (text.length > 0) args.push(`types = {${text.map((c) => `${str(c)}: 'VARCHAR'`).join(', ')}}`);
  return args.join(', ');
}

/**
 * The header record of a CSV file as the file spells it, `fields` text columns `c0`, `c1`, … (no
 * sniffer): DuckDB's own reading of a header trims the names and renames a repeated one (`x_1`).
 */
export function csvHeaderSql(path: string, dialect: CsvDialect, fields: number): string {
  const columns = Array.from({ length: fields }, (_, i) => `${str(`c${i}`)}: 'VARCHAR'`).join(', ');
  const args = [str(path), ...dialectArgs({ ...dialect, header: false }, path)];
  return `SELECT * FROM read_csv(${[...args, 'auto_detect = false', `columns = {${columns}}`].join(', ')}) LIMIT 1`;
}

/**
 * The first physical line of a CSV file, as one text column (no quoting, no sniffer): what
 * `countCsvFields` needs when the sniffer refused the file and named no line.
 */
export function csvFirstLineSql(path: string): string {
  const compression = compressionOf(path);
  const args = [
    str(path),
    'auto_detect = false',
    'header = false',
    "columns = {'line': 'VARCHAR'}",
    `delim = ${str('\u0001')}`,
    "quote = ''",
    "escape = ''",
    "comment = ''",
    'strict_mode = false',
    'null_padding = true',
    'hive_partitioning = false',
    ...(compression === 'none' ? [] : [`compression = ${str(compression)}`]),
  ];
  return `SELECT line FROM read_csv(${args.join(', ')}) LIMIT 1`;
}

/**
 * Read every record of a CSV file in the dialect as `fields` text columns, without the sniffer:
 * a record that breaks the dialect fails with DuckDB's "CSV Error on Line: N".
 */
export function csvStrictReadSql(path: string, dialect: CsvDialect, fields: number): string {
  const columns = Array.from({ length: fields }, (_, i) => `${str(`c${i}`)}: 'VARCHAR'`).join(', ');
  return `SELECT count(*) AS n FROM read_csv(${[str(path), ...dialectArgs(dialect, path), 'auto_detect = false', `columns = {${columns}}`].join(', ')})`;
}

/**
 * SELECT of one file's rows plus lineage columns. `text` names CSV columns to read as text
 * (VARCHAR) instead of the sniffed type; they must exist in the file.
 */
export function fileSelectSql(
  file: LoadFile,
  csv?: CsvOptions,
  text: readonly string[] = [],
): string {
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
      return `SELECT *, ${lineage}, row_number() OVER () AS ${ident(SOURCE_ROW)} FROM read_json(${str(file.localPath)}, format = ${file.format === 'ndjson' ? "'newline_delimited'" : "'auto'"}, hive_partitioning = false${jsonCompression})`;
  }
}
