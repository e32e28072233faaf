/**
 * Deciding what VACUUM deletes (pure: no I/O). A listed file is deleted only when all hold:
 *
 *   1. the current snapshot does not reference it (not a live file, nor the deletion-vector
 *      `.bin` file of one);
 *   2. no snapshot within the retention window needs it: no remove action still in
 *      the log with a deletionTimestamp after the cutoff names it (or its `.bin` file);
 *   3. its LastModified is before the cutoff, so it is not a file a writer is uploading right now
 *      for a commit still to come (an orphan of a failed commit only goes once it is old).
 *
 * That is Spark's rule (VacuumCommand): rule 3 applies to every candidate, so a clock skew between
 * the writer that stamped a remove and the store cannot make a young file go early. Change data
 * files (`_change_data/`) are never in a snapshot, so rule 3 alone decides for them: they go once
 * older than the retention, like Spark's.
 */
import { DeltaLogError } from '../errors.js';
import type { DeletionVectorDescriptor } from '../delta/actions.js';
import { resolveDeletionVector } from '../delta/deletion-vectors/index.js';
import { decodeLogPath } from '../delta/partition-decode.js';
import type { Snapshot } from '../delta/snapshot.js';
import type { ObjectInfo } from '../storage/storage.js';

/** Inputs of `planVacuum`. */
export interface VacuumPlanInput {
  snapshot: Snapshot;
  /** Data files listed under the table root (hidden folders and files already left out). */
  objects: readonly ObjectInfo[];
  /** Files and removes from before this instant (ms) are past retention. */
  cutoff: number;
}

/** What to delete, and why the rest stays. */
export interface VacuumPlan {
  toDelete: ObjectInfo[];
  /** Referenced by the current snapshot. */
  keptLive: number;
  /** Removed within the retention window. */
  keptTombstoned: number;
  /** Unreferenced but modified after the cutoff. */
  keptYoung: number;
}

/** The files to delete; see the module comment. */
export function planVacuum(input: VacuumPlanInput): VacuumPlan {
  const uri = input.snapshot.tableUri;
  const live = new Set(
    input.snapshot.files.flatMap((f) => [...keyOf(f.path, uri), ...dvKeyOf(f, uri)]),
  );
  const retained = new Set(
    input.snapshot.removes
      .filter((t) => (t.deletionTimestamp ?? 0) > input.cutoff)
      .flatMap((t) => [...keyOf(t.path, uri), ...dvKeyOf(t, uri)]),
  );
  const plan: VacuumPlan = { toDelete: [], keptLive: 0, keptTombstoned: 0, keptYoung: 0 };
  for (const object of input.objects) {
    if (live.has(object.key)) plan.keptLive++;
    else if (retained.has(object.key)) plan.keptTombstoned++;
    else if (object.lastModified.getTime() >= input.cutoff) plan.keptYoung++;
    else plan.toDelete.push(object);
  }
  return plan;
}

/**
 * The key of the `.bin` file holding a file action's deletion vector, as a list (empty without a
 * DV, for an inline one, or for a `p` path outside the table): a `.bin` file stays while any live
 * file or retained remove points into it, at any offset.
 */
function dvKeyOf(
  action: { deletionVector?: DeletionVectorDescriptor | null },
  uri: string,
): string[] {
  if (!action.deletionVector) return [];
  const location = resolveDeletionVector(action.deletionVector, uri);
  return location.kind === 'file' ? [location.key] : [];
}

/**
 * The storage key of a log path, as a one-element list; empty for an absolute URI outside the
 * table root (it cannot be among the listed files). A path that cannot be decoded stops the
 * vacuum: guessing which file it names could delete a needed one.
 */
function keyOf(path: string, uri: string): string[] {
  try {
    return [decodeLogPath(path, uri)];
  } catch (err) {
    if (
      err instanceof DeltaLogError &&
      /^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(path) &&
      !path.startsWith(uri)
    )
      return [];
    throw err;
  }
}
