/**
 * Write a loaded batch into the target with the job's state in the same commit: MERGE by key
 * (with the job's tombstones), or append. A batch without rows (empty files) commits only the state.
 */
import type { JobConfig } from '../config/schema.js';
import type { Snapshot } from '../delta/snapshot.js';
import type { DeltaTable } from '../delta/table.js';
import type { DuckSession } from '../engine/duckdb.js';
import { SOURCE_FILE, SOURCE_ROW } from '../engine/load.js';
import { appendToTable, mergeIntoTable } from '../engine/merge/index.js';
import type { LoadedBatch } from './load-batch.js';
import { jobAppId, stateActions, type JobState } from './state.js';
import { JobTombstones } from './tombstone-files.js';
import type { TombstoneState } from './tombstones.js';

export interface WriteBatchOptions {
  session: DuckSession;
  table: DeltaTable;
  job: JobConfig;
  snapshot: Snapshot | null;
  batch: LoadedBatch;
  /** The job state after this batch, committed with it (its tombstones are those before the batch). */
  state: JobState;
  spoolDir: string;
  /** The batch's clock in ms (tombstone expiry and stamps); default Date.now(). */
  now?: number;
  signal?: AbortSignal;
}

export interface BatchCounts {
  inserted: number;
  updated: number;
  deleted: number;
  skippedStale: number;
}

export interface WrittenBatch {
  /** Committed version, or null when nothing could be committed (no rows and no table yet). */
  version: number | null;
  counts: BatchCounts;
  /** The state committed (`opts.state` with this batch's tombstones): the next batch starts from it. */
  state: JobState;
}

const NO_COUNTS: BatchCounts = { inserted: 0, updated: 0, deleted: 0, skippedStale: 0 };

/** Commit the batch and the state together. */
export async function writeBatch(opts: WriteBatchOptions): Promise<WrittenBatch> {
  if (opts.batch.rowsRead === 0) return commitStateOnly(opts);
  return opts.job.target.mode === 'append' ? appendBatch(opts) : mergeBatch(opts);
}

/** What append and MERGE share. */
function writeTarget(opts: WriteBatchOptions) {
  return {
    session: opts.session,
    table: opts.table,
    snapshot: opts.snapshot,
    batch: opts.batch.table,
    partitionBy: opts.job.target.partitionBy,
    internalColumns: [SOURCE_ROW],
    sourceFileColumn: SOURCE_FILE,
    sourceRowColumn: SOURCE_ROW,
    appIds: [jobAppId(opts.job.name)],
    spoolDir: opts.spoolDir,
    concurrency: opts.job.concurrency,
    ...(opts.signal ? { signal: opts.signal } : {}),
  };
}

async function appendBatch(opts: WriteBatchOptions): Promise<WrittenBatch> {
  const r = await appendToTable({ ...writeTarget(opts), extraActions: stateActions(opts.state) });
  return { version: r.version, counts: { ...NO_COUNTS, inserted: r.inserted }, state: opts.state };
}

/**
 * MERGE with the job's tombstones (./tombstones.ts): the live ones bury older rows, and the
 * batch's deletes are written as a tombstone file just before the commit, whose state lists it.
 */
async function mergeBatch(opts: WriteBatchOptions): Promise<WrittenBatch> {
  const { job } = opts;
  const tombstones = await JobTombstones.open({
    session: opts.session,
    storage: opts.table.storage,
    spec: { job: job.name, key: job.target.key!, orderBy: job.target.orderBy!, retentionMs: job.target.tombstoneRetention },
    state: opts.state.tombstones,
    now: opts.now ?? Date.now(),
    spoolDir: opts.spoolDir,
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
  try {
    let state = opts.state;
    const r = await mergeIntoTable({
      ...writeTarget(opts),
      keyColumns: job.target.key!,
      orderBy: job.target.orderBy!,
      ...(job.target.deleteWhen ? { deleteWhen: job.target.deleteWhen } : {}),
      ...(tombstones.relation ? { tombstones: tombstones.relation } : {}),
      recordDeletes: async (deletes) => {
        state = withTombstones(opts.state, await tombstones.record(deletes));
        return stateActions(state);
      },
    });
    await tombstones.purge();
    return { version: r.version, counts: { inserted: r.inserted, updated: r.updated, deleted: r.deleted, skippedStale: r.skippedStale }, state };
  } finally {
    await tombstones.dispose();
  }
}

/** `state` with its tombstones field replaced (left out when there are none). */
function withTombstones(state: JobState, tombstones: TombstoneState | undefined): JobState {
  const { tombstones: _old, ...rest } = state;
  return tombstones ? { ...rest, tombstones } : rest;
}

/** Empty files still move the watermark, so they are not listed again; without a table there is nothing to commit to. */
async function commitStateOnly(opts: WriteBatchOptions): Promise<WrittenBatch> {
  if (!opts.snapshot) return { version: null, counts: NO_COUNTS, state: opts.state };
  const result = await opts.table.commit({
    actions: stateActions(opts.state),
    operation: 'SET TRANSACTION',
    operationParameters: { job: opts.job.name, batch: opts.state.batch },
    operationMetrics: { numFiles: '0', numOutputRows: '0' },
    read: { readVersion: opts.snapshot.version, partitions: [], files: [], appIds: [jobAppId(opts.job.name)] },
    isBlindAppend: true,
  });
  return { version: result.version, counts: NO_COUNTS, state: opts.state };
}
