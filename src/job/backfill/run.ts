/**
 * `tidemark backfill`: reload a range of a job's source, oldest first, resumably.
 *
 *   backfill state (tidemark.backfill.<job>) ──► start, resume, or refuse ──► list the rest
 *   for each batch (never two partitions in one): fetch ──► load ──► dedupe ──► MERGE / append
 *                   └─ data + the backfill state in ONE Delta commit (the load pipeline, ../pipeline.ts)
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
import type { JobConfig } from '../../config/schema.js';
import type { Snapshot } from '../../delta/snapshot.js';
import { ConfigError } from '../../errors.js';
import { startProgress, type Progress } from '../../log/progress.js';
import type { RunContext } from '../context.js';
import { PhaseTimer, type PhaseTimings } from '../phases.js';
import { countBatch, loadBatches } from '../pipeline.js';
import { withReplans } from '../replan.js';
import { noLoadCounts, timedOutcome, type JobOutcome, type LoadCounts, type ReportedError } from '../report.js';
import { requestsOf, withJobScope, type JobScope } from '../scope.js';
import { readJobState } from '../state.js';
import { describeWatermark } from '../watermark.js';
import type { StateOwner } from '../write-batch.js';
import type { RequestCounts } from '../../storage/storage.js';
import { doneState, listBackfill, startState, stateAfter, type BackfillPlan } from './plan.js';
import { describeRange, parseBackfillRange, type BackfillRange } from './range.js';
import { backfillActions, backfillAppId, backfillTombstoneFolder, readBackfillState, type BackfillState } from './state.js';

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
  /** Milliseconds per phase, summed over the backfill's batches. */
  phases: PhaseTimings;
  /** S3 requests the backfill sent, by kind (absent when source and target are local). */
  requests?: RequestCounts;
  error?: ReportedError;
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

/**
 * Backfill `job` over a range. Never throws: a refused range or a failure is a failed outcome
 * whose report says what was committed before it.
 */
export async function runBackfill(job: JobConfig, ctx: RunContext, opts: BackfillOptions): Promise<JobOutcome<BackfillReport>> {
  const timer = new PhaseTimer();
  let report: BackfillReport | null = null;
  const refused = (): BackfillReport => ({ ...emptyBackfillReport(job.name, null), from: opts.from, to: opts.to });
  const progress = (): BackfillReport => ({ ...(report ?? refused()), phases: timer.timings() });
  return timedOutcome(progress, async () => {
    const range = parseBackfillRange(job, opts.from, opts.to);
    report = emptyBackfillReport(job.name, range);
    if (job.target.mode === 'append' && !opts.force && !opts.dryRun) {
      throw new ConfigError(
        `[backfill] job ${job.name} appends (target.mode: append): a backfill appends every row of the range again, duplicating rows already loaded; ` +
          'pass --force if the range was never loaded (history before the job started)',
        { field: 'force', job: job.name },
      );
    }
    const started = report;
    return withJobScope(job, ctx, `${job.name}-backfill`, async (scope) => {
      try {
        return await new BackfillRun(scope, started, timer, range, opts).execute();
      } finally {
        const requests = requestsOf(scope);
        if (requests) started.requests = requests;
      }
    });
  });
}

class BackfillRun {
  private readonly job: JobConfig;
  private readonly ctx: RunContext;

  constructor(
    private readonly scope: JobScope,
    private readonly report: BackfillReport,
    private readonly timer: PhaseTimer,
    private readonly range: BackfillRange,
    private readonly opts: BackfillOptions,
  ) {
    this.job = scope.job;
    this.ctx = scope.ctx;
  }

  /** Plan and load, planning the rest of the range again after each lost commit race (like a run). */
  async execute(): Promise<BackfillReport> {
    await withReplans(
      {
        ctx: this.ctx,
        job: this.job.name,
        uri: this.scope.table.uri,
        commits: () => this.report.commits,
        ownAppId: backfillAppId(this.job.name),
        subsystem: '[backfill]',
        giveUpHint: ' (run the same backfill again to resume)',
        replanMessage: 'backfill: another writer committed first; planning the rest of the range again',
      },
      () => this.planAndLoad(),
    );
    const requests = requestsOf(this.scope);
    return { ...this.report, phases: this.timer.timings(), ...(requests ? { requests } : {}) };
  }

