/**
 * `tidemark backfill`: reload a range of a job's source, oldest first, resumably.
 *
 *   backfill state (tidemark.backfill.<job>) ──► start, resume, or refuse ──► list the rest
 *   for each batch (never two partitions in one): fetch ──► load ──► dedupe ──► MERGE / append
 *                   └─ data + the backfill state in ONE Delta commit (./batch-pipeline.ts)
 *
 * - The job's own state (watermark, txn) is never written, so the hourly run is undisturbed;
 *   MERGE's not-older rule keeps the newer rows the job loaded, and the tombstones of both
 *   (the job's and the backfill's) keep deleted keys deleted.
 * - A commit race lost to anyone (the hourly run MERGing into the same partitions) means
 *   re-reading the table and planning the rest of the range again, like a run does.
 * - Ranges: the same range after an interruption resumes; a completed range is a no-op unless
 *   `restart`; another range is refused while one is unfinished (unless `restart`, which abandons it).
 * - Append mode reloads rows the job may already hold (duplicates): refused unless `force`.
 */
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { JobConfig } from '../config/schema.js';
import type { DeltaTable } from '../delta/table.js';
import type { Snapshot } from '../delta/snapshot.js';
import type { DiscoveryState } from '../discovery/index.js';
import { DuckSession } from '../engine/duckdb.js';
import { ConfigError } from '../errors.js';
import { startProgress, type Progress } from '../log/progress.js';
import type { Storage } from '../storage/storage.js';
import { describeRange, parseBackfillRange, type BackfillRange } from './backfill-range.js';
import { listBackfill, startState, stateAfter, doneState, type BackfillPlan } from './backfill-plan.js';
import { backfillActions, backfillAppId, backfillTombstoneFolder, readBackfillState, type BackfillState } from './backfill-state.js';
import { loadAndCommitBatch, type BatchRunner, type CommittedBatch } from './batch-pipeline.js';
import type { RunContext } from './context.js';
import { openSource } from './open.js';
import { openJobTable, withReplans } from './replan.js';
import type { LoadCounts } from './report.js';
import { createSpool, removeStaleSpools, unregisterSpool } from './spool.js';
import { readJobState } from './state.js';
import { describeWatermark } from './watermark.js';
import type { StateOwner } from './write-batch.js';

/** What to backfill. */
export interface BackfillOptions {
  /** First partition (or timestamp) of the range, included. */
  from: string;
  /** Last partition (or timestamp) of the range, included. */
  to: string;
  /** Start the range over (also when done), abandoning any unfinished backfill of the job. */
  restart?: boolean;
  /** Allow an append-mode backfill (rows already loaded are appended again). */
  force?: boolean;
  /** List and plan only. */
  dryRun?: boolean;
}

/** succeeded: the range is now done; already-done: it was, nothing to do. */
export type BackfillStatus = 'succeeded' | 'already-done' | 'dry-run' | 'failed';

/** What a backfill reports (one JSON object per job with --json). */
export interface BackfillReport extends LoadCounts {
  job: string;
  command: 'backfill';
  status: BackfillStatus;
  /** The range, normalised (partition ids or ISO timestamps). */
  from: string;
  to: string;
  /** The cursor an interrupted backfill resumed from; null when it started at `from`. */
  resumedFrom: string | null;
  /** The committed cursor after this invocation (the range end once done). */
  doneThrough: string | null;
  partitionsListed: number;
  filesPlanned: number;
  bytesLoaded: number;
  commits: number;
  tableVersion: number | null;
  /** The job's own watermark: a backfill leaves it where it was. */
  watermark: string | null;
  skippedByReason: Record<string, number>;
  /** Files set aside by `onBadFile: quarantine`, with the reason (recorded in the backfill state). */
  quarantined?: Array<{ key: string; reason: string }>;
  /** With dry-run: the files that would load, in order. */
  plannedFiles?: string[];
  durationMs: number;
  error?: { type: string; message: string; context?: Record<string, unknown> };
}

const failedBackfills = new WeakMap<object, BackfillReport>();

/** The report of a backfill that failed with `err` (what it committed before); undefined for other errors. */
export function reportOfFailedBackfill(err: unknown): BackfillReport | undefined {
  return typeof err === 'object' && err !== null ? failedBackfills.get(err) : undefined;
}

/** Decide how a backfill of `range` starts, given the committed state; throws ConfigError to refuse. */
export function decideStart(job: string, prev: BackfillState | null, range: BackfillRange, restart: boolean): 'fresh' | 'resume' | 'already-done' {
  if (prev === null || restart) return 'fresh';
  const { from, to } = describeRange(range);
  const same = prev.mode === range.mode && prev.from === from && prev.to === to;
  if (same) return prev.status === 'done' ? 'already-done' : 'resume';
  if (prev.status === 'done') return 'fresh';
  throw new ConfigError(
    `[backfill] job ${job}: a backfill of ${prev.from}..${prev.to} is unfinished (done through ${prev.doneThrough ?? 'nothing yet'}); ` +
      `run it again with --from ${prev.from} --to ${prev.to} to finish it, or pass --restart to abandon it and backfill ${from}..${to}`,
    { field: 'from', job, unfinished: `${prev.from}..${prev.to}` },
  );
}

