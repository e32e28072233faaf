/**
 * The ledger of a job: every file it loaded (key, the ETag loaded, and the LastModified at which
 * that ETag was first loaded), kept after the file left the window. Every job records it, since
 * the first-load time is a file's place in the tie order (`orderTimes`): a file touched or copied
 * in place with the same bytes and loaded again (a backfill, a run after `reset`) keeps the place
 * its content first had, so its rows never win a tie they lost. A job discovering by modification
 * time also looks files up in it, kept after the file left the settle window, so a file touched or copied in place later
 * (a re-sync, a re-delivery, a metadata copy on S3 that keeps the ETag) is not taken for a new one
 * and loaded again, and a file that arrives with an old LastModified (`cp -p`, `rsync -t`, `mv`),
 * which no window ever takes, is named (`passedOver`). The discovery state only remembers the
 * files inside the window.
 *
 * Where it lives: small Parquet files in the table folder, `_tidemark/ledger/<job>/<uuid>.parquet`
 * (columns key, etag, batch, modified), listed in the job state (`ledger`). Each batch writes the files it
 * loaded as one new file before its commit, which lists it (a failed commit leaves an unlisted
 * orphan); past MAX_LEDGER_FILES all are rewritten into one (the newest ETag per key). Files
 * rewritten away stay listed under `dropped` for MAX_DROP_GRACE_MS (a concurrent run may still read
 * them), then are deleted. A run looks up only the keys discovery took for new, and the files
 * listed behind the window after `since`. The SQL over the files is in ../engine/ledger-files.ts.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { resolveDiscovery, type OnOverwrite } from '../discovery/config.js';
import type { DiscoveredFile, DiscoveryState, PassedOver } from '../discovery/index.js';
import {
  firstLoaded,
  lastLoaded,
  notInLedger,
  writeLedgerFile,
  type LedgerEntry,
} from '../engine/ledger-files.js';
import { localCopies } from '../engine/local-copies.js';
import { DeltaLogError } from '../errors.js';
import { comparableEtags } from '../storage/local.js';
import { identifyObjects } from '../storage/storage.js';
import { discoveryConfigOf } from './open.js';
import type { JobScope } from './scope.js';
import { MAX_DROP_GRACE_MS } from './tombstones/plan.js';

/** Folder of the jobs' ledgers, relative to the table root. */
const LEDGER_FOLDER = '_tidemark/ledger';
/** Ledger files a job keeps before they are rewritten into one. */
export const MAX_LEDGER_FILES = 16;

/** The `ledger` field of the job state (absent: nothing recorded yet). */
export interface LedgerState {
  files: Array<{ path: string; rows: number }>;
  dropped: Array<{ path: string; droppedAt: string }>;
  /**
   * The ledger holds every file the job loaded whose arrival (LastModified) is after this (epoch
   * ms; null: every file), so a file listed behind the window after it that the ledger lacks was
   * never loaded. Absent (ledgers written before it): no such claim until the next batch sets it.
   */
  since?: number | null;
  /**
   * The job's last `reset` (its batch, and the watermark it set, epoch ms): files that arrived after
   * that watermark load again although the ledger recorded them before the reset (a rewind
   * reloads), as earlier versions the table may hold. Absent: no reset since the ledger began.
   */
  reset?: { batch: number; after: number };
}

/** A ledger lookup's answer for a file recorded before the job's last reset moved the watermark before it: load it again. */
export const RELOAD_AFTER_RESET = null;

/**
 * True when the job looks files up in its ledger as discovery takes them (every job records one):
 * discovery by modification time, and by notifications, where the ledger is the one record of
 * which files are loaded (../discovery/notifications/).
 */
export function keepsLedger(job: JobScope['job']): boolean {
  return job.source.discover.by === 'modified' || job.source.discover.by === 'notifications';
}

/**
 * Each file's place in the tie order (docs/concepts.md, *Ties*), for those of `files` (key and the
 * ETag fetched) the ledgers (the job's, its backfills') hold in that ETag: the LastModified its first
 * load recorded, or null when an entry recorded none (ledger files written before the time was kept, and entries seeded
 * from a discovery state). A file the ledger lacks in its ETag is new content: its own LastModified.
 */
export async function orderTimes(
  scope: JobScope,
  ledgers: readonly LedgerState[],
  files: ReadonlyArray<{ key: string; etag: string }>,
): Promise<Map<string, Date | null>> {
  const found = new Map<string, Date | null>();
  const listed = ledgers.flatMap((l) => l.files.map((f) => f.path));
  if (listed.length === 0 || files.length === 0) return found;
  // Other jobs' ledgers too (a job of the same source): each path under some job's ledger folder.
  const paths = await localCopiesOf(scope, listed, isSomeLedgerPath);
  for (const [key, modified] of await firstLoaded(scope.session, paths, files))
    found.set(key, modified === null ? null : new Date(modified));
  return found;
}

/**
 * Where the ledger's claim starts when a batch first records one (pure): a job's first state
 * claims every file from its `start` (it loaded all of them through the ledger); a job with a
 * state claims from what that state remembers in full, and seeds the ledger with those files
 * (an overwrite `onOverwrite: ignore` passed over is seeded with an unknown ETag: the table holds
 * some earlier version).
 */
