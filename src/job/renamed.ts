/**
 * A renamed job: its state lives under its name (`tidemark.job.<name>`, ./state.ts), so a job
 * renamed in the config starts with none and would load every file of its source again (in
 * append mode, every row twice). A run of a job that has no state in a table holding the state of
 * another job whose recorded source (`configuredAs.source.uri`) is this job's is refused (exit 2)
 * naming that job, until the user says which it is:
 *
 *   --adopt-state-of OLD   the job was renamed: OLD's state becomes this job's in one commit
 *                          without data (watermark, remembered files, quarantine, counters, the
 *                          tombstone and ledger files copied into this job's folders, `configuredAs`, so a
 *                          config change made with the rename is seen), and so do OLD's backfill
 *                          states (every shard's, their tombstone and ledger files copied: a key
 *                          a backfill deleted stays deleted); OLD's domains are removed in it, so
 *                          a run under the old name is refused the same way
 *   --fresh                another job of the same source: it starts anew; a commit without data
 *                          records its first state, so later runs need no flag
 *
 * Jobs of other sources share a table without a word. States written before tidemark recorded
 * the source cannot be matched.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { JobConfig } from '../config/schema.js';
import type { Snapshot } from '../delta/snapshot.js';
import { ConfigError, DeltaLogError } from '../errors.js';
import { configuredAs } from './config-change.js';
import type { JobScope } from './scope.js';
import {
  initialState,
  jobAppId,
  readJobState,
  sourceJobs,
  stateActions,
  type JobState,
} from './state.js';
import { isLedgerPath, ledgerPath, type LedgerState } from './ledger.js';
import {
  backfillActions,
  backfillAppId,
  backfillTombstoneFolder,
  readBackfillStates,
  shardOf,
  type BackfillState,
} from './backfill/state.js';
import type { Action } from '../delta/actions.js';
import type { TombstoneState } from './tombstones/plan.js';
import { isTombstonePath, tombstonePath } from './tombstones/plan.js';
import { describeWatermark } from './watermark.js';

const JOB_DOMAIN = jobAppId('');

/** What the user said about the job's identity (`run --adopt-state-of OLD`, `run --fresh`). */
export interface IdentityChoice {
  adoptStateOf?: string;
  fresh?: boolean;
}

/** The names of the other jobs whose state the table holds and whose recorded source is `job`'s. */
export function sameSourceJobs(snapshot: Snapshot | null, job: JobConfig): string[] {
  return sourceJobs(snapshot, job.source.uri).filter((name) => name !== job.name);
}

/** True when the table holds a state of `job`. */
function hasState(snapshot: Snapshot | null, job: string): boolean {
  return snapshot?.domains.has(jobAppId(job)) ?? false;
}

/**
 * The refusal for a job without state next to same-source jobs that have one; null when the job
 * has a state, or no other job loads its source.
 */
export function renamedJobProblem(snapshot: Snapshot | null, job: JobConfig): ConfigError | null {
  if (hasState(snapshot, job.name)) return null;
  const others = sameSourceJobs(snapshot, job);
  if (others.length === 0) return null;
  const old = others[0]!;
  const watermark = describeWatermark(readJobState(snapshot, old).discovery) ?? 'none yet';
  const twice =
    job.target.mode === 'append' ? ': in append mode the table gets every row a second time' : '';
  return new ConfigError(
    `[job] ${job.name}: table ${snapshot!.tableUri} holds the state of job ${others.join(', ')} (watermark ${watermark}), which loaded the same source ${job.source.uri}, and none of ${job.name}. ` +
      `If ${old} was renamed to ${job.name}, run once with --adopt-state-of ${old} to carry its state over (watermark, remembered files, tombstones); ` +
      `if ${job.name} is another job, run once with --fresh to start it anew (it loads every file of the source again${twice})`,
    { field: 'name', job: job.name, sameSource: others },
  );
}

/** A state adopted or started by the identity check, and the commit that recorded it (null: a dry run). */
export interface SettledIdentity {
  state: JobState;
  version: number | null;
  adoptedStateOf?: string;
}

