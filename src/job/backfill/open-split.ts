/**
 * Opening a sharded backfill: one commit without data holding a fresh state (txn + domain) for
 * every shard of the split, each with its slice of the range. After it, `status` shows all N
 * shards, and each shard's worker resumes its own state (from nothing yet). Two workers opening
 * the same split at once write the same domains, so one of them loses the race and re-plans onto
 * the winner's states; a shard already loading when its state is replaced (`--shard all/N
 * --restart`) loses its next commit the same way and starts its slice over.
 */
import type { JobConfig } from '../../config/schema.js';
import type { Snapshot } from '../../delta/snapshot.js';
import type { CommitRequest } from '../../delta/transaction.js';
import { startState } from './plan.js';
import type { BackfillRange } from './range.js';
import { describeRange, rangeOfDescription } from './range.js';
import { shardSlice, type Shard } from './shard.js';
import { backfillActions, backfillAppId, type BackfillState } from './state.js';

/** Fresh states for every shard of an N-way split of `range` (backfill number `generation`), replacing those held under the same appIds. */
export function openedStates(
  job: JobConfig,
  range: BackfillRange,
  count: number,
  held: ReadonlyMap<string, BackfillState>,
  opts: { now: Date; generation: number },
): BackfillState[] {
  const states: BackfillState[] = [];
  for (let index = 0; index < count; index++) {
    const shard: Shard = { index, count };
    const prev = held.get(backfillAppId(job.name, shard)) ?? null;
    const fresh = startState(
      job.name,
      range,
      prev,
      opts.now,
      { shard, slice: shardSlice(job, range, shard) },
      opts.generation,
    );
    // The opening commit is each shard's txn too: its version moves past the previous occupant's.
    states.push({ ...fresh, batch: fresh.batch + 1 });
  }
  return states;
}

/** The commit opening the split (`opener`: the shard whose worker opens it, absent for `--shard all/N --restart`). */
export function openSplitRequest(
  snapshot: Snapshot,
  states: readonly BackfillState[],
  opener?: Shard,
): CommitRequest {
  const first = states[0]!;
  const count = states.length;
  return {
    actions: states.flatMap((s) => backfillActions(s)),
    operation: 'SET TRANSACTION',
    operationParameters: {
      job: first.job,
      backfill: `${first.from}..${first.to}`,
      shards: count,
      opened: true,
      ...(opener ? { shard: `${opener.index}/${opener.count}` } : {}),
    },
    operationMetrics: { numFiles: '0', numOutputRows: '0' },
    read: {
      readVersion: snapshot.version,
      partitions: [],
      files: [],
      appIds: states.map((s) => backfillAppId(s.job, s.shard)),
    },
    isBlindAppend: true,
  };
}

/** The slice a state loads: its `part`, or the whole range when it is not split; null when empty. */
export function sliceOf(state: BackfillState, range: BackfillRange): BackfillRange | null {
  if (state.part === undefined) return range;
  if (state.part === null) return null;
  return rangeOfDescription(range.mode, state.part);
}

/** A slice as printed (partition ids or ISO timestamps), or null. */
export function describeSlice(slice: BackfillRange | null): { from: string; to: string } | null {
  return slice ? describeRange(slice) : null;
}
