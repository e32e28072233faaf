/**
 * One read_parquet over many files instead of one read per file: DuckDB plans and parallelizes a
 * single scan, which is several times faster than a UNION of hundreds of per-file reads. Each
 * row's lineage comes from a small inline (path → key, modified) table joined on the path DuckDB
 * reports, so `_source_file`, `_source_modified` and `_source_row` are exactly those of
 * `fileSelectSql` for the same file, except that `_source_file` is an ENUM of the files' keys
 * (see `sourceFileEnum`).
 */
import {
  LINEAGE_COLUMNS,
  SOURCE_FILE,
  SOURCE_MODIFIED,
  SOURCE_ROW,
  type LoadFile,
} from './file-select.js';
import { safeReadPath } from './safe-alias.js';
import { ident, identList, literal, str } from './sql.js';

/** Column DuckDB's `filename` option writes the read path into (a data column may be called `filename`). */
const PATH_COLUMN = '__tm_path';
const ROW_COLUMN = 'file_row_number';

/**
 * SELECT of the rows of Parquet `files` plus lineage columns. `union_by_name` lets files with
 * different columns combine as UNION ALL BY NAME would. `projection` (default `*`) is applied to
 * the data columns, e.g. casts into the table's types.
 */
export function parquetListSql(
  files: readonly LoadFile[],
  opts: { unionByName: boolean; projection?: string },
): string {
  const paths = files.map((f) => safeReadPath(f.localPath));
  const map = files.map(
    (f, i) =>
      `(${str(paths[i]!)}, ${literal(f.key)}, ${str(f.lastModified.toISOString())}::TIMESTAMPTZ)`,
  );
  const keys = `(SELECT p, CAST(k AS ${sourceFileEnum(files.map((f) => f.key))}) AS k, t FROM (VALUES ${map.join(', ')}) AS v(p, k, t))`;
  const read =
    `read_parquet([${paths.map(str).join(', ')}], filename = ${str(PATH_COLUMN)}, file_row_number = true, ` +
    `hive_partitioning = false${opts.unionByName ? ', union_by_name = true' : ''})`;
  const lineage = [
    `m.k AS ${ident(SOURCE_FILE)}`,
    `m.t AS ${ident(SOURCE_MODIFIED)}`,
    `r.${ident(ROW_COLUMN)} + 1 AS ${ident(SOURCE_ROW)}`,
  ];
  const inner =
    `SELECT r.* EXCLUDE (${identList([PATH_COLUMN, ROW_COLUMN])}), ${lineage.join(', ')} ` +
    `FROM ${read} AS r JOIN ${keys} AS m ON r.${ident(PATH_COLUMN)} = m.p`;
  if (opts.projection === undefined) return inner;
  return `SELECT ${opts.projection}, ${LINEAGE_COLUMNS.map(ident).join(', ')} FROM (${inner})`;
}

/**
 * The ENUM type of a batch's `_source_file` values: every later step (dedupe, sort, staging,
 * Parquet writing) then moves a small integer per row instead of a long URI string, and DuckDB
 * still writes the column to Parquet as plain UTF-8 strings. The values are sorted in UTF-8 byte
 * order, DuckDB's VARCHAR order, so ordering by the ENUM (the dedupe's tie-break) orders by the
 * text; an ENUM mixed with VARCHAR (another unit of the load, stored rows) becomes VARCHAR.
 */
export function sourceFileEnum(keys: readonly string[]): string {
  const sorted = [...new Set(keys)].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  return `ENUM(${sorted.map(literal).join(', ')})`;
}
