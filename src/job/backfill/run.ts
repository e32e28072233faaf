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
 * - Shards (`--shard K/N`, ./shard.ts): each loads its own slice of the range under its own state,
 *   so N workers share one backfill; ./start.ts decides how each starts, ./open-split.ts opens a
 *   new split, and `--shard all/N` (./split.ts) shows or restarts every shard at once.
 * - Append mode: every file of the range may be one the table holds already; its earlier rows are
 *   replaced (an unchanged file appends nothing), so a backfill never loads a file twice, and the
 *   run that later reaches the range knows it (../../engine/merge/source-files.ts).
 */
import type { JobConfig } from '../../config/schema.js';
import type { Snapshot } from '../../delta/snapshot.js';
import { ConfigError } from '../../errors.js';
import { startProgress, type Progress } from '../../log/progress.js';
import { acceptedBefore, type ConfigChange } from '../config-change.js';
import type { RunContext } from '../context.js';
import { PhaseTimer, type PhaseTimings } from '../phases.js';
import { quarantinedByOthers as quarantinedByOthersOf } from '../quarantine-list.js';
import { preflightJob } from '../preflight.js';
import { RunLoop, type StateDomain } from '../run-loop.js';
import {
  noLoadCounts,
  reportSkipped,
  timedOutcome,
  type JobOutcome,
  type LoadCounts,
  type ReportedError,
  type SkippedFile,
} from '../report.js';
import { withReportedScope, type JobScope } from '../scope.js';
import { jobLedgers, jobTombstones, readJobState } from '../state.js';
import { rebasedOnSource } from '../source-moved.js';
import { orderTimes, recordInLedger } from '../ledger.js';
import { describeWatermark } from '../watermark.js';
import { stateCommitRequest, type StateOwner } from '../write-batch.js';
import type { ChecksumCounts, RequestCounts } from '../../storage/storage.js';
import { describeSlice, openedStates, openSplitRequest, sliceOf } from './open-split.js';
import {
  doneState,
  listBackfill,
  startState,
  stateAfter,
  withoutUnplaced,
  type BackfillPlan,
} from './plan.js';
import { describeRange, parseBackfillRange, type BackfillRange } from './range.js';
import {
  describeShard,
  shardSlice,
  WHOLE_RANGE,
  type Shard,
  type ShardSelection,
} from './shard.js';
import { planSplit, type ShardPlan } from './split.js';
import { decideStart, generationOf } from './start.js';
import {
  backfillActions,
  backfillAppId,
  backfillTombstoneFolder,
  backfillTombstones,
  readBackfillStates,
  type BackfillState,
} from './state.js';

/** What to backfill. */
export interface BackfillOptions {
  /** First partition (or timestamp) of the range, included. */
  from: string;
  /** Last partition (or timestamp) of the range, included. */
  to: string;
  /** The shard to run (`--shard K/N`), or every shard (`--shard all/N`: dry-run or restart only); default the whole range. */
  shard?: ShardSelection;
  /** Consecutive whole partitions per commit (default 1: one commit per partition). */
  partitionsPerCommit?: number;
  /** Start the shard (or the range) over, also when done; abandons an unfinished backfill of another range. */
  restart?: boolean;
  /** List and plan only. */
  dryRun?: boolean;
}

/** succeeded: the range (or shard) is now done; already-done: it was, nothing to do; reset: every shard starts over. */
export type BackfillStatus = 'succeeded' | 'already-done' | 'dry-run' | 'reset' | 'failed';

