/**
 * Tombstones of a merge job: the keys it deleted within the last `tombstoneRetention`, so a late
 * row older than the delete (out-of-order CDC files, a late file in a lookback partition, loaded
 * by a later batch or run) cannot bring the key back. Within one batch dedupe already applies
 * changes by sequence; tombstones carry that across batches.
 *
 * Where they live: small Parquet files inside the table folder,
 * `_tidemark/tombstones/<job>/<uuid>.parquet` (Delta readers and VACUUM ignore folders whose
 * names start with `_`), one row per deleted key: the key columns, the delete's orderBy value
 * (TOMBSTONE_ORDER) and the time the delete was committed (DELETED_AT). The job state lists the
 * live files. A file is written before the commit that deletes its keys and listed in that
 * commit's state, so tombstones become visible atomically with the deletes; a failed commit
 * leaves an unlisted orphan file, like the data files it wrote.
 *
 * The retention clock is the job host's clock, not orderBy (which may be a sequence number, or
 * come from a skewed source clock): DELETED_AT is stamped from the batch's clock just before its
 * commit, and a tombstone counts until a later batch's clock passes DELETED_AT + retention.
 * Remembering a delete longer never loads a wrong row (it only buries rows older than the
 * delete), so retention bounds cost, not correctness.
 *
 * Bounded state: wholly expired files are dropped from the state; when a batch would list more
 * than MAX_TOMBSTONE_FILES, all live tombstones are rewritten into one file (expired rows left
 * out, one row per key: the newest delete). Dropped files stay listed under `dropped` for a grace
 * period (the shorter of the retention and an hour), so a concurrent run that read the older
 * state can still read them, and are then deleted. This module is the pure part; the files are
 * read and written by ./files.ts (their SQL: ../../engine/tombstone-files.ts).
 *
 * A changed key or orderBy (see `tombstoneFit`): tombstones of a wider key are re-keyed onto the
 * narrower one; others are refused until the user drops them (`--accept-config-change`, a reset).
 */
import { ConfigError } from '../../errors.js';

/** Live tombstone files a job keeps before they are compacted into one. */
export const MAX_TOMBSTONE_FILES = 16;
/** Longest time a file dropped from the state is kept before it is deleted. */
export const MAX_DROP_GRACE_MS = 60 * 60 * 1000;
/** Folder of a job's tombstone files, relative to the table root. */
export const TOMBSTONE_FOLDER = '_tidemark/tombstones';

/** One tombstone file listed in the job state. */
export interface TombstoneFile {
  /** Key relative to the table root. */
  path: string;
  rows: number;
  /** Oldest and newest DELETED_AT in the file (ISO). */
  minDeletedAt: string;
  maxDeletedAt: string;
}

/** A file no longer listed as live, waiting to be deleted. */
export interface DroppedTombstoneFile {
  path: string;
  /** When it was dropped from the live list (ISO). */
  droppedAt: string;
}

/** The `tombstones` field of the job state (absent = none). */
export interface TombstoneState {
  /** Key columns and orderBy the tombstones were written for (see `tombstoneFit`). */
  key: string[];
  orderBy: string;
  files: TombstoneFile[];
  dropped: DroppedTombstoneFile[];
}

/** What the tombstones are for: the job's key and orderBy, and its retention. */
export interface TombstoneSpec {
  job: string;
  key: string[];
  orderBy: string;
  retentionMs: number;
  /**
   * Drop live tombstones written for another key or orderBy that cannot be re-keyed (the user
   * said so: `--accept-config-change`); without it they are refused (see `tombstoneFit`).
   */
  dropUnfit?: boolean;
}

/** What a batch does with the tombstones its state lists (see `planTombstones`). */
export interface TombstonePlan {
  /** Files that may hold unexpired tombstones: read, and kept in the state. */
  live: TombstoneFile[];
  /** Dropped files kept listed (within the grace period), including those dropped now. */
  dropped: DroppedTombstoneFile[];
  /** Files to delete once this batch's commit is in (dropped longer than the grace period ago). */
  purge: string[];
  /** Tombstones deleted before this instant (ms) have expired. */
  cutoff: number;
  /**
   * The live files were written for a wider key (or the same columns in another order): they are
   * read projected onto the spec's key (the newest delete per key) and rewritten into one file.
   */
  rekey: boolean;
}

/**
 * How tombstones written for `state`'s key and orderBy serve `spec`'s:
 * - `same`: the same columns;
 * - `rekey`: the same orderBy and a key whose columns are all in the old key (`[id, region]` ->
 *   `[id]`): a key deleted under the old key is deleted under the new one; the newest delete wins;
 * - `unfit`: another orderBy (its values cannot be compared with the old one's), or a key with a
 *   column the tombstones do not hold.
 */
export function tombstoneFit(
  state: Pick<TombstoneState, 'key' | 'orderBy'>,
  spec: Pick<TombstoneSpec, 'key' | 'orderBy'>,
): 'same' | 'rekey' | 'unfit' {
  if (!sameColumns([state.orderBy], [spec.orderBy])) return 'unfit';
  if (sameColumns(state.key, spec.key)) return 'same';
  const held = new Set(state.key.map((c) => c.toLowerCase()));
  return spec.key.length > 0 && spec.key.every((c) => held.has(c.toLowerCase()))
    ? 'rekey'
    : 'unfit';
}

/** The files of `state` whose tombstones have not expired at clock `now` (ms). */
export function liveTombstoneFiles(
  state: TombstoneState | undefined,
  retentionMs: number,
  now: number,
): TombstoneFile[] {
  const cutoff = now - retentionMs;
  return (state?.files ?? []).filter((f) => Date.parse(f.maxDeletedAt) >= cutoff);
}

