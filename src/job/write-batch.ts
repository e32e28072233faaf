/**
 * Write a loaded batch into the target with the job's state in the same commit: MERGE by key
 * (with the job's tombstones), or append. A batch without rows (empty files) commits only the state.
 *
 * The state's owner is the job by default; a backfill of the job commits its own state under its
 * own appId instead (`WriteBatchOptions.owner`, see ./backfill-state.ts). Each owner keeps its own
 * tombstones, and a MERGE buries rows older than the deletes of either.
 */
import type { JobConfig } from '../config/schema.js';
import type { Action } from '../delta/actions.js';
import type { Snapshot } from '../delta/snapshot.js';
import type { DeltaTable } from '../delta/table.js';
import type { DuckSession } from '../engine/duckdb.js';
import { SOURCE_FILE, SOURCE_ROW } from '../engine/load.js';
import { appendToTable, mergeIntoTable } from '../engine/merge/index.js';
import { backfillTombstones } from './backfill-state.js';
import type { LoadedBatch } from './load-batch.js';
import { jobAppId, stateActions, type JobState } from './state.js';
import { unionTombstones } from './tombstone-union.js';
import type { TombstoneState } from './tombstones.js';

/** A state committed with a batch: it lists its owner's tombstone files. */
export interface OwnedState {
  tombstones?: TombstoneState;
}

/** Who commits a batch's state: its txn appId, its actions, and whose tombstones it reads. */
export interface StateOwner<S extends OwnedState> {
  /** txn appId (and domain) of the state; the commit reads it, so two writers of one owner conflict. */
  appId: string;
  /** Folder name of the owner's tombstone files (`_tidemark/tombstones/<name>/`). */
  tombstoneFolder: string;
  /** The actions committing `state` (txn + domainMetadata). */
  actions(state: S): Action[];
  /** operationParameters of a commit without data. */
  parameters(state: S): Record<string, unknown>;
  /** Other owners' tombstones, read (never changed) so their deletes bury older rows too. */
  others: Array<{ folder: string; state: TombstoneState | undefined }>;
}

/** The job as the owner of its state; it also reads the tombstones of its backfill. */
export function jobOwner(job: string, snapshot: Snapshot | null): StateOwner<JobState> {
  return {
    appId: jobAppId(job),
    tombstoneFolder: job,
    actions: (state) => stateActions(state),
    parameters: (state) => ({ job, batch: state.batch }),
    others: backfillTombstones(snapshot, job),
  };
}

export interface WriteBatchOptions<S extends OwnedState = JobState> {
  session: DuckSession;
  table: DeltaTable;
  job: JobConfig;
  snapshot: Snapshot | null;
  batch: LoadedBatch;
  /** The state after this batch, committed with it (its tombstones are those before the batch). */
  state: S;
  /** Who the state belongs to; default the job (then `state` is a JobState). */
  owner?: StateOwner<S>;
  spoolDir: string;
  /** The batch's clock in ms (tombstone expiry and stamps); default Date.now(). */
  now?: number;
  /** Called once the batch's data files are uploaded, before its tombstone file and commit. */
  afterWrite?: () => Promise<void> | void;
  signal?: AbortSignal;
}

export interface BatchCounts {
  inserted: number;
  updated: number;
  deleted: number;
  skippedStale: number;
}

export interface WrittenBatch<S extends OwnedState = JobState> {
  /** Committed version, or null when nothing could be committed (no rows and no table yet). */
  version: number | null;
  counts: BatchCounts;
  /** The state committed (`opts.state` with this batch's tombstones): the next batch starts from it. */
  state: S;
}

const NO_COUNTS: BatchCounts = { inserted: 0, updated: 0, deleted: 0, skippedStale: 0 };

/** Commit the batch and the state together. */
export async function writeBatch<S extends OwnedState = JobState>(opts: WriteBatchOptions<S>): Promise<WrittenBatch<S>> {
  const owner = opts.owner ?? (jobOwner(opts.job.name, opts.snapshot) as unknown as StateOwner<S>);
  if (opts.batch.rowsRead === 0) return commitStateOnly(opts, owner);
  return opts.job.target.mode === 'append' ? appendBatch(opts, owner) : mergeBatch(opts, owner);
}