/** What a backfill reports (one JSON object per job with --json). */
export interface BackfillReport extends LoadCounts {
  job: string;
  command: 'backfill';
  status: BackfillStatus;
  /** The range, normalised (partition ids or ISO timestamps). */
  from: string;
  to: string;
  /** The shard this command ran (`K/N`); absent when the range is not split. */
  shard?: string;
  /** The shard's slice of the range (null: the split left it nothing); absent when not split. */
  part?: { from: string; to: string } | null;
  /** With `--shard all/N --dry-run`: what each shard would load. */
  split?: ShardPlan[];
  /** The cursor an interrupted backfill resumed from; null when it started at `from`. */
  resumedFrom: string | null;
  /** The committed cursor after this invocation (the range end once done). */
  doneThrough: string | null;
  partitionsListed: number;
  filesPlanned: number;
  bytesLoaded: number;
  commits: number;
  /** Commits retried at a later version: another writer won the race but touched nothing this backfill read. */
  commitRetries: number;
  /** Races lost to a conflicting writer, after which the backfill planned the rest again. */
  replans: number;
  tableVersion: number | null;
  /** The job's own watermark: a backfill leaves it where it was. */
  watermark: string | null;
  skippedByReason: Record<string, number>;
  /** Files of the range no commit recorded, with the reason (an empty CSV before the table exists). */
  skipped?: SkippedFile[];
  /** Files set aside by `onBadFile: quarantine`, with the reason (recorded in the backfill state). */
  quarantined?: Array<{ key: string; reason: string }>;
  /** What the backfill did about a changed key or orderBy: remembered deletes re-keyed, or dropped (`--accept-config-change`); absent: nothing. */
  configChanges?: ConfigChange[];
  /** With dry-run: the files that would load, in order. */
  plannedFiles?: string[];
  durationMs: number;
  /** Milliseconds per phase, summed over the backfill's batches. */
  phases: PhaseTimings;
  /** S3 requests the backfill sent, by kind (absent when source and target are local). */
  requests?: RequestCounts;
  /** Whole-object reads and uploads whose bytes were checked, by checksum kind (absent when both are local). */
  checksums?: ChecksumCounts;
  error?: ReportedError;
}

/**
 * Backfill `job` over a range. Never throws: a refused range or a failure is a failed outcome
 * whose report says what was committed before it.
 */
export async function runBackfill(
  job: JobConfig,
  ctx: RunContext,
  opts: BackfillOptions,
): Promise<JobOutcome<BackfillReport>> {
  const timer = new PhaseTimer();
  let report: BackfillReport | null = null;
  const refused = (): BackfillReport => ({
    ...emptyBackfillReport(job.name, null),
    from: opts.from,
    to: opts.to,
  });
  const progress = (): BackfillReport => ({ ...(report ?? refused()), phases: timer.timings() });
  return timedOutcome(progress, async () => {
    if (job.target.mode === 'replace') {
      // Each delivery replaces the table: loading a range of old ones would end on an old extract.
      throw new ConfigError(
        `[backfill] job ${job.name} has target.mode replace: each delivery replaces the whole table, so a backfill would leave an old extract as the table; run the job instead (it loads the newest delivery), or reset --to a partition to load the newest after it again`,
        { field: 'target.mode', job: job.name },
      );
    }
    const range = parseBackfillRange(job, opts.from, opts.to);
    const selection = opts.shard ?? { kind: 'one', shard: WHOLE_RANGE };
    report = emptyBackfillReport(job.name, range, selection);
    if (selection.kind === 'all' && !opts.dryRun && !opts.restart) {
      throw new ConfigError(
        `[backfill] --shard all/${selection.count} shows (--dry-run) or restarts (--restart) every shard; to load, run each shard with --shard K/${selection.count}`,
        { field: 'shard', job: job.name },
      );
    }
    const started = report;
    const shard = selection.kind === 'one' ? selection.shard : WHOLE_RANGE;
    return withReportedScope(job, ctx, `${job.name}-backfill`, started, (scope) =>
      new BackfillRun(
        new RunLoop(scope, started, timer, backfillDomain(job.name, shard)),
        shard,
        range,
        opts,
      ).execute(selection),
    );
  });
}

class BackfillRun {
  private readonly job: JobConfig;
  private readonly ctx: RunContext;
  private readonly scope: JobScope;
  private readonly report: BackfillReport;
  private readonly timer: PhaseTimer;
  /** False once the first plan is made: --restart and `resumedFrom` concern the first one only. */
  private firstPlan = true;

  constructor(
    private readonly loop: RunLoop<BackfillReport>,
    private readonly shard: Shard,
    private readonly range: BackfillRange,
    private readonly opts: BackfillOptions,
  ) {
    this.scope = loop.scope;
    this.report = loop.report;
    this.timer = loop.timer;
    this.job = loop.scope.job;
    this.ctx = loop.scope.ctx;
  }