export function ledgerStart(
  job: JobScope['job'],
  prev: DiscoveryState | null,
): { since: number | null; seed: Array<{ key: string; etag: string }> } | null {
  if (prev === null) {
    const settings = resolveDiscovery(discoveryConfigOf(job));
    return {
      since: settings.mode === 'modified' && settings.start !== null ? settings.start - 1 : null,
      seed: [],
    };
  }
  // Notification discovery records every file it loads from its first batch on.
  if (prev.mode === 'notifications') return { since: null, seed: [] };
  // Partition mode makes no claim (`since` is for lookups behind the settle window) and seeds nothing.
  if (prev.mode !== 'modified') return null;
  return {
    since: prev.rememberedAfter ?? prev.watermark,
    seed: prev.loaded.map((e) => ({ key: e.key, etag: e.ignored ? '' : e.etag })),
  };
}

/**
 * The ETag last loaded of each of `files` the ledger holds; `RELOAD_AFTER_RESET` for one recorded
 * before the job's last reset whose arrival is after the watermark that reset set.
 */
export async function lookUpLedger(
  scope: JobScope,
  ledger: LedgerState | undefined,
  files: ReadonlyArray<{ key: string; arrival: Date }>,
): Promise<Map<string, string | typeof RELOAD_AFTER_RESET>> {
  const found = new Map<string, string | typeof RELOAD_AFTER_RESET>();
  if (!ledger || ledger.files.length === 0 || files.length === 0) return found;
  const paths = await localCopiesOf(
    scope,
    ledger.files.map((f) => f.path),
  );
  const arrival = new Map(files.map((f) => [f.key, f.arrival.getTime()]));
  const reset = ledger.reset;
  for (const e of await lastLoaded(scope.session, paths, [...arrival.keys()])) {
    const beforeReset =
      reset !== undefined && e.batch < reset.batch && arrival.get(e.key)! > reset.after;
    found.set(e.key, beforeReset ? RELOAD_AFTER_RESET : e.etag);
  }
  return found;
}

/**
 * The newest entry (ETag, batch) of each of `keys` a ledger holds (`tidemark cleanup` decides by
 * them: ./cleanup-plan.ts); `ofOtherJob`: the ledger of another job of the table.
 */
export async function lastLedgerEntries(
  scope: JobScope,
  ledger: LedgerState | undefined,
  keys: readonly string[],
  ofOtherJob = false,
): Promise<LedgerEntry[]> {
  if (!ledger || ledger.files.length === 0 || keys.length === 0) return [];
  const paths = await localCopiesOf(
    scope,
    ledger.files.map((f) => f.path),
    ofOtherJob ? isSomeLedgerPath : undefined,
  );
  return lastLoaded(scope.session, paths, keys);
}

/**
 * The ledger after a batch that loaded `loaded` (as batch number `batch`; each file's lastModified
 * its place in the order, as loaded): a new file of them, or every entry rewritten into one;
 * dropped files past their grace period deleted. Written before the commit that lists it.
 */
export async function recordInLedger(
  scope: JobScope,
  ledger: LedgerState | undefined,
  loaded: readonly DiscoveredFile[],
  batch: number,
  prev: DiscoveryState | null,
  now = Date.now(),
): Promise<LedgerState | undefined> {
  const before: LedgerState = ledger ?? { files: [], dropped: [] };
  const due = before.dropped.filter((d) => Date.parse(d.droppedAt) + MAX_DROP_GRACE_MS <= now);
  const own = due.map((d) => d.path).filter((p) => isLedgerPath(scope.job.name, p));
  if (own.length > 0) await scope.table.storage.delete(own).catch(() => undefined);
  let dropped = before.dropped.filter((d) => !due.includes(d));
  const start = before.since === undefined ? ledgerStart(scope.job, prev) : null;
  const since = start
    ? { since: start.since }
    : before.since !== undefined
      ? { since: before.since }
      : {};
  // Seeded entries are older than the batch's own: the newest batch wins per key.
  const rows: LedgerEntry[] = [
    ...(start?.seed ?? []).map((e) => ({ ...e, batch: batch - 1, modified: null })),
    ...loaded.map((f) => ({ key: f.key, etag: f.etag, batch, modified: f.lastModified.getTime() })),
  ];
  if (rows.length === 0)
    return before.files.length + dropped.length === 0 && !start
      ? undefined
      : { files: before.files, dropped, ...since };
  let files = before.files;
  if (files.length + 1 > MAX_LEDGER_FILES) {
    const paths = await localCopiesOf(
      scope,
      files.map((f) => f.path),
    );
    files = [await write(scope, rows, paths)];
    const at = new Date(now).toISOString();
    dropped = [...dropped, ...before.files.map((f) => ({ path: f.path, droppedAt: at }))];
  } else {
    files = [...files, await write(scope, rows)];
  }
  return { files, dropped, ...since };
}

/**
 * Of `files`, by key, those the ledger does not hold (`loaded` null), and with `changed` those
 * whose ETag last loaded differs (`loaded` that ETag): one anti-join of the files against it.
 */