/** What append and MERGE share. */
function writeTarget<S extends OwnedState>(opts: WriteBatchOptions<S>, owner: StateOwner<S>) {
  return {
    session: opts.session,
    table: opts.table,
    snapshot: opts.snapshot,
    batch: opts.batch.table,
    partitionBy: opts.job.target.partitionBy,
    schemaEvolution: opts.job.schemaEvolution,
    internalColumns: [SOURCE_ROW],
    sourceFileColumn: SOURCE_FILE,
    sourceRowColumn: SOURCE_ROW,
    appIds: [owner.appId],
    spoolDir: opts.spoolDir,
    concurrency: opts.job.concurrency,
    targetFileRows: opts.job.target.maxRowsPerFile,
    ...(opts.afterWrite ? { afterWrite: opts.afterWrite } : {}),
    ...(opts.signal ? { signal: opts.signal } : {}),
  };
}

async function appendBatch<S extends OwnedState>(opts: WriteBatchOptions<S>, owner: StateOwner<S>): Promise<WrittenBatch<S>> {
  const r = await appendToTable({ ...writeTarget(opts, owner), extraActions: owner.actions(opts.state) });
  return { version: r.version, counts: { ...NO_COUNTS, inserted: r.inserted }, state: opts.state };
}

/**
 * MERGE with the owner's tombstones (./tombstones.ts) and those of the other owners: the live ones
 * bury older rows, and the batch's deletes are written as a tombstone file of the owner just before
 * the commit, whose state lists it.
 */
async function mergeBatch<S extends OwnedState>(opts: WriteBatchOptions<S>, owner: StateOwner<S>): Promise<WrittenBatch<S>> {
  const { job } = opts;
  const tombstones = await unionTombstones({
    session: opts.session,
    storage: opts.table.storage,
    spec: { job: owner.tombstoneFolder, key: job.target.key!, orderBy: job.target.orderBy!, retentionMs: job.target.tombstoneRetention },
    state: opts.state.tombstones,
    others: owner.others,
    now: opts.now ?? Date.now(),
    spoolDir: opts.spoolDir,
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
  try {
    let state = opts.state;
    const r = await mergeIntoTable({
      ...writeTarget(opts, owner),
      keyColumns: job.target.key!,
      orderBy: job.target.orderBy!,
      keysUnique: true, // loadBatch reduced the batch to one row per key
      ...(job.target.deleteWhen ? { deleteWhen: job.target.deleteWhen } : {}),
      ...(tombstones.relation ? { tombstones: tombstones.relation } : {}),
      recordDeletes: async (deletes) => {
        state = withTombstones(opts.state, await tombstones.own.record(deletes));
        return owner.actions(state);
      },
    });
    await tombstones.own.purge();
    return { version: r.version, counts: { inserted: r.inserted, updated: r.updated, deleted: r.deleted, skippedStale: r.skippedStale }, state };
  } finally {
    await tombstones.dispose();
  }
}

/** `state` with its tombstones field replaced (left out when there are none). */
function withTombstones<S extends OwnedState>(state: S, tombstones: TombstoneState | undefined): S {
  const { tombstones: _old, ...rest } = state;
  return (tombstones ? { ...rest, tombstones } : rest) as S;
}

/** Empty files still move the watermark, so they are not listed again; without a table there is nothing to commit to. */
async function commitStateOnly<S extends OwnedState>(opts: WriteBatchOptions<S>, owner: StateOwner<S>): Promise<WrittenBatch<S>> {
  if (!opts.snapshot) return { version: null, counts: NO_COUNTS, state: opts.state };
  const result = await opts.table.commit({
    actions: owner.actions(opts.state),
    operation: 'SET TRANSACTION',
    operationParameters: owner.parameters(opts.state),
    operationMetrics: { numFiles: '0', numOutputRows: '0' },
    read: { readVersion: opts.snapshot.version, partitions: [], files: [], appIds: [owner.appId] },
    isBlindAppend: true,
  });
  return { version: result.version, counts: NO_COUNTS, state: opts.state };
}