/**
 * The identity check at the start of a run: refuses a job that looks renamed, or carries out
 * the user's choice (see the module comment). Null when there is nothing to do.
 */
export async function settleIdentity(
  scope: JobScope,
  snapshot: Snapshot | null,
  choice: IdentityChoice,
  dryRun: boolean,
): Promise<SettledIdentity | null> {
  const { job } = scope;
  if (choice.adoptStateOf !== undefined) return adopt(scope, snapshot, choice.adoptStateOf, dryRun);
  const problem = renamedJobProblem(snapshot, job);
  if (!problem) return null;
  if (!choice.fresh) throw problem;
  const state: JobState = { ...initialState(job.name), batch: 1, configuredAs: configuredAs(job) };
  if (dryRun) return { state, version: null };
  return { state, version: await commitIdentity(scope, snapshot!, state, null) };
}

async function adopt(
  scope: JobScope,
  snapshot: Snapshot | null,
  old: string,
  dryRun: boolean,
): Promise<SettledIdentity | null> {
  const { job } = scope;
  if (old === job.name)
    throw new ConfigError(`[job] ${job.name}: --adopt-state-of names the job itself`, {
      field: 'adoptStateOf',
    });
  const mine = hasState(snapshot, job.name);
  const theirs = hasState(snapshot, old);
  // Adopted already (a rerun with the flag still set): nothing to do.
  if (mine && !theirs) return null;
  if (mine) {
    throw new ConfigError(
      `[job] ${job.name}: --adopt-state-of ${old}: the table holds a state of both ${job.name} and ${old}; adopting would lose ${job.name}'s`,
      {
        field: 'adoptStateOf',
        job: job.name,
      },
    );
  }
  if (!theirs) {
    const jobs = [...(snapshot?.domains.keys() ?? [])]
      .filter((d) => d.startsWith(JOB_DOMAIN))
      .map((d) => d.slice(JOB_DOMAIN.length));
    throw new ConfigError(
      `[job] ${job.name}: --adopt-state-of ${old}: table ${scope.table.uri} holds no state of job ${old} (it holds ${jobs.length > 0 ? jobs.join(', ') : 'none'})`,
      { field: 'adoptStateOf', job: job.name, jobs },
    );
  }
  const before = readJobState(snapshot, old);
  const adopted = { ...before, job: job.name, batch: before.batch + 1 };
  if (dryRun) {
    // A dry run plans from the watermark and remembered files; it reads no tombstones or ledger (its ledger lookup is skipped).
    const { tombstones: _t, ledger: _l, ...state } = adopted;
    return { state, version: null, adoptedStateOf: old };
  }
  const state = await adoptedFiles(scope, old, adopted);
  const backfills = await adoptedBackfills(scope, snapshot!, old);
  return {
    state,
    version: await commitIdentity(scope, snapshot!, state, old, backfills),
    adoptedStateOf: old,
  };
}

/** OLD's backfill states (every shard's) as this job's, and the actions that write them and remove OLD's. */
async function adoptedBackfills(
  scope: JobScope,
  snapshot: Snapshot,
  old: string,
): Promise<{ actions: Action[]; appIds: string[] }> {
  const job = scope.job.name;
  const actions: Action[] = [];
  const appIds: string[] = [];
  for (const [appId, state] of readBackfillStates(snapshot, old)) {
    const shard = shardOf(state);
    const { tombstones, ledger, ...rest } = state;
    const out: BackfillState = { ...rest, job };
    if (tombstones)
      out.tombstones = await copiedTombstones(
        scope,
        old,
        tombstones,
        backfillTombstoneFolder(old, shard),
        backfillTombstoneFolder(job, shard),
      );
    if (ledger) out.ledger = await copiedLedger(scope, old, ledger);
    actions.push(...backfillActions(out), {
      domainMetadata: { ...snapshot.domains.get(appId)!, removed: true },
    });
    appIds.push(appId, backfillAppId(job, shard));
  }
  return { actions, appIds };
}

