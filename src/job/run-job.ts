/**
 * One run of one job:
 *
 *   snapshot + job state ──► discover ──► batches (maxFilesPerBatch / maxBytesPerBatch)
 *   for each batch: fetch ──► load into DuckDB ──► dedupe (merge mode) ──► MERGE / append
 *                   └─ data + txn + job state in ONE Delta commit (the commit point)
 *
 * A crash anywhere leaves the table at the last committed batch, whose state says exactly
 * which files are in it, so a rerun loads the rest once. Losing a commit race to another run
 * of the same job means re-reading the winner's state and planning again.
 */
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { JobConfig } from '../config/schema.js';
import type { DeltaTable } from '../delta/table.js';
import type { Snapshot } from '../delta/snapshot.js';
import { discover, nextStateFor, type DiscoveredFile, type DiscoveryPlan, type DiscoveryState } from '../discovery/index.js';
import { DuckSession } from '../engine/duckdb.js';
import type { WrittenBatch } from './write-batch.js';
import { loadAndCommitBatch, type BatchRunner } from './batch-pipeline.js';
import { splitBatches } from './batches.js';
import type { RunContext } from './context.js';
import { discoveryConfigOf, openSource } from './open.js';
import { openJobTable, withReplans } from './replan.js';
import { emptyReport, type RunReport } from './report.js';
import { withQuarantined } from './quarantine.js';
import { jobAppId, readJobState, type JobState } from './state.js';
import { describeWatermark } from './watermark.js';
import { createSpool, removeStaleSpools, unregisterSpool } from './spool.js';
import type { Storage } from '../storage/storage.js';

const failedRuns = new WeakMap<object, RunReport>();

/**
 * What a run had done when it failed with `err`: the batches it committed before the failure,
 * the table version and watermark after them. Undefined for errors runJob did not throw.
 */
export function reportOfFailedRun(err: unknown): RunReport | undefined {
  return typeof err === 'object' && err !== null ? failedRuns.get(err) : undefined;
}

/** Run `job` once. Throws on failure (the CLI turns errors into reports and exit codes). */
export async function runJob(job: JobConfig, ctx: RunContext): Promise<RunReport> {
  const started = Date.now();
  const spoolRoot = ctx.spoolRoot ?? tmpdir();
  const stale = await removeStaleSpools(spoolRoot);
  if (stale.length > 0) ctx.logger.info({ job: job.name, folders: stale }, 'removed spool folders of killed runs');
  const spoolDir = await createSpool(spoolRoot, job.name);
  let session: DuckSession | null = null;
  let run: JobRun | null = null;
  try {
    // DuckDB spills big batches to disk inside the spool, which every exit path removes.
    session = await DuckSession.open({ tempDirectory: join(spoolDir, 'duckdb') });
    run = new JobRun(job, ctx, session, spoolDir);
    const report = await run.execute();
    return { ...report, durationMs: Date.now() - started };
  } catch (err) {
    if (run && typeof err === 'object' && err !== null) {
      failedRuns.set(err, { ...run.progress(), status: 'failed', durationMs: Date.now() - started });
    }
    throw err;
  } finally {
    session?.close();
    await rm(spoolDir, { recursive: true, force: true });
    unregisterSpool(spoolDir);
  }
}

class JobRun {
  private readonly report: RunReport;
  private readonly table: DeltaTable;
  /** One source store (and S3 client) for the whole run. */
  private readonly source: Storage;

  constructor(
    private readonly job: JobConfig,
    private readonly ctx: RunContext,
    private readonly session: DuckSession,
    private readonly spoolDir: string,
  ) {
    this.report = emptyReport(job.name);
    this.source = openSource(job, ctx.storage, ctx.openStorage);
    this.table = openJobTable(job, ctx, session, () => this.report.batches);
  }

  /** Plan and load, planning again whenever another writer won a commit race (./replan.ts). */
  async execute(): Promise<RunReport> {
    return withReplans(
      {
        ctx: this.ctx,
        job: this.job.name,
        uri: this.table.uri,
        commits: () => this.report.commits,
        ownAppId: jobAppId(this.job.name),
        subsystem: '[job]',
        replanMessage: 'another writer committed first; re-reading its commit and planning again',
      },
      () => this.planAndLoad(),
    );
  }

  private async planAndLoad(): Promise<RunReport> {
    let snapshot = await this.table.snapshot();
    let state = readJobState(snapshot, this.job.name);
    const plan = await this.discover(state);
    this.describePlan(plan, snapshot, state);
    if (this.ctx.dryRun) return { ...this.report, status: 'dry-run' };
    if (plan.files.length === 0) return this.finish(snapshot, state);

    const batches = splitBatches(plan.files, this.job.maxFilesPerBatch, this.job.maxBytesPerBatch);
    this.ctx.logger.info({ job: this.job.name, files: plan.files.length, batches: batches.length }, 'loading');
    for (const files of batches) {
      const committed = await this.loadAndCommit(files, snapshot, state, plan);
      snapshot = committed.snapshot;
      state = committed.state;
    }
    return this.finish(snapshot, state);
  }