  /** Plan and load, planning the rest of the range again after each lost commit race (./run-loop.ts). */
  async execute(selection: ShardSelection): Promise<BackfillReport> {
    // Source there and fitting the layout, target writable: before the first partition loads.
    await preflightJob(this.scope, { survey: true, probeTarget: !this.opts.dryRun });
    return this.loop.execute(() =>
      selection.kind === 'all' ? this.allShards(selection.count) : this.planAndLoad(),
    );
  }

  private async planAndLoad(): Promise<void> {
    const snapshot = await this.scope.table.snapshot();
    const states = readBackfillStates(snapshot, this.job.name);
    this.report.watermark = describeWatermark(readJobState(snapshot, this.job.name).discovery);
    this.report.tableVersion = snapshot?.version ?? null;
    // A changed key or orderBy is checked as a run checks it: refused (exit 2) while remembered
    // deletes (the job's, its backfills') no longer fit, unless --accept-config-change (this
    // backfill's MERGE then reads without them, and its own are dropped), and while the table
    // holds several rows per new key. The backfill reports what it did about the tombstones; the
    // other changes are the job's run's to report.
    await this.loop.checkSettingsOnce(snapshot, readJobState(snapshot, this.job.name), (c) =>
      c.field.endsWith('(tombstones)'),
    );
    const restart = (this.opts.restart ?? false) && this.report.commits === 0;
    const start = decideStart(this.job.name, states, this.range, this.shard, restart);
    if (start.kind === 'already-done') return this.finish('already-done', start.state);
    // A new split: every shard's state in one commit, then this shard resumes its own (not for a
    // table that does not exist yet: the first batch creates it, and the shard starts alone).
    if (start.kind === 'open' && snapshot && !this.opts.dryRun) {
      await this.openSplit(snapshot, states, this.shard.count, start.generation);
      return this.planAndLoad();
    }
    const own = states.get(backfillAppId(this.job.name, this.shard)) ?? null;
    const part = { shard: this.shard, slice: shardSlice(this.job, this.range, this.shard) };
    const initial =
      start.kind === 'resume'
        ? start.state
        : startState(this.job.name, this.range, own, new Date(), part, start.generation);
    const slice = sliceOf(initial, this.range);
    if (this.shard.count > 1) this.report.part = describeSlice(slice);
    if (this.firstPlan)
      this.report.resumedFrom = start.kind === 'resume' ? initial.doneThrough : null;
    this.firstPlan = false;

    const listed = await this.timer.time('list', () =>
      listBackfill(this.scope.source, this.job, slice, initial, this.listOptions()),
    );
    const plan = withoutUnplaced(listed, await this.unplaced(snapshot, listed));
    this.describePlan(plan);
    if (this.opts.dryRun) return this.finish('dry-run', initial);
    const progress = this.startProgress(plan);
    const quarantinedByOthers = quarantinedByOthersOf(
      snapshot,
      this.job.name,
      backfillAppId(this.job.name, this.shard),
    );
    // Stopped on failure too: a terminal bar left running keeps the process alive.
    const last = await this.loop
      .loadBatches<BackfillState>({
        owner: (planned) => this.owner(planned),
        snapshot,
        state: initial,
        // The table may hold any file of the range already (loaded by the job, or by an earlier backfill).
        batches: plan.batches.map((b) =>
          b.files.map((f) => ({ ...f, loadedBefore: true as const })),
        ),
        stateAfter: ({ before, index, loaded, rowsRead, quarantined }) =>
          stateAfter(
            before,
            plan.batches[index]!,
            { files: loaded, rowsRead, quarantined, quarantinedByOthers },
            { last: index === plan.batches.length - 1, now: new Date() },
          ),
        firstBatchNo: this.report.commits,
        // The job's files loaded before its source.uri was edited are held under their old names.
        formerSources: rebasedOnSource(readJobState(snapshot, this.job.name), this.job.source.uri)
          .formerSources,
        progressLabel: null,
        progress,
        logFields: (b, i) => ({
          ...(this.shard.count > 1 ? { shard: describeShard(this.shard) } : {}),
          partition: plan.batches[i]!.partition ?? undefined,
          files: b.files,
          version: b.written.version,
          doneThrough: b.written.state.doneThrough,
        }),
        onCommitted: (b) => {
          this.report.doneThrough = b.written.state.doneThrough;
        },
      })
      .finally(() => progress.done());
    // Files no commit recorded (no table yet, no rows: ../pipeline.ts).
    reportSkipped(this.report, last.waiting);
    let state = last.state;
    // Resumed (or opened), and the rest of the slice held nothing: mark it done without data. So
    // does a shard of a split that was never opened (no table then), or `status` would count it missing.
    const startedWithState =
      start.kind === 'resume' || (start.kind === 'fresh' && this.shard.count > 1);
    if (state.status !== 'done' && startedWithState && last.version !== null) {
      state = doneState(state, new Date());
      const committed =
        last.version === snapshot?.version
          ? snapshot
          : await this.scope.table.snapshot({ version: last.version });
      this.report.tableVersion = await this.commitState(committed!, state);
    }
    this.finish('succeeded', state);
  }