/** Tombstone files of folder `from` (of job `old`) copied into folder `to`; their dropped files stay. */
async function copiedTombstones(
  scope: JobScope,
  old: string,
  tombstones: TombstoneState,
  from: string,
  to: string,
): Promise<TombstoneState> {
  return {
    ...tombstones,
    files: await copyFiles(
      scope,
      old,
      tombstones.files,
      (p) => isTombstonePath(from, p),
      (id) => tombstonePath(to, id),
    ),
    dropped: [],
  };
}

/** Ledger files of `old` copied into this job's ledger folder; their dropped files stay. */
async function copiedLedger(
  scope: JobScope,
  old: string,
  ledger: LedgerState,
): Promise<LedgerState> {
  const files = await copyFiles(
    scope,
    old,
    ledger.files,
    (p) => isLedgerPath(old, p),
    (id) => ledgerPath(scope.job.name, id),
  );
  const { dropped: _d, files: _f, ...rest } = ledger;
  return { ...rest, files, dropped: [] };
}

/** Copies of `files` (paths of `old`, checked by `isOld`) under this job's names (`pathOf`): a state lists only its own files. */
async function copyFiles<F extends { path: string }>(
  scope: JobScope,
  old: string,
  files: readonly F[],
  isOld: (path: string) => boolean,
  pathOf: (id: string) => string,
): Promise<F[]> {
  const { storage } = scope.table;
  const folder = await scope.spool.folder('adopted-files');
  const signal = scope.ctx.signal ? { signal: scope.ctx.signal } : {};
  const copies: F[] = [];
  for (const f of files) {
    if (!isOld(f.path)) {
      throw new DeltaLogError(
        `[job] job state of ${old} in ${storage.uri} lists ${JSON.stringify(f.path)} as one of its files`,
        { context: { uri: storage.uri, key: f.path, job: old } },
      );
    }
    const id = randomUUID();
    const local = join(folder, `${id}.parquet`);
    await storage.download(f.path, local, signal);
    const path = pathOf(id);
    await storage.upload(path, local, signal);
    copies.push({ ...f, path });
  }
  return copies;
}

/** OLD's state as this job's: its tombstone and ledger files copied into this job's folders (their dropped files stay OLD's). */
async function adoptedFiles(scope: JobScope, old: string, state: JobState): Promise<JobState> {
  const job = scope.job.name;
  const { tombstones, ledger, ...rest } = state;
  const out: JobState = rest;
  if (tombstones && tombstones.files.length > 0)
    out.tombstones = await copiedTombstones(scope, old, tombstones, old, job);
  if (ledger && (ledger.files.length > 0 || ledger.since !== undefined)) {
    const copied = await copiedLedger(scope, old, ledger);
    out.ledger = {
      files: copied.files,
      dropped: [],
      ...(ledger.since !== undefined ? { since: ledger.since } : {}),
    };
  }
  return out;
}

/** One commit without data: this job's state, and (adopting) the old job's domain removed. */
async function commitIdentity(
  scope: JobScope,
  snapshot: Snapshot,
  state: JobState,
  old: string | null,
  backfills: { actions: Action[]; appIds: string[] } = { actions: [], appIds: [] },
): Promise<number> {
  const oldDomain = old === null ? undefined : snapshot.domains.get(jobAppId(old));
  const result = await scope.table.commit(
    {
      actions: [
        ...stateActions(state),
        ...(oldDomain ? [{ domainMetadata: { ...oldDomain, removed: true } }] : []),
        ...backfills.actions,
      ],
      operation: 'SET TRANSACTION',
      operationParameters: {
        job: state.job,
        batch: state.batch,
        ...(old === null ? { fresh: true } : { adoptedStateOf: old }),
      },
      operationMetrics: { numFiles: '0', numOutputRows: '0' },
      read: {
        readVersion: snapshot.version,
        partitions: [],
        files: [],
        appIds: [
          jobAppId(state.job),
          ...(old === null ? [] : [jobAppId(old)]),
          ...backfills.appIds,
        ],
      },
      isBlindAppend: true,
    },
    {
      onRetry: () => void (scope.contention.commitRetries += 1),
      ...(scope.ctx.signal ? { signal: scope.ctx.signal } : {}),
    },
  );
  return result.version;
}
