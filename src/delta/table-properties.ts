/**
 * Names of the table properties (`metaData.configuration`) that switch table features on, and how
 * their values read: booleans compare case-insensitively, as Spark's `toBoolean` does.
 */

/** `delta.appendOnly`: no data may be changed or removed (PROTOCOL.md "Append-only Tables"). */
export const APPEND_ONLY = 'delta.appendOnly';
/** `delta.enableRowTracking`: writers preserve stable row ids and commit versions. */
export const ENABLE_ROW_TRACKING = 'delta.enableRowTracking';
/** `delta.rowTrackingSuspended`: writers stop assigning row ids. */
export const ROW_TRACKING_SUSPENDED = 'delta.rowTrackingSuspended';
/** The hidden data-file column holding materialized (preserved) row ids. */
export const MATERIALIZED_ROW_ID_COLUMN = 'delta.rowTracking.materializedRowIdColumnName';
/** The hidden data-file column holding materialized (preserved) row commit versions. */
export const MATERIALIZED_ROW_VERSION_COLUMN =
  'delta.rowTracking.materializedRowCommitVersionColumnName';
/** `delta.enableDeletionVectors`: writers may add deletion vectors (PROTOCOL.md "Deletion Vectors"). */
export const ENABLE_DELETION_VECTORS = 'delta.enableDeletionVectors';
/** `delta.enableInCommitTimestamps`: every commit carries a monotonic `inCommitTimestamp`. */
export const ENABLE_IN_COMMIT_TIMESTAMPS = 'delta.enableInCommitTimestamps';
/** `delta.checkpointPolicy`: `v2` asks for V2 (UUID-named) checkpoints (a Spark property, not in PROTOCOL.md). */
export const CHECKPOINT_POLICY = 'delta.checkpointPolicy';

/** `delta.dataSkippingNumIndexedCols`: how many leaf columns, in schema order, get file statistics (-1: all). */
export const DATA_SKIPPING_NUM_INDEXED_COLS = 'delta.dataSkippingNumIndexedCols';

/** The table's `delta.dataSkippingNumIndexedCols` as a number, or undefined when unset or not a whole number >= -1. */
export function numIndexedColumns(
  configuration: Readonly<Record<string, string>>,
): number | undefined {
  const text = configuration[DATA_SKIPPING_NUM_INDEXED_COLS];
  const n = Number(text);
  return text !== undefined && text.trim() !== '' && Number.isSafeInteger(n) && n >= -1
    ? n
    : undefined;
}

/** True when the property is set to `true` (any case). */
export function isTrue(
  configuration: Readonly<Record<string, string>> | null | undefined,
  key: string,
): boolean {
  return (configuration?.[key] ?? '').trim().toLowerCase() === 'true';
}