  /** `--shard all/N`: show what every shard would load (--dry-run), or start every shard over (--restart). */
  private async allShards(count: number): Promise<void> {
    const snapshot = await this.scope.table.snapshot();
    const states = readBackfillStates(snapshot, this.job.name);
    this.report.watermark = describeWatermark(readJobState(snapshot, this.job.name).discovery);
    this.report.tableVersion = snapshot?.version ?? null;
    if (this.opts.dryRun) {
      const split = await this.timer.time('list', () =>
        planSplit(this.scope.source, this.job, this.range, count, states, this.listOptions()),
      );
      this.report.split = split;
      this.report.filesPlanned = split.reduce((n, s) => n + s.files, 0);
      this.report.partitionsListed = split.reduce((n, s) => n + s.partitionsListed, 0);
      this.report.status = 'dry-run';
      return;
    }
    // A new generation: every shard starts over; one still loading loses its next commit and starts its slice again.
    if (snapshot)
      await this.openSplit(
        snapshot,
        states,
        count,
        Math.max(0, ...[...states.values()].map(generationOf)) + 1,
      );
    this.report.status = 'reset';
  }

  /** Commit fresh states for every shard of the split (see ./open-split.ts). */
  private async openSplit(
    snapshot: Snapshot,
    held: ReadonlyMap<string, BackfillState>,
    count: number,
    generation: number,
  ): Promise<void> {
    const states = openedStates(this.job, this.range, count, held, { now: new Date(), generation });
    const opener = count === this.shard.count && this.shard.count > 1 ? this.shard : undefined;
    const version = await this.loop.commitState(openSplitRequest(snapshot, states, opener));
    this.ctx.logger.info(
      {
        job: this.job.name,
        backfill: `${states[0]!.from}..${states[0]!.to}`,
        shards: count,
        version,
      },
      'backfill: opened a fresh state for every shard',
    );
  }

  private listOptions() {
    return {
      concurrency: Math.min(this.job.concurrency, 16),
      ...(this.opts.partitionsPerCommit
        ? { partitionsPerCommit: this.opts.partitionsPerCommit }
        : {}),
      ...(this.ctx.signal ? { signal: this.ctx.signal } : {}),
    };
  }

  /** The backfill (shard) as the owner of its state; it reads the job's and the other shards' tombstones too. */
  private owner(snapshot: Snapshot | null): StateOwner<BackfillState> {
    const job = this.job.name;
    const appId = backfillAppId(job, this.shard);
    return {
      appId,
      tombstoneFolder: backfillTombstoneFolder(job, this.shard),
      actions: (s) => backfillActions(s),
      parameters: (s) => backfillParameters(s),
      others: [...jobTombstones(snapshot, job), ...backfillTombstones(snapshot, job, appId)],
      configAccepted: acceptedBefore(readJobState(snapshot, job).configuredAs, this.job),
      // The ledgers place a reloaded file where its content first loaded; the backfill records its own.
      ledgers: jobLedgers(snapshot, this.job),
      prepare: async (scope, _before, state, loaded) => {
        const { ledger: _old, ...rest } = state;
        const ledger = await recordInLedger(scope, state.ledger, loaded, state.batch, null);
        return ledger ? { ...rest, ledger } : rest;
      },
    };
  }

