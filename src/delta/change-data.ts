/**
 * Change data feed (PROTOCOL.md "Change Data Files", "Add CDC File"): while a table has it on,
 * change-feed readers read a version from its `cdc` files when it has any, and otherwise take its
 * dataChange adds as inserts and dataChange removes as deletes. So a commit that only adds rows
 * needs no change files, and a commit that updates or deletes rows must record every row it
 * changed, its inserts included, in change files. Pure: the engine writes the files; whether the
 * feature is active is `TableConfig.recordsChangeData` (./table-config.ts), the commit's check is in ./table.ts.
 */
import type { AddCDCFile } from './actions.js';
import type { DataFileDescription } from './file-actions.js';
import type { StructType } from './schema.js';

/** The table property that turns the change data feed on. */
export const ENABLE_CHANGE_DATA_FEED = 'delta.enableChangeDataFeed';
/** The column of a change file that says what happened to the row. */
export const CHANGE_TYPE_COLUMN = '_change_type';
/** The folder below the table root that holds change files (partition folders below it). */
export const CHANGE_DATA_FOLDER = '_change_data';

/** What happened to a row, as `_change_type` spells it. */
export type ChangeType = 'insert' | 'update_preimage' | 'update_postimage' | 'delete';

/** Column names change-feed readers add to every row; a table that records changes must not have them. */
const RESERVED_COLUMNS = [CHANGE_TYPE_COLUMN, '_commit_version', '_commit_timestamp'];

/** The first top-level column whose name a change-feed reader reserves (ignoring case), or null. */
export function reservedChangeColumn(schema: StructType): string | null {
  return schema.fields.find((f) => RESERVED_COLUMNS.includes(f.name.toLowerCase()))?.name ?? null;
}

/** The `cdc` action of an uploaded change file. */
export function cdcFileFor(file: DataFileDescription): AddCDCFile {
  return {
    path: file.logPath,
    partitionValues: file.partitionValues,
    size: file.size,
    dataChange: false,
  };
}
