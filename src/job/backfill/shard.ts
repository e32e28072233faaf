/**
 * Shards of a backfill: `--shard K/N` runs part K of an N-way split of the range, counting from 1
 * (`1/4` … `4/4`, as Playwright's, Jest's and Vitest's `--shard` do), so N workers of a scheduler
 * (a Kubernetes Indexed Job, an Airflow mapped task, an AWS Batch array job) share one backfill.
 * A scheduler's own index variable (JOB_COMPLETION_INDEX, AWS_BATCH_JOB_ARRAY_INDEX) counts from 0,
 * and is taken as it is given. Inside, a shard is its 0-based `index`, which the stored state keeps.
 *
 * The split is contiguous and balanced, and depends only on the range, N and the calendar:
 * - partition mode: the range's partitions, as the layout's calendar counts them (folders need not
 *   exist), cut into N runs of consecutive partitions whose lengths differ by at most one;
 * - modification-time mode: the range's milliseconds cut into N consecutive intervals of equal
 *   length (a file belongs to the interval holding its LastModified).
 * Contiguous slices keep shards apart in the table too: a table partitioned by a date that follows
 * the landing date sees each shard write its own partitions, so shards rarely touch the same files.
 * A shard's slice is itself a backfill range, planned and resumed like any other.
 */
import type { JobConfig } from '../../config/schema.js';
import { PartitionClock } from '../../discovery/index.js';
import { ConfigError } from '../../errors.js';
import type { BackfillRange } from './range.js';

/** Part `index` (0-based: `--shard K/N` is index K-1) of a `count`-way split. */
export interface Shard {
  index: number;
  count: number;
}

/** A backfill that is not split: the whole range is its only shard. */
export const WHOLE_RANGE: Shard = { index: 0, count: 1 };

/** The most shards a range may be split into (a sanity bound: each shard keeps a state in the table). */
export const MAX_SHARDS = 1024;

/** `K/N` (one shard) or `all/N` (every shard of the split, for --dry-run and --restart). */
export type ShardSelection = { kind: 'one'; shard: Shard } | { kind: 'all'; count: number };

/**
 * Parse `K/N` (1 ≤ K ≤ N) or `all/N`; `origin` names where the text came from (`--shard`, `TIDEMARK_SHARD`) in
 * the ConfigError (field `shard`) that refuses it.
 */
export function parseShardSelection(text: string, origin: string): ShardSelection {
  const m = /^\s*(all|\d+)\s*\/\s*(\d+)\s*$/i.exec(text);
  const fail = (why: string): never => {
    throw new ConfigError(`${origin} ${JSON.stringify(text)}: ${why}`, {
      field: 'shard',
      value: text,
    });
  };
  if (!m) return fail('expected K/N, shard K of N shards counting from 1 (1/4 … 4/4), or all/N');
  const count = checkCount(Number(m[2]), fail);
  if (m[1]!.toLowerCase() === 'all') return { kind: 'all', count };
  const k = Number(m[1]);
  if (k < 1 || k > count)
    fail(
      `shard ${k} is not one of 1 … ${count}: shards count from 1 (1/${count} … ${count}/${count}); a scheduler's 0-based index goes in --shards ${count} --shard-index-env NAME`,
    );
  return { kind: 'one', shard: { index: k - 1, count } };
}

/**
 * The shard whose 0-based index is in environment variable `name` (a scheduler's array index:
 * JOB_COMPLETION_INDEX, AWS_BATCH_JOB_ARRAY_INDEX), of `count` shards.
 */
export function shardFromIndexVariable(
  name: string,
  value: string | undefined,
  count: number,
): Shard {
  const fail = (why: string): never => {
    throw new ConfigError(`--shard-index-env ${name}: ${why}`, {
      field: 'shard',
      variable: name,
      ...(value === undefined ? {} : { value }),
    });
  };
  const n = checkCount(count, (why) => {
    throw new ConfigError(`--shards ${count}: ${why}`, { field: 'shards', value: String(count) });
  });
  if (value === undefined || value.trim() === '')
    return fail(
      `environment variable ${name} is not set; it should hold this worker's 0-based shard index`,
    );
  if (!/^\s*\d+\s*$/.test(value))
    return fail(
      `environment variable ${name} is ${JSON.stringify(value)}, not a 0-based shard index`,
    );
  const index = Number(value);
  if (index >= n)
    fail(
      `environment variable ${name} is ${index}, not below --shards ${n} (indexes are 0-based); does the array size match --shards?`,
    );
  return { index, count: n };
}

function checkCount(count: number, fail: (why: string) => never): number {
  if (!Number.isSafeInteger(count) || count < 1)
    fail('the number of shards must be a whole number of at least 1');
  if (count > MAX_SHARDS) fail(`at most ${MAX_SHARDS} shards`);
  return count;
}

/** `K/N` as written on the command line (K counts from 1). */
export function describeShard(shard: Shard): string {
  return `${shard.index + 1}/${shard.count}`;
}

/** The part of `range` that `shard` loads, or null when the split leaves it nothing (more shards than partitions). */
export function shardSlice(
  job: JobConfig,
  range: BackfillRange,
  shard: Shard,
): BackfillRange | null {
  if (shard.count === 1) return range;
  if (range.mode === 'modified') {
    const span = range.to - range.from + 1;
    const from = range.from + Math.floor((span * shard.index) / shard.count);
    const to = range.from + Math.floor((span * (shard.index + 1)) / shard.count) - 1;
    return to < from ? null : { mode: 'modified', from, to };
  }
  const d = job.source.discover;
  const ids = partitionsOf(range, new PartitionClock(d.by === 'partition' ? d.timezone : 'UTC'));
  const first = Math.floor((ids.length * shard.index) / shard.count);
  const end = Math.floor((ids.length * (shard.index + 1)) / shard.count);
  return end <= first ? null : { mode: 'partition', from: ids[first]!, to: ids[end - 1]! };
}

/** Every partition id of a partition range, oldest first (partitions a time zone skips are not counted). */
export function partitionsOf(
  range: Extract<BackfillRange, { mode: 'partition' }>,
  clock: PartitionClock,
): string[] {
  const ids: string[] = [];
  let id = clock.exists(range.from) ? range.from : clock.step(range.from, 1);
  while (id <= range.to) {
    ids.push(id);
    id = clock.step(id, 1);
  }
  return ids;
}
