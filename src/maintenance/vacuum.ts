/**
 * VACUUM: delete data files that no snapshot within the retention window needs.
 *
 *   latest snapshot ─► list non-hidden files (./list-data-files.ts)
 *                   ─► planVacuum (pure, ./vacuum-plan.ts) ─► delete in batches (unless dryRun)
 *
 * The retention defaults to the table's `delta.deletedFileRetentionDuration` (1 week). A shorter
 * one is refused unless `unsafeAllowShortRetention` (Spark's retentionDurationCheck): it could
 * delete files that a concurrent writer has uploaded but not yet committed, or that a reader of
 * an older version still needs.
 *
 * No commit is written (Spark's optional VACUUM START/END commitInfo commits are not): VACUUM
 * changes no table state, and a commit would make every vacuum a writer. The returned report is
 * the record.
 */
import { assertWritable } from '../delta/features.js';
import { deletedFileRetentionMs } from '../delta/checkpoint.js';
import type { DeltaTable } from '../delta/table.js';
import { ConfigError, DeltaLogError } from '../errors.js';
import { listDataFiles } from './list-data-files.js';
import { planVacuum } from './vacuum-plan.js';

/** Keys per storage.delete call (S3 DeleteObjects takes at most 1000). */
export const VACUUM_DELETE_BATCH = 1000;
const HOUR_MS = 3600 * 1000;

/** Options of `vacuumTable`. */
export interface VacuumOptions {
  /** Keep files needed within this many hours; default: the table's deletedFileRetentionDuration (168). */
  retainHours?: number;
  /** Plan and report, delete nothing. */
  dryRun?: boolean;
  /** Allow a retention below the table's deletedFileRetentionDuration (unsafe with concurrent writers). */
  unsafeAllowShortRetention?: boolean;
  /** Clock (ms) the retention counts back from; default Date.now. */
  now?: () => number;
  signal?: AbortSignal;
}

/** What VACUUM deleted (or, in a dry run, would delete). */
export interface VacuumResult {
  /** The snapshot version the files were checked against. */
  version: number;
  dryRun: boolean;
  retainHours: number;
  /** Keys relative to the table root, sorted. */
  filesDeleted: string[];
  bytesDeleted: number;
  /** Listed files kept: live, removed within retention, or unreferenced but young. */
  filesKept: number;
}

/** Delete unneeded data files; see the module comment. */
export async function vacuumTable(
  table: DeltaTable,
  opts: VacuumOptions = {},
): Promise<VacuumResult> {
  const snapshot = await table.snapshot();
  if (!snapshot)
    throw new DeltaLogError(`[vacuum] no Delta table at ${table.uri}`, {
      context: { uri: table.uri },
    });
  // A feature tidemark does not know may reference files in ways it cannot see.
  assertWritable(snapshot.protocol, snapshot.metadata, table.uri);
  const retainHours = checkRetention(
    opts,
    deletedFileRetentionMs(snapshot.metadata.configuration),
    table.uri,
  );
  const cutoff = (opts.now ?? Date.now)() - retainHours * HOUR_MS;
  const signal = opts.signal ? { signal: opts.signal } : {};
  const objects = await listDataFiles(table.storage, snapshot.partitionColumns, signal);
  const plan = planVacuum({ snapshot, objects, cutoff });
  const keys = plan.toDelete.map((o) => o.key).sort();
  if (!opts.dryRun) {
    for (let i = 0; i < keys.length; i += VACUUM_DELETE_BATCH) {
      opts.signal?.throwIfAborted();
      await table.storage.delete(keys.slice(i, i + VACUUM_DELETE_BATCH));
    }
  }
  return {
    version: snapshot.version,
    dryRun: opts.dryRun ?? false,
    retainHours,
    filesDeleted: keys,
    bytesDeleted: plan.toDelete.reduce((n, o) => n + o.size, 0),
    filesKept: plan.keptLive + plan.keptTombstoned + plan.keptYoung,
  };
}

/** The retention in hours; ConfigError when negative, or below the table's unless allowed. */
function checkRetention(opts: VacuumOptions, tableRetentionMs: number, uri: string): number {
  const hours = opts.retainHours ?? tableRetentionMs / HOUR_MS;
  if (!Number.isFinite(hours) || hours < 0) {
    throw new ConfigError(
      `[vacuum] retention must be a non-negative number of hours, got ${hours}`,
      { uri, field: 'retainHours' },
    );
  }
  if (hours * HOUR_MS < tableRetentionMs && !opts.unsafeAllowShortRetention) {
    throw new ConfigError(
      `[vacuum] refusing to vacuum ${uri} with a retention of ${hours} hours: the table's ` +
        `delta.deletedFileRetentionDuration is ${tableRetentionMs / HOUR_MS} hours, and a shorter retention can ` +
        `delete files that concurrent writers or readers of older versions still need ` +
        `(allow it explicitly with unsafeAllowShortRetention / --unsafe-allow-short-retention)`,
      { uri, field: 'retainHours' },
    );
  }
  return hours;
}
