/**
 * How a backfill (or one shard of it) starts, given every backfill state of the job in the table
 * (pure). A backfill is its range plus its number of shards: the shards of one range split the
 * same way belong together; anything else is another backfill.
 *
 * The job's current backfill is the one of the highest generation (each new backfill takes one more
 * than the highest in the table; a counter, not a clock, so workers' clocks need not agree; states
 * of one generation started apart, e.g. in a race, are told apart by `startedAt`). Then, for shard
 * K of N of range R:
 *   --restart                 the shard starts over (a new backfill: every shard of it does)
 *   current is R in N shards  the shard resumes from its cursor, or does nothing when done
 *   current is unfinished     refused: finish it, or --restart to abandon it
 *   otherwise                 a new backfill starts
 * A new backfill split in N > 1 shards is opened: one commit writes a fresh state for every shard,
 * so `status` shows all N from the start and states an earlier backfill left under the same
 * shard appIds are replaced. An unsharded backfill starts with its first batch, as it always did;
 * so does a shard when there is no table yet to open the split in (its first batch creates it).
 */
import { ConfigError } from '../../errors.js';
import { describeRange, type BackfillRange } from './range.js';
import { describeShard, type Shard } from './shard.js';
import { backfillAppId, shardOf, type BackfillState } from './state.js';

/**
 * What to do: resume or skip the committed state, start the shard afresh, or open a new split;
 * a fresh or opened state takes `generation`.
 */
export type StartDecision =
  | { kind: 'resume'; state: BackfillState }
  | { kind: 'already-done'; state: BackfillState }
  | { kind: 'fresh'; generation: number }
  | { kind: 'open'; generation: number };

/** A backfill's identity: its range and its number of shards. */
export interface BackfillIdentity {
  mode: 'partition' | 'modified';
  from: string;
  to: string;
  shards: number;
}

/** The identity of a backfill of `range` split in `shard.count` shards. */
export function identityOf(range: BackfillRange, shard: Shard): BackfillIdentity {
  return { mode: range.mode, ...describeRange(range), shards: shard.count };
}

/** True when the state is a shard of the backfill `id`. */
export function belongsTo(state: BackfillState, id: BackfillIdentity): boolean {
  return (
    state.mode === id.mode &&
    state.from === id.from &&
    state.to === id.to &&
    shardOf(state).count === id.shards
  );
}

/** The states of the job's current backfill (the highest generation, then the latest start), or [] when it never had one. */
export function currentBackfill(states: Iterable<BackfillState>): BackfillState[] {
  const all = [...states];
  const later = (a: BackfillState, b: BackfillState) =>
    generationOf(a) > generationOf(b) ||
    (generationOf(a) === generationOf(b) && a.startedAt > b.startedAt);
  const latest = all.reduce<BackfillState | null>(
    (best, s) => (best === null || later(s, best) ? s : best),
    null,
  );
  if (latest === null) return [];
  const id: BackfillIdentity = {
    mode: latest.mode,
    from: latest.from,
    to: latest.to,
    shards: shardOf(latest).count,
  };
  const generation = generationOf(latest);
  return all
    .filter((s) => belongsTo(s, id) && generationOf(s) === generation)
    .sort((a, b) => shardOf(a).index - shardOf(b).index);
}

/** Decide how shard `shard` of a backfill of `range` starts; throws ConfigError (field `from`) to refuse. */
export function decideStart(
  job: string,
  states: ReadonlyMap<string, BackfillState>,
  range: BackfillRange,
  shard: Shard,
  restart: boolean,
): StartDecision {
  const id = identityOf(range, shard);
  const current = currentBackfill(states.values());
  const isCurrent = current.length > 0 && belongsTo(current[0]!, id);
  const generation = current.length > 0 ? generationOf(current[0]!) : 0;
  const next = Math.max(0, ...[...states.values()].map(generationOf)) + 1;
  const startNew: StartDecision =
    shard.count > 1 ? { kind: 'open', generation: next } : { kind: 'fresh', generation: next };
  if (restart) return isCurrent && shard.count > 1 ? { kind: 'fresh', generation } : startNew;
  if (isCurrent) {
    const own = states.get(backfillAppId(job, shard));
    if (own && belongsTo(own, id))
      return own.status === 'done'
        ? { kind: 'already-done', state: own }
        : { kind: 'resume', state: own };
    // Not opened (the table did not exist when the first shard started): this shard starts alone,
    // leaving the other shards' states as they are.
    return { kind: 'fresh', generation };
  }
  const unfinished = [
    ...current.filter((s) => s.status !== 'done').map(shardOf),
    ...missingShards(current),
  ].sort((a, b) => a.index - b.index);
  if (unfinished.length > 0) throw refusal(job, current, unfinished, range);
  return startNew;
}

/**
 * The shards of a backfill that have no state in the table yet: a split opened before the table
 * existed is not opened, so each shard writes its state with its first commit, and one that has
 * not run (or found nothing while there was no table) is missing, not done.
 */
export function missingShards(current: readonly BackfillState[]): Shard[] {
  const first = current[0];
  if (!first) return [];
  const { count } = shardOf(first);
  const held = new Set(current.map((s) => shardOf(s).index));
  return Array.from({ length: count }, (_, index) => ({ index, count })).filter(
    (s) => !held.has(s.index),
  );
}

/** A state's generation (states written before generations existed: 0). */
export function generationOf(state: Pick<BackfillState, 'generation'>): number {
  return state.generation ?? 0;
}

function refusal(
  job: string,
  current: BackfillState[],
  unfinished: Shard[],
  range: BackfillRange,
): ConfigError {
  const first = current[0]!;
  const { from, to } = describeRange(range);
  const shards = shardOf(first).count;
  const what =
    shards === 1
      ? `a backfill of ${first.from}..${first.to} is unfinished (done through ${first.doneThrough ?? 'nothing yet'}); run it again with --from ${first.from} --to ${first.to} to finish it`
      : `a backfill of ${first.from}..${first.to} in ${shards} shards is unfinished (${shards - unfinished.length} of ${shards} shards done; unfinished: ` +
        `${unfinished.map((s) => describeShard(s)).join(', ')}); run its shards again with --from ${first.from} --to ${first.to} --shard K/${shards} to finish it`;
  return new ConfigError(
    `[backfill] job ${job}: ${what}, or pass --restart to abandon it and backfill ${from}..${to}`,
    {
      field: 'from',
      job,
      unfinished: `${first.from}..${first.to}`,
      ...(shards > 1 ? { shards } : {}),
    },
  );
}