/** Backfill `job` over a range; throws on failure (reportOfFailedBackfill says what was committed). */
export async function runBackfill(job: JobConfig, ctx: RunContext, opts: BackfillOptions): Promise<BackfillReport> {
  const started = Date.now();
  const range = parseBackfillRange(job, opts.from, opts.to);
  if (job.target.mode === 'append' && !opts.force && !opts.dryRun) {
    throw new ConfigError(
      `[backfill] job ${job.name} appends (target.mode: append): a backfill appends every row of the range again, duplicating rows already loaded; ` +
        'pass --force if the range was never loaded (history before the job started)',
      { field: 'force', job: job.name },
    );
  }
  const spoolRoot = ctx.spoolRoot ?? tmpdir();
  await removeStaleSpools(spoolRoot);
  const spoolDir = await createSpool(spoolRoot, `${job.name}-backfill`);
  let session: DuckSession | null = null;
  let run: BackfillRun | null = null;
  try {
    // DuckDB spills big batches to disk inside the spool, which every exit path removes.
    session = await DuckSession.open({ tempDirectory: join(spoolDir, 'duckdb') });
    run = new BackfillRun(job, ctx, session, spoolDir, range, opts);
    return { ...(await run.execute()), durationMs: Date.now() - started };
  } catch (err) {
    if (run && typeof err === 'object' && err !== null) failedBackfills.set(err, { ...run.progress(), status: 'failed', durationMs: Date.now() - started });
    throw err;
  } finally {
    session?.close();
    await rm(spoolDir, { recursive: true, force: true });
    unregisterSpool(spoolDir);
  }
}

class BackfillRun {
  private readonly report: BackfillReport;
  private readonly table: DeltaTable;
  private readonly source: Storage;

  constructor(
    private readonly job: JobConfig,
    private readonly ctx: RunContext,
    private readonly session: DuckSession,
    private readonly spoolDir: string,
    private readonly range: BackfillRange,
    private readonly opts: BackfillOptions,
  ) {
    this.report = emptyBackfillReport(job.name, range);
    this.source = openSource(job, ctx.storage, ctx.openStorage);
    this.table = openJobTable(job, ctx, session, () => this.report.commits);
  }

  /** Plan and load, planning the rest of the range again after each lost commit race (like a run). */
  async execute(): Promise<BackfillReport> {
    return withReplans(
      {
        ctx: this.ctx,
        job: this.job.name,
        uri: this.table.uri,
        commits: () => this.report.commits,
        ownAppId: backfillAppId(this.job.name),
        subsystem: '[backfill]',
        giveUpHint: ' (run the same backfill again to resume)',
        replanMessage: 'backfill: another writer committed first; planning the rest of the range again',
      },
      () => this.planAndLoad(),
    );
  }

  /** The report so far (for a backfill that fails halfway). */
  progress(): BackfillReport {
    return { ...this.report };
  }

  private async planAndLoad(): Promise<BackfillReport> {
    let snapshot = await this.table.snapshot();
    const prev = readBackfillState(snapshot, this.job.name);
    this.report.watermark = describeWatermark(readJobState(snapshot, this.job.name).discovery as DiscoveryState | null);
    this.report.tableVersion = snapshot?.version ?? null;
    // --restart applies until this invocation's first commit; after it the state is its own.
    const start = decideStart(this.job.name, prev, this.range, (this.opts.restart ?? false) && this.report.commits === 0);
    if (start === 'already-done') return this.finish('already-done', prev);
    let state = start === 'resume' ? prev! : startState(this.job.name, this.range, prev, new Date());
    if (this.report.commits === 0) this.report.resumedFrom = start === 'resume' ? state.doneThrough : null;

    const plan = await listBackfill(this.source, this.job, this.range, state, { concurrency: Math.min(this.job.concurrency, 16), ...this.signal() });
    this.describePlan(plan);
    if (this.opts.dryRun) return this.finish('dry-run', state);
    const progress = this.startProgress(plan);
    for (const [i, batch] of plan.batches.entries()) {
      const before = state;
      const committed = await loadAndCommitBatch<BackfillState>(this.runner(), {
        files: batch.files,
        snapshot,
        batchNo: this.report.commits,
        progressLabel: null,
        stateAfter: (files, rowsRead, quarantined) => stateAfter(before, batch, { files, rowsRead, quarantined }, { last: i === plan.batches.length - 1, now: new Date() }),
        owner: this.owner(snapshot),
        onCommitted: (b) => this.count(b),
      });
      snapshot = committed.snapshot;
      state = committed.batch.written.state;
      progress.tick(batch.files.length, committed.batch.bytes);
      this.ctx.logger.info(
        { job: this.job.name, partition: batch.partition ?? undefined, files: batch.files.length, version: committed.batch.written.version, doneThrough: state.doneThrough, ...committed.batch.written.counts },
        'backfill batch committed',
      );
    }
    progress.done();
    // Resumed, and the rest of the range held nothing: mark it done without data.
    if (state.status !== 'done' && start === 'resume' && snapshot) {
      state = doneState(state, new Date());
      this.report.tableVersion = await this.commitState(snapshot, state);
    }
    return this.finish('succeeded', state);
  }

