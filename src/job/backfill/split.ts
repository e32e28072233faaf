/**
 * `--shard all/N --dry-run`: every shard's slice of the range and what it would still load, so a
 * split can be checked for balance before N workers are started. Each slice is listed like a
 * shard lists it; a shard whose committed state belongs to this backfill is shown from its cursor.
 */
import type { JobConfig } from '../../config/schema.js';
import type { Storage } from '../../storage/storage.js';
import { describeSlice, sliceOf } from './open-split.js';
import { listBackfill, startState, type ListBackfillOptions } from './plan.js';
import type { BackfillRange } from './range.js';
import { describeShard, shardSlice, type Shard } from './shard.js';
import { belongsTo, identityOf } from './start.js';
import { backfillAppId, type BackfillState } from './state.js';

/** One shard of a split as `--shard all/N --dry-run` reports it. */
export interface ShardPlan {
  shard: string;
  /** The shard's slice (null: the split leaves it nothing). */
  part: { from: string; to: string } | null;
  /** `new`: no state of this backfill yet; else the committed state's status. */
  status: 'new' | 'running' | 'done';
  doneThrough: string | null;
  /** What is still to load. */
  files: number;
  bytes: number;
  partitionsListed: number;
}

/** List and plan every shard's slice of an N-way split of `range`. */
export async function planSplit(
  source: Storage,
  job: JobConfig,
  range: BackfillRange,
  count: number,
  held: ReadonlyMap<string, BackfillState>,
  opts: ListBackfillOptions,
): Promise<ShardPlan[]> {
  const out: ShardPlan[] = [];
  for (let index = 0; index < count; index++) {
    const shard: Shard = { index, count };
    const prev = held.get(backfillAppId(job.name, shard));
    const state =
      prev && belongsTo(prev, identityOf(range, shard))
        ? prev
        : startState(job.name, range, null, new Date(), {
            shard,
            slice: shardSlice(job, range, shard),
          });
    const slice = sliceOf(state, range);
    const plan =
      state.status === 'done' ? null : await listBackfill(source, job, slice, state, opts);
    out.push({
      shard: describeShard(shard),
      part: describeSlice(slice),
      status: state === prev ? state.status : 'new',
      doneThrough: state.doneThrough,
      files: plan?.files ?? 0,
      bytes: plan?.bytes ?? 0,
      partitionsListed: plan?.partitionsListed.length ?? 0,
    });
  }
  return out;
}
