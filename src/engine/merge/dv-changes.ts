/**
 * The deletion vectors of a MERGE's 'dv' files: each file's new DV is its old one plus the rows
 * this MERGE updated or deleted in it; all new DVs of the commit go into one `.bin` file, written
 * (put-if-absent, never overwritten) before the commit. A file whose rows would all be deleted
 * gets no DV: it is removed instead.
 *
 * The commit then holds, per file, `remove(path, old DV)` and `add(path, new DV)` (PROTOCOL.md
 * "Deletion Vectors"), so replay keys (path, DV id) keep exactly the new one live.
 */
import type { Action } from '../../delta/actions.js';
import { RowIndexSet, writeDeletionVectorFile } from '../../delta/deletion-vectors/index.js';
import { addWithDeletionVector, removeFileFor } from '../../delta/file-actions.js';
import type { LiveFile } from '../../delta/snapshot.js';
import type { Storage } from '../../storage/storage.js';
import type { DeletedRows } from '../deleted-rows.js';
import type { DuckSession } from '../duckdb.js';
import { str } from '../sql.js';

/** A 'dv' file with rows to delete: the positions of this MERGE's updated and deleted rows. */
export interface DvChange {
  id: number;
  file: LiveFile;
  positions: readonly number[];
  /** Local path of the file (for its row count when it has no stats). */
  localPath: string;
}

/** What the DV changes add to the commit. */
export interface DvOutcome {
  actions: Action[];
  /** Files given a (new) deletion vector. */
  dvFiles: number;
  /** The `.bin` file written, if any (relative to the table root), and its size. */
  binKey: string | null;
  binBytes: number;
  /** Files whose every row is now deleted: removed, with no DV. */
  emptied: LiveFile[];
}

/** Plan and write the new DVs of `changes`; returns the actions for the commit. */
export async function writeDvChanges(
  changes: readonly DvChange[],
  opts: { session: DuckSession; storage: Storage; deleted: DeletedRows | null; now: number },
): Promise<DvOutcome> {
  const outcome: DvOutcome = { actions: [], dvFiles: 0, emptied: [], binKey: null, binBytes: 0 };
  const kept: Array<{ change: DvChange; set: RowIndexSet; rows: number }> = [];
  for (const change of changes) {
    const old = opts.deleted?.sets.get(change.id) ?? RowIndexSet.empty();
    const set = old.union(RowIndexSet.fromIndexes(change.positions));
    const rows = await physicalRows(opts.session, change);
    outcome.actions.push({ remove: removeFileFor(change.file, { deletionTimestamp: opts.now }) });
    if (set.cardinality >= rows) outcome.emptied.push(change.file);
    else kept.push({ change, set, rows });
  }
  if (kept.length === 0) return outcome;
  const plan = await writeDeletionVectorFile(
    opts.storage,
    kept.map((k) => k.set),
  );
  outcome.binKey = plan.key;
  outcome.binBytes = plan.bytes.length;
  kept.forEach((k, i) =>
    outcome.actions.push({
      add: addWithDeletionVector(k.change.file, plan.descriptors[i]!, k.rows),
    }),
  );
  outcome.dvFiles = kept.length;
  return outcome;
}

/** Rows stored in the file, deleted ones included: its stats, else its Parquet footer. */
async function physicalRows(session: DuckSession, change: DvChange): Promise<number> {
  const fromStats = change.file.parsedStats?.numRecords;
  if (fromStats !== undefined) return fromStats;
  const row = await session.one(
    `SELECT sum(num_rows) AS n FROM parquet_file_metadata(${str(change.localPath)})`,
  );
  return Number(row?.['n'] ?? 0);
}
