/**
 * Which source files `tidemark cleanup` may move or delete (`source.afterLoad`): a file only when
 * its current content is the one the job's ledger (./ledger.ts) records as last loaded (same
 * key and ETag), and the commit that loaded it (its batch's, read from the Delta log) is at least
 * `after` old. Every other file listed is skipped with its reason; nothing here changes anything.
 *
 * A batch whose commit the log no longer holds (log cleanup after checkpoints) is older than the
 * job's oldest commit still there, so that commit's time stands for it: the file can only look
 * younger than it is, never older.
 */
import type { Snapshot } from '../delta/snapshot.js';
import { comparableEtags } from '../storage/local.js';
import { identifyObjects, type ObjectInfo } from '../storage/storage.js';
import { listLog } from '../delta/log-listing.js';
import { readCommits } from '../delta/replay.js';
import { describeCommit } from './history.js';
import { lastLedgerEntries } from './ledger.js';
import type { JobScope } from './scope.js';
import { readJobState, sourceJobs } from './state.js';

/** Why a listed file is left where it is (fixed texts: the report counts them). */
export type CleanupSkipReason =
  | 'not loaded'
  | 'not loaded by another job'
  | 'quarantined'
  | 'changed since its load'
  | 'ETag not comparable'
  | 'to be loaded again after a reset'
  | 'load commit unknown'
  | 'within after';

/** What each reason means, for the human report and the docs. */
export const SKIP_REASON_TEXT: Record<CleanupSkipReason, string> = {
  'not loaded': 'the job has not loaded this file (it is not in its ledger)',
  'not loaded by another job':
    'another job of the table reads the same source and has not loaded this content',
  quarantined: 'the file is quarantined',
  'changed since its load':
    'its content changed since its load (another ETag): the version in place was never loaded',
  'ETag not comparable':
    'its ETag is of another kind than the one recorded at its load, so a change cannot be ruled out',
  'to be loaded again after a reset':
    'a reset moved the watermark before it: the next run loads it again',
  'load commit unknown': 'the commit that loaded it is not in the Delta log, so its age is unknown',
  'within after': 'its load committed less than `after` ago',
};

/** A file cleanup may move or delete. */
export interface EligibleFile {
  key: string;
  etag: string;
  size: number;
  /** The job's batch that last loaded this content, and its commit's time (ISO). */
  batch: number;
  loadedAt: string;
}

export interface SkippedCleanupFile {
  key: string;
  reason: CleanupSkipReason;
  /** For files loaded: the batch and its commit's time (ISO; absent when unknown). */
  batch?: number;
  loadedAt?: string;
}

export interface CleanupPlan {
  eligible: EligibleFile[];
  skipped: SkippedCleanupFile[];
}