  private async planAndLoad(): Promise<void> {
    const snapshot = await this.scope.table.snapshot();
    const prev = readBackfillState(snapshot, this.job.name);
    this.report.watermark = describeWatermark(readJobState(snapshot, this.job.name).discovery);
    this.report.tableVersion = snapshot?.version ?? null;
    // --restart applies until this invocation's first commit; after it the state is its own.
    const start = decideStart(this.job.name, prev, this.range, (this.opts.restart ?? false) && this.report.commits === 0);
    if (start === 'already-done') return this.finish('already-done', prev);
    const initial = start === 'resume' ? prev! : startState(this.job.name, this.range, prev, new Date());
    if (this.report.commits === 0) this.report.resumedFrom = start === 'resume' ? initial.doneThrough : null;

    const listOpts = { concurrency: Math.min(this.job.concurrency, 16), ...(this.ctx.signal ? { signal: this.ctx.signal } : {}) };
    const plan = await this.timer.time('list', () => listBackfill(this.scope.source, this.job, this.range, initial, listOpts));
    this.describePlan(plan);
    if (this.opts.dryRun) return this.finish('dry-run', initial);
    const progress = this.startProgress(plan);
    const last = await loadBatches<BackfillState>({
      scope: this.scope,
      timer: this.timer,
      owner: this.owner(snapshot),
      snapshot,
      state: initial,
      batches: plan.batches.map((b) => b.files),
      stateAfter: (before, i, files, rowsRead, quarantined) =>
        stateAfter(before, plan.batches[i]!, { files, rowsRead, quarantined }, { last: i === plan.batches.length - 1, now: new Date() }),
      firstBatchNo: this.report.commits,
      progressLabel: null,
      progress,
      onCommitted: (b, i) => {
        const r = this.report;
        countBatch(r, b);
        if (b.written.version !== null) r.tableVersion = b.written.version;
        r.doneThrough = b.written.state.doneThrough;
        r.bytesLoaded += b.bytes;
        r.commits += 1;
        if (b.quarantined.length > 0) r.quarantined = [...(r.quarantined ?? []), ...b.quarantined.map((q) => ({ key: q.key, reason: q.error }))];
        this.ctx.logger.info(
          { job: this.job.name, partition: plan.batches[i]!.partition ?? undefined, files: b.files, version: b.written.version, doneThrough: b.written.state.doneThrough, ...b.written.counts },
          'backfill batch committed',
        );
      },
    });
    progress.done();
    let state = last.state;
    // Resumed, and the rest of the range held nothing: mark it done without data.
    if (state.status !== 'done' && start === 'resume' && last.snapshot) {
      state = doneState(state, new Date());
      this.report.tableVersion = await this.commitState(last.snapshot, state);
    }
    this.finish('succeeded', state);
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
    const result = await this.timer.time('commit', () =>
      this.scope.table.commit(
        {
          actions: backfillActions(state),
          operation: 'SET TRANSACTION',
          operationParameters: { job: this.job.name, backfill: `${state.from}..${state.to}`, batch: state.batch, status: state.status },
          operationMetrics: { numFiles: '0', numOutputRows: '0' },
          read: { readVersion: snapshot.version, partitions: [], files: [], appIds: [backfillAppId(this.job.name)] },
          isBlindAppend: true,
        },
        this.ctx.signal ? { signal: this.ctx.signal } : {},
      ),
    );
    this.report.commits += 1;
    return result.version;
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

  private finish(status: BackfillStatus, state: BackfillState | null): void {
    this.report.status = status;
    if (status !== 'dry-run') this.report.doneThrough = state?.doneThrough ?? null;
  }
}

/** A report with every counter at zero (range null: the range itself was refused). */
export function emptyBackfillReport(job: string, range: BackfillRange | null): BackfillReport {
  return {
    job,
    command: 'backfill',
    status: 'succeeded',
    ...(range ? describeRange(range) : { from: '', to: '' }),
    resumedFrom: null,
    doneThrough: null,
    partitionsListed: 0,
    filesPlanned: 0,
    bytesLoaded: 0,
    ...noLoadCounts(),
    commits: 0,
    tableVersion: null,
    watermark: null,
    skippedByReason: {},
    durationMs: 0,
    phases: new PhaseTimer().timings(),
  };
}
