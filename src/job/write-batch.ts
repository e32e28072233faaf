/**
 * Write a loaded batch into the target with the job's state in the same commit: MERGE by key,
 * or append. A batch without rows (empty files) commits only the state.
 */
import type { JobConfig } from '../config/schema.js';
import type { Snapshot } from '../delta/snapshot.js';
import type { DeltaTable } from '../delta/table.js';
import type { DuckSession } from '../engine/duckdb.js';
import { SOURCE_FILE, SOURCE_ROW } from '../engine/load.js';
import { appendToTable, mergeIntoTable } from '../engine/merge/index.js';
import type { LoadedBatch } from './load-batch.js';
import { jobAppId, stateActions, type JobState } from './state.js';

export interface WriteBatchOptions {
  session: DuckSession;
  table: DeltaTable;
  job: JobConfig;
  snapshot: Snapshot | null;
  batch: LoadedBatch;
  /** The job state after this batch, committed with it. */
  state: JobState;
  spoolDir: string;
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
}

const NO_COUNTS: BatchCounts = { inserted: 0, updated: 0, deleted: 0, skippedStale: 0 };

/** Commit the batch and the state together. */
export async function writeBatch(opts: WriteBatchOptions): Promise<WrittenBatch> {
  const { job } = opts;
  const extraActions = stateActions(opts.state);
  if (opts.batch.rowsRead === 0) return commitStateOnly(opts);
  const common = {
    session: opts.session,
    table: opts.table,
    snapshot: opts.snapshot,
    batch: opts.batch.table,
    partitionBy: job.target.partitionBy,
    internalColumns: [SOURCE_ROW],
    sourceFileColumn: SOURCE_FILE,
    sourceRowColumn: SOURCE_ROW,
    appIds: [jobAppId(job.name)],
    extraActions,
    spoolDir: opts.spoolDir,
    concurrency: job.concurrency,
    ...(opts.signal ? { signal: opts.signal } : {}),
  };
  if (job.target.mode === 'append') {
    const r = await appendToTable(common);
    return { version: r.version, counts: { ...NO_COUNTS, inserted: r.inserted } };
  }
  const r = await mergeIntoTable({
    ...common,
    keyColumns: job.target.key!,
    orderBy: job.target.orderBy!,
    ...(job.target.deleteWhen ? { deleteWhen: job.target.deleteWhen } : {}),
  });
  return { version: r.version, counts: { inserted: r.inserted, updated: r.updated, deleted: r.deleted, skippedStale: r.skippedStale } };
}

/** Empty files still move the watermark, so they are not listed again; without a table there is nothing to commit to. */
async function commitStateOnly(opts: WriteBatchOptions): Promise<WrittenBatch> {
  if (!opts.snapshot) return { version: null, counts: NO_COUNTS };
  const result = await opts.table.commit({
    actions: stateActions(opts.state),
    operation: 'SET TRANSACTION',
    operationParameters: { job: opts.job.name, batch: opts.state.batch },
    operationMetrics: { numFiles: '0', numOutputRows: '0' },
    read: { readVersion: opts.snapshot.version, partitions: [], files: [], appIds: [jobAppId(opts.job.name)] },
    isBlindAppend: true,
  });
  return { version: result.version, counts: NO_COUNTS };
}