/** The files of the job's source cleanup may act on at `now` (epoch ms), `afterMs` after their load's commit. */
export async function planCleanup(
  scope: JobScope,
  snapshot: Snapshot | null,
  afterMs: number,
  now: number,
): Promise<CleanupPlan> {
  const signal = scope.ctx.signal;
  const state = readJobState(snapshot, scope.job.name);
  const { objects } = await scope.source.listAll({
    deferContentEtags: true,
    ...(signal ? { signal } : {}),
  });
  const entries = new Map(
    (
      await lastLedgerEntries(
        scope,
        state.ledger,
        objects.map((o) => o.key),
      )
    ).map((e) => [e.key, e]),
  );
  // Only files the ledger holds are compared: a local source's small files by their content digest.
  const recorded = objects.filter((o) => entries.has(o.key));
  const current = new Map(
    (await identifyObjects(scope.source, recorded, signal ? { signal } : {})).map((o) => [
      o.key,
      o,
    ]),
  );
  const down = [...entries.values()].reduce((min, e) => Math.min(min, e.batch), Infinity);
  const { times, resetPending } =
    snapshot === null
      ? { times: new Map<number, number>(), resetPending: false }
      : await batchTimes(scope, snapshot, down);
  // By partition, a reset records nothing in the ledger: until a run follows it, any loaded file may be one it reloads.
  const reloadsAll = resetPending && state.discovery?.mode === 'partition';
  const oldest = [...times.keys()].reduce((min, b) => Math.min(min, b), Infinity);
  // Another job of the table on the same source (one started --fresh beside it) must have loaded the content too.
  const others = await Promise.all(
    sourceJobs(snapshot, scope.job.source.uri)
      .filter((name) => name !== scope.job.name)
      .map(
        async (name) =>
          new Map(
            (
              await lastLedgerEntries(
                scope,
                readJobState(snapshot, name).ledger,
                recorded.map((o) => o.key),
                true,
              )
            ).map((e) => [e.key, e.etag]),
          ),
      ),
  );
  const quarantined = new Set(state.quarantined.map((q) => q.key));
  const reset = state.ledger?.reset;
  const plan: CleanupPlan = { eligible: [], skipped: [] };
  for (const listed of objects) {
    const entry = entries.get(listed.key);
    const skip = (reason: CleanupSkipReason, extra: Partial<SkippedCleanupFile> = {}) =>
      plan.skipped.push({ key: listed.key, reason, ...extra });
    if (quarantined.has(listed.key)) {
      skip('quarantined');
      continue;
    }
    if (!entry) {
      skip('not loaded');
      continue;
    }
    const o: ObjectInfo = current.get(listed.key) ?? listed;
    if (!comparableEtags(entry.etag, o.etag)) skip('ETag not comparable', { batch: entry.batch });
    else if (entry.etag !== o.etag) skip('changed since its load', { batch: entry.batch });
    else if (others.some((loaded) => loaded.get(o.key) !== o.etag))
      skip('not loaded by another job', { batch: entry.batch });
    else if (
      reloadsAll ||
      (reset !== undefined && entry.batch < reset.batch && o.lastModified.getTime() > reset.after)
    )
      skip('to be loaded again after a reset', { batch: entry.batch });
    else {
      const at = times.get(entry.batch) ?? (entry.batch < oldest ? times.get(oldest) : undefined);
      if (at === undefined) skip('load commit unknown', { batch: entry.batch });
      else if (now - at < afterMs)
        skip('within after', { batch: entry.batch, loadedAt: new Date(at).toISOString() });
      else
        plan.eligible.push({
          key: o.key,
          etag: o.etag,
          size: o.size,
          batch: entry.batch,
          loadedAt: new Date(at).toISOString(),
        });
    }
  }
  return plan;
}

/** Commit files read per round, newest first. */
const READ_CHUNK = 64;

/**
 * The commit time (epoch ms) of the job's batches from the newest down to batch `down` (or the
 * oldest the Delta log still holds), and whether the job's newest commit is a reset (no run has
 * loaded what it rewound to yet). Commits after the snapshot read are a concurrent run's, not
 * part of what was planned from.
 */
async function batchTimes(
  scope: JobScope,
  snapshot: Snapshot,
  down: number,
): Promise<{ times: Map<number, number>; resetPending: boolean }> {
  const storage = scope.table.storage;
  const commits = (await listLog(storage)).commits.filter((c) => c.version <= snapshot.version);
  const times = new Map<number, number>();
  let resetPending: boolean | null = null;
  for (let end = commits.length; end > 0; end -= READ_CHUNK) {
    const refs = commits.slice(Math.max(0, end - READ_CHUNK), end);
    const read = await readCommits(storage, refs);
    for (let i = refs.length - 1; i >= 0; i--) {
      const e = describeCommit(refs[i]!.version, read[i]!);
      if (e.job !== scope.job.name || (e.kind !== 'run' && e.kind !== 'reset') || e.batch === null)
        continue;
      resetPending ??= e.kind === 'reset';
      if (e.time !== null && !times.has(e.batch)) times.set(e.batch, Date.parse(e.time));
      if (e.batch <= down) return { times, resetPending };
    }
  }
  return { times, resetPending: resetPending ?? false };
}