  /**
   * Files of the plan whose listed content the ledgers hold at an unrecorded time (ledger files
   * written before tidemark kept it): a reload could not keep their place in the tie order, so the
   * backfill leaves them out (./plan.ts UNCHANGED_UNPLACED).
   */
  private async unplaced(snapshot: Snapshot | null, plan: BackfillPlan): Promise<Set<string>> {
    const files = plan.batches.flatMap((b) => b.files);
    const known = await orderTimes(this.scope, jobLedgers(snapshot, this.job), files);
    return new Set([...known].filter(([, at]) => at === null).map(([key]) => key));
  }

  /** Commit the backfill state alone (no data). */
  private async commitState(snapshot: Snapshot, state: BackfillState): Promise<number> {
    const request = stateCommitRequest(this.owner(snapshot), state, snapshot);
    return this.loop.commitState({
      ...request,
      operationParameters: { ...request.operationParameters, status: state.status },
    });
  }

  private startProgress(plan: BackfillPlan): Progress {
    const { from, to } = describeRange(this.range);
    const tty = this.ctx.tty ?? process.stderr.isTTY ?? false;
    const shard = this.shard.count > 1 ? ` shard ${describeShard(this.shard)}` : '';
    // Off a terminal: one structured line per commit.
    return startProgress({
      label: `${this.job.name}: backfill ${from}..${to}${shard}`,
      total: plan.files,
      logger: this.ctx.logger,
      tty,
      intervalMs: tty ? 100 : 0,
    });
  }

  private describePlan(plan: BackfillPlan): void {
    const r = this.report;
    r.partitionsListed = plan.partitionsListed.length;
    r.filesPlanned = plan.files;
    r.skippedByReason = {};
    for (const s of plan.skipped)
      r.skippedByReason[s.reason] = (r.skippedByReason[s.reason] ?? 0) + 1;
    if (plan.skippedFolders.length > 0) {
      this.ctx.logger.warn(
        { job: this.job.name, folders: plan.skippedFolders },
        'backfill: folders skipped, each with its reason (not matching the layout, an impossible date, or past the upper bound)',
      );
    }
    if (this.opts.dryRun) r.plannedFiles = plan.batches.flatMap((b) => b.files.map((f) => f.key));
  }

  private finish(status: BackfillStatus, state: BackfillState | null): void {
    this.report.status = status;
    if (status !== 'dry-run') this.report.doneThrough = state?.doneThrough ?? null;
  }
}

/** A backfill (shard) commits its own state (`tidemark.backfill.<job>…`), never the job's. */
function backfillDomain(job: string, shard: Shard): StateDomain {
  return {
    appId: backfillAppId(job, shard),
    subsystem: '[backfill]',
    giveUpHint: ' (run the same backfill again to resume)',
    replanMessage: 'backfill: another writer committed first; planning the rest of the range again',
    committedMessage: 'backfill batch committed',
  };
}

/** commitInfo.operationParameters of a backfill commit: the job, the range, the shard and the batch. */
function backfillParameters(s: BackfillState): Record<string, unknown> {
  return {
    job: s.job,
    backfill: `${s.from}..${s.to}`,
    ...(s.shard ? { shard: describeShard(s.shard) } : {}),
    batch: s.batch,
  };
}

/** A report with every counter at zero (range null: the range itself was refused). */
export function emptyBackfillReport(
  job: string,
  range: BackfillRange | null,
  selection?: ShardSelection,
): BackfillReport {
  const shard = selection?.kind === 'one' ? selection.shard : null;
  return {
    job,
    command: 'backfill',
    status: 'succeeded',
    ...(range ? describeRange(range) : { from: '', to: '' }),
    ...(shard && shard.count > 1 ? { shard: describeShard(shard) } : {}),
    ...(selection?.kind === 'all' ? { shard: `all/${selection.count}` } : {}),
    resumedFrom: null,
    doneThrough: null,
    partitionsListed: 0,
    filesPlanned: 0,
    bytesLoaded: 0,
    ...noLoadCounts(),
    commits: 0,
    commitRetries: 0,
    replans: 0,
    tableVersion: null,
    watermark: null,
    skippedByReason: {},
    durationMs: 0,
    phases: new PhaseTimer().timings(),
  };
}
