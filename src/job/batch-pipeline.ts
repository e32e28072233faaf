/**
 * One batch, as the job and its backfill both load it:
 *
 *   fetch ──► load into DuckDB ──► dedupe (merge mode) ──► MERGE / append
 *   └─ data + the caller's state (its txn + domainMetadata) in ONE Delta commit (the commit point)
 *
 * Files are read in the table's column types. Under `onBadFile: quarantine` a file that breaks
 * the batch is set aside and the rest loaded again, in the same commit (./quarantine.ts).
 *
 * The caller says what state to commit given what was loaded, and who owns that state (the job
 * by default, see ./write-batch.ts). Fault-injection hooks (RunContext.hooks) fire at the same
 * points for both.
 */
import { rm } from 'node:fs/promises';
import type { JobConfig } from '../config/schema.js';
import type { DeltaTable } from '../delta/table.js';
import type { Snapshot } from '../delta/snapshot.js';
import type { DiscoveredFile } from '../discovery/index.js';
import type { DuckSession } from '../engine/duckdb.js';
import { startProgress } from '../log/progress.js';
import type { Storage } from '../storage/storage.js';
import type { RunContext } from './context.js';
import { fetchFiles } from './fetch.js';
import { loadBatch } from './load-batch.js';
import { loadQuarantining } from './quarantine.js';
import type { JobState, QuarantinedFile } from './state.js';
import { writeBatch, type OwnedState, type StateOwner, type WrittenBatch } from './write-batch.js';

/** What every batch of a run shares. */
export interface BatchRunner {
  job: JobConfig;
  ctx: RunContext;
  session: DuckSession;
  source: Storage;
  table: DeltaTable;
  spoolDir: string;
}

/** One batch to load and commit. */
export interface BatchSpec<S extends OwnedState> {
  files: readonly DiscoveredFile[];
  /** The snapshot the batch is planned on (null: no table yet). */
  snapshot: Snapshot | null;
  /** The batch's number within the run (0-based), passed to the hooks. */
  batchNo: number;
  /** Label of the fetch progress bar; null for none (the caller shows its own progress). */
  progressLabel: string | null;
  /**
   * The state to commit with the batch, given its files as loaded (with the ETag of the content
   * actually fetched: a file overwritten since the listing is known by its new ETag) and rows read.
   * `loaded` includes the files set aside by `onBadFile: quarantine`, listed again in `quarantined`.
   */
  stateAfter(loaded: readonly DiscoveredFile[], rowsRead: number, quarantined: readonly QuarantinedFile[]): S;
  /** Who owns the state; default the job. */
  owner?: StateOwner<S>;
  /** Called right after the commit, before the afterCommit hook (a failed run's report keeps the batch). */
  onCommitted?(batch: CommittedBatch<S>): void;
}

/** A committed batch. */
export interface CommittedBatch<S extends OwnedState> {
  written: WrittenBatch<S>;
  /** Files loaded (quarantined ones not counted). */
  files: number;
  /** Files set aside by `onBadFile: quarantine` (see ./quarantine.ts). */
  quarantined: QuarantinedFile[];
  bytes: number;
  rowsRead: number;
  rowsAfterDedupe: number;
}

/**
 * Fetch, load, dedupe and commit one batch with its state; returns the batch and the snapshot of
 * the version it committed. The next batch plans on that version, never a later one: a later
 * version may hold a rival writer's commit of the same files, and planning on it with this run's
 * state would hide that race from the conflict check (and load those files twice).
 */
export async function loadAndCommitBatch<S extends OwnedState = JobState>(
  run: BatchRunner,
  spec: BatchSpec<S>,
): Promise<{ batch: CommittedBatch<S>; snapshot: Snapshot | null }> {
  const { job, ctx } = run;
  const signal = ctx.signal ? { signal: ctx.signal } : {};
  const progress =
    spec.progressLabel === null
      ? undefined
      : startProgress({ label: spec.progressLabel, total: spec.files.length, logger: ctx.logger, ...(ctx.tty !== undefined ? { tty: ctx.tty } : {}) });
  const fetched = await fetchFiles(run.source, spec.files, { spoolDir: run.spoolDir, concurrency: job.concurrency, ...(progress ? { progress } : {}), ...signal });
  progress?.done();
  await ctx.hooks?.afterFetch?.(spec.batchNo);

  const quarantine = { enabled: job.onBadFile === 'quarantine', sourceUri: run.source.uri, logger: ctx.logger, job: job.name };
  const { result, quarantined } = await loadQuarantining(fetched, quarantine, async (kept, bad) => {
    const loaded = await loadBatch(run.session, job, run.source.uri, kept, { schema: spec.snapshot?.schema ?? null });
    try {
      // Every fetched file is done: loaded, or quarantined (recorded, and not listed again).
      const state = spec.stateAfter(fetched.map((f) => ({ ...f.file, etag: f.etag })), loaded.rowsRead, bad.map((q) => q.entry));
      const written = await writeBatch<S>({
        session: run.session,
        table: run.table,
        job,
        snapshot: spec.snapshot,
        batch: loaded,
        state,
        spoolDir: run.spoolDir,
        ...(spec.owner ? { owner: spec.owner } : {}),
        ...(ctx.hooks?.afterWrite ? { afterWrite: () => ctx.hooks!.afterWrite!(spec.batchNo) } : {}),
        ...signal,
      });
      return { written, rowsRead: loaded.rowsRead, rowsAfterDedupe: loaded.rowsAfterDedupe };
    } finally {
      await loaded.dispose();
    }
  });
  const batch: CommittedBatch<S> = {
    ...result,
    files: spec.files.length - quarantined.length,
    bytes: spec.files.reduce((n, f) => n + f.size, 0),
    quarantined: quarantined.map((q) => q.entry),
  };
  spec.onCommitted?.(batch);
  const { written } = batch;
  await ctx.hooks?.afterCommit?.(spec.batchNo, written.version);
  await Promise.all(fetched.filter((f) => f.downloaded).map((f) => rm(f.localPath, { force: true })));
  const snapshot = written.version === null ? spec.snapshot : await run.table.snapshot({ version: written.version });
  return { batch, snapshot };
}
