/**
 * How a MERGE writes a data file whose rows it changes (pure):
 *
 * - 'dv': the changed rows' positions go into the file's deletion vector, and their new versions
 *   into new files: the cost follows the changed rows, not the file (merge-on-read);
 * - 'rewrite': the file is read in full and written again without them (copy-on-write).
 *
 * A file is rewritten when the table takes no deletion vectors, when it is small (reading and
 * writing it costs little, and the table keeps fewer DVs), or when it would keep little live data
 * (most of it deleted: the rewrite is smaller than the file plus the rows written elsewhere).
 */
import type { LiveFile } from '../../delta/snapshot.js';
import type { TableConfig } from '../../delta/table-config.js';
import { ENABLE_DELETION_VECTORS } from '../../delta/table-properties.js';
import type { WriteMode } from './plan.js';

/** The `target.deletionVectors` setting: follow the table, always, or never. */
export type DeletionVectorSetting = 'auto' | 'on' | 'off';

/** Default: files below 1 MiB are rewritten. */
export const DEFAULT_REWRITE_BELOW_BYTES = 1024 * 1024;
/** Default: a file that would have half its rows or more deleted is rewritten. */
export const DEFAULT_REWRITE_DELETED_SHARE = 0.5;

/** What decides the write mode of one MERGE. */
export interface DeletionVectorPolicy {
  /** The MERGE may write deletion vectors. */
  enabled: boolean;
  /** The table must first be upgraded to take them (protocol feature and property), in the same commit. */
  upgrade: boolean;
  rewriteBelowBytes: number;
  rewriteDeletedShare: number;
}

/**
 * The policy for a MERGE into this table: 'auto' follows the table (`TableConfig.deletionVectors`:
 * its property and protocol), 'on' writes DVs and upgrades the table when it must, 'off' never
 * writes them (existing DVs are still honoured).
 */
export function resolvePolicy(
  setting: DeletionVectorSetting,
  table: TableConfig,
  thresholds: {
    rewriteBelowBytes?: number | undefined;
    rewriteDeletedShare?: number | undefined;
  } = {},
): DeletionVectorPolicy {
  const ready = table.deletionVectors;
  const enabled = setting === 'on' || (setting === 'auto' && ready);
  return {
    enabled,
    upgrade: enabled && !ready,
    rewriteBelowBytes: thresholds.rewriteBelowBytes ?? DEFAULT_REWRITE_BELOW_BYTES,
    rewriteDeletedShare: thresholds.rewriteDeletedShare ?? DEFAULT_REWRITE_DELETED_SHARE,
  };
}

/**
 * The configuration of a table a MERGE creates: deletion vectors unless the setting is 'off'
 * ('auto' and 'on' both take them), then the given properties, later ones winning.
 */
export function createdTableConfiguration(
  setting: DeletionVectorSetting | undefined,
  ...properties: ReadonlyArray<Record<string, string> | undefined>
): Record<string, string> {
  const dvs = (setting ?? 'auto') !== 'off';
  return Object.assign({}, dvs ? { [ENABLE_DELETION_VECTORS]: 'true' } : {}, ...properties);
}

/** The write mode of a file in which the MERGE changes at most `touched` rows. */
export function writeModeOf(
  file: LiveFile,
  touched: number,
  policy: DeletionVectorPolicy,
): WriteMode {
  if (!policy.enabled || file.size < policy.rewriteBelowBytes) return 'rewrite';
  const rows = file.parsedStats?.numRecords;
  if (rows === undefined || rows === 0) return 'dv';
  const deleted = (file.deletionVector?.cardinality ?? 0) + touched;
  return deleted / rows >= policy.rewriteDeletedShare ? 'rewrite' : 'dv';
}
