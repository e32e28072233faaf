/**
 * One read_parquet over many files instead of one read per file: DuckDB plans and parallelizes a
 * single scan, which is several times faster than a UNION of hundreds of per-file reads. Each
 * row's lineage comes from a small inline (path → key, modified) table joined on the path DuckDB
 * reports, so `_source_file`, `_source_modified` and `_source_row` are exactly those of
 * `fileSelectSql` for the same file.
 */
import { LINEAGE_COLUMNS, SOURCE_FILE, SOURCE_MODIFIED, SOURCE_ROW, type LoadFile } from './file-select.js';
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
export function parquetListSql(files: readonly LoadFile[], opts: { unionByName: boolean; projection?: string }): string {
  const paths = files.map((f) => safeReadPath(f.localPath));
  const map = files.map((f, i) => `(${str(paths[i]!)}, ${literal(f.key)}, ${str(f.lastModified.toISOString())}::TIMESTAMPTZ)`);
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
    `FROM ${read} AS r JOIN (VALUES ${map.join(', ')}) AS m(p, k, t) ON r.${ident(PATH_COLUMN)} = m.p`;
  if (opts.projection === undefined) return inner;
  return `SELECT ${opts.projection}, ${LINEAGE_COLUMNS.map(ident).join(', ')} FROM (${inner})`;
}