export async function unloaded(
  scope: JobScope,
  ledger: LedgerState,
  files: ReadonlyArray<{ key: string; etag: string }>,
  changed: boolean,
): Promise<Array<{ key: string; etag: string; loaded: string | null }>> {
  const scratch = join(await scope.spool.folder('ledger-check'), `${randomUUID()}.jsonl`);
  const paths = await localCopiesOf(
    scope,
    ledger.files.map((f) => f.path),
  );
  return notInLedger(scope.session, paths, files, { scratch, changed });
}

/**
 * Of `candidates` (data files listed behind the window, arrival after the ledger's `since`), those
 * the job never loaded, and (`onOverwrite: reload`) those it loaded in another version: no window
 * takes them again, so they are named. One anti-join of the listing against the ledger.
 */
export async function passedOver(
  scope: JobScope,
  ledger: LedgerState,
  candidates: readonly DiscoveredFile[],
  onOverwrite: OnOverwrite,
): Promise<PassedOver[]> {
  if (candidates.length === 0) return [];
  const found: PassedOver[] = [];
  const rows = await unloaded(scope, ledger, candidates, onOverwrite === 'reload');
  // Listed by stats (discovery defers a local source's content digests): the files whose listed ETag
  // differs from the one loaded are identified before they are taken for changed.
  const byKey = new Map(candidates.map((f) => [f.key, f]));
  const changed = rows.filter((r) => r.loaded !== null).map((r) => byKey.get(r.key)!);
  const signal = scope.ctx.signal;
  const now = new Map(
    (await identifyObjects(scope.source, changed, signal ? { signal } : {})).map((o) => [
      o.key,
      o.etag,
    ]),
  );
  for (const { key, etag: listed, loaded } of rows) {
    const etag = now.get(key) ?? listed;
    if (loaded === null) found.push({ key, reason: 'late, behind the settle window' });
    // An ETag of another kind (a local content digest and one recorded before it) cannot tell a change.
    else if (etag !== loaded && comparableEtags(loaded, etag))
      found.push({ key, reason: 'overwritten behind the settle window' });
  }
  return found;
}

/** Write `entries` (with `mergedWith`'s, rewritten into one) as a new ledger file of the job; its state entry. */
async function write(
  scope: JobScope,
  entries: readonly LedgerEntry[],
  mergedWith: readonly string[] = [],
): Promise<{ path: string; rows: number }> {
  const id = randomUUID();
  const local = join(await scope.spool.folder('ledger-out'), `${id}.parquet`);
  const rows = await writeLedgerFile(scope.session, local, entries, mergedWith);
  const path = ledgerPath(scope.job.name, id);
  scope.ctx.signal?.throwIfAborted();
  await scope.table.storage.upload(
    path,
    local,
    scope.ctx.signal ? { signal: scope.ctx.signal } : {},
  );
  return { path, rows };
}

/** A new ledger file's key (the job name is validated by the config: letters, digits, `_.-`). */
export function ledgerPath(job: string, id: string): string {
  return `${LEDGER_FOLDER}/${job}/${id}.parquet`;
}

/** True for a path this module could have written for `job` (state is data: never trust a path). */
export function isLedgerPath(job: string, path: string): boolean {
  const prefix = `${LEDGER_FOLDER}/${job}/`;
  return path.startsWith(prefix) && /^[0-9a-f-]{36}\.parquet$/.test(path.slice(prefix.length));
}

/** True for a path this module could have written for some job (a job name: letters, digits, `_.-`, not dots alone). */
function isSomeLedgerPath(path: string): boolean {
  const m = /^_tidemark\/ledger\/([A-Za-z0-9_.-]+)\/[0-9a-f-]{36}\.parquet$/.exec(path);
  return m !== null && !/^\.+$/.test(m[1]!);
}

/**
 * Local, glob-safe paths of ledger files: in place, or downloaded once per command into the spool
 * (they never change once written, so later batches read the same copies). Each must be one of
 * the job's own (`allowed`: another rule, for other jobs' ledgers read too).
 */
async function localCopiesOf(
  scope: JobScope,
  paths: readonly string[],
  allowed: (path: string) => boolean = (p) => isLedgerPath(scope.job.name, p),
): Promise<string[]> {
  const { storage } = scope.table;
  const job = scope.job.name;
  const listed = paths.find((path) => !allowed(path));
  if (listed !== undefined) {
    throw new DeltaLogError(
      `[job] job state of ${job} in ${storage.uri} lists ${JSON.stringify(listed)} as a ledger file`,
      { context: { uri: storage.uri, key: listed, job } },
    );
  }
  const copies = await localCopies(storage, paths, scope.spool, {
    cache: 'ledger-in',
    ...(scope.ctx.signal ? { signal: scope.ctx.signal } : {}),
    missing: (path, cause) =>
      new DeltaLogError(
        `[job] ledger file ${path} of job ${job}, listed in the job state of ${storage.uri}, is missing or unreadable`,
        {
          context: { uri: storage.uri, key: path, job },
          cause,
        },
      ),
  });
  return paths.map((path) => copies.pathOf(path));
}
