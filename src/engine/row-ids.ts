/**
 * Stable row ids and commit versions in SQL (PROTOCOL.md "Row IDs", "Row Commit Versions";
 * docs/delta-protocol.md, Row tracking). A stored row's stable id is its materialized value (the
 * hidden column the table names) when not NULL, else its file's `baseRowId` plus its position in
 * the file (`file_row_number`); its stable commit version is the materialized value when not
 * NULL, else the file's `defaultRowCommitVersion`.
 *
 * Writers that move rows into new files (MERGE rewrites and updates, OPTIMIZE) read both through
 * the scan and write them into the new file's hidden columns, so the rows keep them.
 */
import { ident } from './sql.js';

/** Internal column: a scanned row's stable row id. */
export const STABLE_ROW_ID = '__tm_row_id';
/** Internal column: a scanned row's stable row commit version (NULL for a row whose version is this commit's). */
export const STABLE_ROW_VERSION = '__tm_row_version';

/** The hidden columns a row-tracking table names (its `delta.rowTracking.materialized…ColumnName` properties). */
export interface MaterializedColumns {
  rowIdColumn: string;
  versionColumn: string;
}

/** A hidden column of the data files written, filled from a column of the relation written. */
export interface HiddenColumn {
  /** The Parquet column name (the table's materialized column name). */
  name: string;
  /** The relation's column holding its values. */
  from: string;
}

/** The hidden columns a row-tracking writer fills: the stable ids and versions, from the internal columns. */
export function hiddenRowIdColumns(columns: MaterializedColumns): HiddenColumn[] {
  return [
    { name: columns.rowIdColumn, from: STABLE_ROW_ID },
    { name: columns.versionColumn, from: STABLE_ROW_VERSION },
  ];
}

/** How `stableRowIdsSql` finds a scanned row's file-level values and hidden columns. */
export interface StableRowIdSource {
  /** SQL for the row's file's baseRowId and defaultRowCommitVersion (BIGINT, NULL when absent). */
  base: string;
  version: string;
  /** The files' top-level columns (a file without the hidden columns has no materialized values); unknown: assume present. */
  fileColumns: readonly string[] | undefined;
  columns: MaterializedColumns;
  /** The read_parquet alias, read with `file_row_number`. */
  alias: string;
}

/** The select items giving STABLE_ROW_ID and STABLE_ROW_VERSION of scanned rows. */
export function stableRowIdsSql(src: StableRowIdSource): string {
  const stored = (name: string) =>
    src.fileColumns === undefined || src.fileColumns.includes(name)
      ? `CAST(${src.alias}.${ident(name)} AS BIGINT)`
      : null;
  const fresh = `(${src.base} + ${src.alias}.file_row_number)`;
  const materializedId = stored(src.columns.rowIdColumn);
  const materializedVersion = stored(src.columns.versionColumn);
  return (
    `${materializedId ? `COALESCE(${materializedId}, ${fresh})` : fresh} AS ${ident(STABLE_ROW_ID)}, ` +
    `${materializedVersion ? `COALESCE(${materializedVersion}, ${src.version})` : src.version} AS ${ident(STABLE_ROW_VERSION)}`
  );
}