  /** The backfill as the owner of its state; it reads the job's tombstones too. */
  private owner(snapshot: Snapshot | null): StateOwner<BackfillState> {
    const job = this.job.name;
    return {
      appId: backfillAppId(job),
      tombstoneFolder: backfillTombstoneFolder(job),
      actions: (s) => backfillActions(s),
      parameters: (s) => ({ job, backfill: `${s.from}..${s.to}`, batch: s.batch }),
      others: [{ folder: job, state: readJobState(snapshot, job).tombstones }],
    };
  }

  /** Commit the backfill state alone (no data). */
  private async commitState(snapshot: Snapshot, state: BackfillState): Promise<number> {
    const result = await this.table.commit(
      {
        actions: backfillActions(state),
        operation: 'SET TRANSACTION',
        operationParameters: { job: this.job.name, backfill: `${state.from}..${state.to}`, batch: state.batch, status: state.status },
        operationMetrics: { numFiles: '0', numOutputRows: '0' },
        read: { readVersion: snapshot.version, partitions: [], files: [], appIds: [backfillAppId(this.job.name)] },
        isBlindAppend: true,
      },
      this.signal(),
    );
    this.report.commits += 1;
    return result.version;
  }

  private runner(): BatchRunner {
    return { job: this.job, ctx: this.ctx, session: this.session, source: this.source, table: this.table, spoolDir: this.spoolDir };
  }

  private signal(): { signal?: AbortSignal } {
    return this.ctx.signal ? { signal: this.ctx.signal } : {};
  }

  private startProgress(plan: BackfillPlan): Progress {
    const { from, to } = describeRange(this.range);
    const tty = this.ctx.tty ?? process.stderr.isTTY ?? false;
    // Off a terminal: one structured line per commit.
    return startProgress({ label: `${this.job.name}: backfill ${from}..${to}`, total: plan.files, logger: this.ctx.logger, tty, intervalMs: tty ? 100 : 0 });
  }

  private describePlan(plan: BackfillPlan): void {
    const r = this.report;
    r.partitionsListed = plan.partitionsListed.length;
    r.filesPlanned = plan.files;
    r.skippedByReason = {};
    for (const s of plan.skipped) r.skippedByReason[s.reason] = (r.skippedByReason[s.reason] ?? 0) + 1;
    if (plan.skippedFolders.length > 0) {
      this.ctx.logger.warn({ job: this.job.name, folders: plan.skippedFolders }, 'backfill: folders that do not match the layout were skipped');
    }
    if (this.opts.dryRun) r.plannedFiles = plan.batches.flatMap((b) => b.files.map((f) => f.key));
  }

  private count(b: CommittedBatch<BackfillState>): void {
    const r = this.report;
    if (b.written.version !== null) r.tableVersion = b.written.version;
    r.doneThrough = b.written.state.doneThrough;
    r.filesLoaded += b.files;
    r.bytesLoaded += b.bytes;
    r.rowsRead += b.rowsRead;
    r.rowsAfterDedupe += b.rowsAfterDedupe;
    r.inserted += b.written.counts.inserted;
    r.updated += b.written.counts.updated;
    r.deleted += b.written.counts.deleted;
    r.skippedStale += b.written.counts.skippedStale;
    r.commits += 1;
    if (b.quarantined.length > 0) r.quarantined = [...(r.quarantined ?? []), ...b.quarantined.map((q) => ({ key: q.key, reason: q.error }))];
  }

  private finish(status: BackfillStatus, state: BackfillState | null): BackfillReport {
    this.report.status = status;
    if (status !== 'dry-run') this.report.doneThrough = state?.doneThrough ?? null;
    return this.report;
  }
}

/** A report with every counter at zero. */
export function emptyBackfillReport(job: string, range: BackfillRange): BackfillReport {
  return {
    job,
    command: 'backfill',
    status: 'succeeded',
    ...describeRange(range),
    resumedFrom: null,
    doneThrough: null,
    partitionsListed: 0,
    filesPlanned: 0,
    filesLoaded: 0,
    bytesLoaded: 0,
    rowsRead: 0,
    rowsAfterDedupe: 0,
    inserted: 0,
    updated: 0,
    deleted: 0,
    skippedStale: 0,
    commits: 0,
    tableVersion: null,
    watermark: null,
    skippedByReason: {},
    durationMs: 0,
  };
}