  private async discover(state: JobState): Promise<DiscoveryPlan> {
    this.ctx.logger.debug({ job: this.job.name, source: this.source.uri }, 'discovering');
    return discover(this.source, discoveryConfigOf(this.job), state.discovery as DiscoveryState | null, {
      concurrency: Math.min(this.job.concurrency, 16),
      ...(this.ctx.signal ? { signal: this.ctx.signal } : {}),
    });
  }

  /** One batch: fetch, load, dedupe, write + commit with the state after it (./batch-pipeline.ts). */
  private async loadAndCommit(
    files: DiscoveredFile[],
    snapshot: Snapshot | null,
    state: JobState,
    plan: DiscoveryPlan,
  ): Promise<{ snapshot: Snapshot | null; state: JobState }> {
    const batchNo = this.report.batches;
    const committed = await loadAndCommitBatch(this.runner(), {
      files,
      snapshot,
      batchNo,
      progressLabel: `${this.job.name}: fetch`,
      stateAfter: (loadedFiles, rowsRead, quarantined): JobState => ({
        ...state,
        batch: state.batch + 1,
        discovery: nextStateFor(state.discovery as DiscoveryState | null, plan, loadedFiles),
        lastRunAt: new Date().toISOString(),
        quarantined: withQuarantined(state.quarantined, quarantined, loadedFiles),
        totals: { filesLoaded: state.totals.filesLoaded + files.length - quarantined.length, rowsLoaded: state.totals.rowsLoaded + rowsRead },
      }),
      onCommitted: (b) => {
        this.count(b.files, b.rowsRead, b.rowsAfterDedupe, b.written, b.written.state);
        if (b.quarantined.length > 0) this.report.quarantined = [...(this.report.quarantined ?? []), ...b.quarantined.map((q) => ({ key: q.key, reason: q.error }))];
      },
    });
    const { written, bytes, rowsRead } = committed.batch;
    this.ctx.logger.info(
      { job: this.job.name, batch: batchNo + 1, files: files.length, bytes, rows: rowsRead, version: written.version, ...written.counts },
      'batch committed',
    );
    // The committed state: it lists the tombstone files this batch wrote.
    return { snapshot: committed.snapshot, state: written.state };
  }

  private runner(): BatchRunner {
    return { job: this.job, ctx: this.ctx, session: this.session, source: this.source, table: this.table, spoolDir: this.spoolDir };
  }

  /** The report so far (for a run that fails halfway). */
  progress(): RunReport {
    return { ...this.report };
  }

  private count(files: number, rowsRead: number, rowsAfterDedupe: number, written: WrittenBatch, state: JobState): void {
    const r = this.report;
    if (written.version !== null) r.tableVersion = written.version;
    r.watermark = describeWatermark(state.discovery as DiscoveryState | null);
    r.filesLoaded += files;
    r.rowsRead += rowsRead;
    r.rowsAfterDedupe += rowsAfterDedupe;
    r.inserted += written.counts.inserted;
    r.updated += written.counts.updated;
    r.deleted += written.counts.deleted;
    r.skippedStale += written.counts.skippedStale;
    r.batches += 1;
    r.commits += 1;
  }

  private describePlan(plan: DiscoveryPlan, snapshot: Snapshot | null, state: JobState): void {
    const skipped = plan.decisions.filter((d) => d.action === 'skip');
    const byReason: Record<string, number> = {};
    for (const d of skipped) byReason[d.reason] = (byReason[d.reason] ?? 0) + 1;
    this.report.filesDiscovered = plan.files.length;
    this.report.partitionsListed = plan.partitionsListed;
    this.report.skippedByReason = byReason;
    this.report.tableVersion = snapshot?.version ?? null;
    this.report.watermark = describeWatermark(state.discovery as DiscoveryState | null);
    if (plan.skippedFolders.length > 0) {
      this.ctx.logger.warn({ job: this.job.name, folders: plan.skippedFolders }, 'folders that do not match the layout were skipped');
    }
    if (this.ctx.dryRun) {
      this.report.plannedFiles = plan.files.map((f) => f.key);
      this.report.skipped = [
        ...skipped.map((d) => ({ key: d.key, reason: d.reason })),
        ...plan.skippedFolders.map((f) => ({ key: f.prefix, reason: f.reason })),
      ];
      this.report.watermarkAfter = describeWatermark(plan.nextState);
    }
  }

  private finish(snapshot: Snapshot | null, state: JobState): RunReport {
    this.report.tableVersion = snapshot?.version ?? null;
    this.report.watermark = describeWatermark(state.discovery as DiscoveryState | null);
    this.report.status = this.report.commits > 0 ? 'succeeded' : 'nothing-new';
    return this.report;
  }
}