/**
 * The plan for one batch at clock `now` (ms): drop wholly expired files; read tombstones of a
 * wider key re-keyed; purge dropped files whose grace period is over. Live tombstones that do
 * not fit the spec at all are refused (a ConfigError: dropping them silently would let a late
 * older row bring a deleted key back), or dropped when `spec.dropUnfit` says so.
 */
export function planTombstones(
  state: TombstoneState | undefined,
  spec: TombstoneSpec,
  now: number,
): TombstonePlan {
  const cutoff = now - spec.retentionMs;
  if (!state) return { live: [], dropped: [], purge: [], cutoff, rekey: false };
  const fit = tombstoneFit(state, spec);
  const unexpired = liveTombstoneFiles(state, spec.retentionMs, now);
  if (fit === 'unfit' && unexpired.length > 0 && !spec.dropUnfit)
    throw unfitTombstones(state, spec, unexpired);
  const live = fit === 'unfit' ? [] : unexpired;
  const droppedNow = state.files
    .filter((f) => !live.includes(f))
    .map((f) => ({ path: f.path, droppedAt: new Date(now).toISOString() }));
  const grace = Math.min(spec.retentionMs, MAX_DROP_GRACE_MS);
  const due = (d: DroppedTombstoneFile) => Date.parse(d.droppedAt) + grace <= now;
  const all = [...state.dropped, ...droppedNow];
  return {
    live,
    dropped: all.filter((d) => !due(d)),
    purge: all.filter(due).map((d) => d.path),
    cutoff,
    rekey: fit === 'rekey' && live.length > 0,
  };
}

/**
 * The refusal of live tombstones that do not fit the job's key and orderBy (exit 2): what changed,
 * how many deletes they remember, and the ways on.
 */
export function unfitTombstones(
  state: TombstoneState,
  spec: Pick<TombstoneSpec, 'job' | 'key' | 'orderBy'>,
  live: readonly TombstoneFile[],
): ConfigError {
  const orderChanged = !sameColumns([state.orderBy], [spec.orderBy]);
  const field = orderChanged ? 'target.orderBy' : 'target.key';
  const what = orderChanged
    ? `target.orderBy changed from ${state.orderBy} to ${spec.orderBy}: the remembered deletes carry ${state.orderBy} values, which cannot be compared with ${spec.orderBy}`
    : `target.key changed from [${state.key.join(', ')}] to [${spec.key.join(', ')}]: the remembered deletes do not hold ${spec.key.filter((c) => !state.key.some((k) => k.toLowerCase() === c.toLowerCase())).join(', ')}`;
  const rows = live.reduce((n, f) => n + f.rows, 0);
  const since = live.reduce(
    (min, f) => (f.minDeletedAt < min ? f.minDeletedAt : min),
    live[0]!.minDeletedAt,
  );
  return new ConfigError(
    `[job] ${spec.job}: ${what}. The table remembers ${rows} deleted key${rows === 1 ? '' : 's'} (deleted since ${since}, tombstones in _tidemark/tombstones/${spec.job}/); ` +
      `without them a late row older than its delete would bring the key back. Run once with --accept-config-change to drop them, ` +
      `or reset the job (tidemark reset), or change ${field} back`,
    {
      field,
      job: spec.job,
      from: orderChanged ? state.orderBy : state.key,
      to: orderChanged ? spec.orderBy : spec.key,
      tombstones: rows,
    },
  );
}

/**
 * The tombstone state after a reset with `spec`: files that do not fit it are dropped (a reset
 * accepts the config as it is), the others stay.
 */
export function fittedTombstones(
  state: TombstoneState | undefined,
  spec: Pick<TombstoneSpec, 'key' | 'orderBy'>,
  now: number,
): TombstoneState | undefined {
  if (!state || tombstoneFit(state, spec) !== 'unfit' || state.files.length === 0) return state;
  const at = new Date(now).toISOString();
  return {
    ...state,
    files: [],
    dropped: [...state.dropped, ...state.files.map((f) => ({ path: f.path, droppedAt: at }))],
  };
}

/** True when adding a file (or not) would exceed MAX_TOMBSTONE_FILES: rewrite all into one. */
export function needsCompaction(liveFiles: number, adding: boolean): boolean {
  return liveFiles + (adding ? 1 : 0) > MAX_TOMBSTONE_FILES;
}

/** The state field after a batch; undefined when there is nothing to remember. */
export function nextTombstoneState(
  spec: TombstoneSpec,
  files: TombstoneFile[],
  dropped: DroppedTombstoneFile[],
): TombstoneState | undefined {
  if (files.length === 0 && dropped.length === 0) return undefined;
  return { key: [...spec.key], orderBy: spec.orderBy, files, dropped };
}

/** A new tombstone file's key (the job name is validated by the config: letters, digits, `_.-`). */
export function tombstonePath(job: string, id: string): string {
  return `${TOMBSTONE_FOLDER}/${job}/${id}.parquet`;
}

/** True for a path this module could have written for `job` (state is data: never trust a path). */
export function isTombstonePath(job: string, path: string): boolean {
  const prefix = `${TOMBSTONE_FOLDER}/${job}/`;
  return path.startsWith(prefix) && /^[0-9a-f-]{36}\.parquet$/.test(path.slice(prefix.length));
}

function sameColumns(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x.toLowerCase() === b[i]!.toLowerCase());
}
