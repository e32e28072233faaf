/**
 * One run of one job (`tidemark run`):
 *
 *   pre-flight (./preflight.ts: source exists, target writable)
 *   ──► snapshot + job state ──► discover (nothing found: is the source there, does the layout fit?)
 *   ──► batches (maxFilesPerBatch / maxBytesPerBatch)
 *   ──► the load pipeline (./pipeline.ts): per batch fetch, load, dedupe, MERGE / append, and
 *       data + txn + job state in ONE Delta commit (the commit point)
 *
 * A crash anywhere leaves the table at the last committed batch, whose state says exactly
 * which files are in it, so a rerun loads the rest once. Losing a commit race to another run
 * of the same job means re-reading the winner's state and planning again.
 */
import type { JobConfig } from '../config/schema.js';
import type { Snapshot } from '../delta/snapshot.js';
import {
  discover,
  nextStateFor,
  notificationStateAfter,
  withKnownFiles,
  withPassedOver,
  type DiscoveredFile,
  type DiscoveryPlan,
  type NotificationState,
} from '../discovery/index.js';
import { backfilledBy, backfillJobs } from './backfill/state.js';
import { PlanBacklog, reportBacklog, type BacklogState } from './backlog.js';
import { configuredAs } from './config-change.js';
import { layoutRebaseKeys, rebasedOnLayout, rebasedOnSource } from './source-moved.js';
import { splitBatches } from './batches.js';
import type { RunContext } from './context.js';
import { discoveryConfigOf } from './open.js';
import { PhaseTimer, type Phase } from './phases.js';
import { checkPlannedSource, preflightJob } from './preflight.js';
import { withQuarantined, type QuarantinedFile } from './quarantine.js';
import { quarantinedByOthers, quarantinedFiles, withCleared } from './quarantine-list.js';
import { RunLoop, type StateDomain } from './run-loop.js';
import {
  noLoadCounts,
  reportSkipped,
  timedOutcome,
  type JobOutcome,
  type RunReport,
} from './report.js';
import { withReportedScope, type JobScope } from './scope.js';
import { keepsLedger, lookUpLedger, passedOver } from './ledger.js';
import { Inbox } from './notified.js';
import { lateFiles } from './late-files.js';
import { loadsDeliveries, newestDelivery, SUPERSEDED } from './deliveries.js';
import { settleIdentity } from './renamed.js';
import {
  jobAppId,
  jobOwner,
  readJobState,
  type JobState,
  type WaitingPartitionState,
} from './state.js';
import { reportWaiting, sameWaiting, waitingOf } from './waiting.js';
import { stateCommitRequest } from './write-batch.js';
import { describeWatermark } from './watermark.js';

/** Run `job` once. Never throws: a failure is a failed outcome whose report says what was committed. */
export async function runJob(job: JobConfig, ctx: RunContext): Promise<JobOutcome<RunReport>> {
  const timer = ctx.progress
    ? new AnnouncingTimer((phase) => ctx.progress?.phase(phase))
    : new PhaseTimer();
  const report = emptyReport(job.name);
  return timedOutcome(
    () => ({ ...report, phases: timer.timings() }),
    () =>
      withReportedScope(job, ctx, job.name, report, (scope) =>
        new JobRun(new RunLoop(scope, report, timer, runDomain(job.name))).execute(),
      ),
  );
}

class JobRun {
  private readonly job: JobConfig;
  private readonly ctx: RunContext;
  private readonly scope: JobScope;
  private readonly report: RunReport;
  private readonly timer: PhaseTimer;
  /** Notification discovery: the messages this run holds, across re-plans (./notified.ts). */
  private inbox: Inbox | null = null;

  constructor(private readonly loop: RunLoop<RunReport>) {
    this.scope = loop.scope;
    this.report = loop.report;
    this.timer = loop.timer;
    this.job = loop.scope.job;
    this.ctx = loop.scope.ctx;
  }

  /** Plan and load, planning again whenever another writer won a commit race (./run-loop.ts). */
  async execute(): Promise<RunReport> {
    // The source exists and the target takes writes, before anything is listed or loaded.
    await preflightJob(this.scope, { survey: false, probeTarget: !this.ctx.dryRun });
    if (this.job.source.discover.by === 'notifications') this.inbox = await Inbox.open(this.scope);
    try {
      return await this.loop.execute(() => this.planAndLoad());
    } finally {
      if (this.inbox) {
        await this.inbox.close();
        this.report.notifications = this.inbox.report();
      }
    }
  }

  private async planAndLoad(): Promise<void> {
    let snapshot = await this.scope.table.snapshot();
    let state = readJobState(snapshot, this.job.name);
    // A job without state beside another of the same source: renamed, or new (./renamed.ts).
    const identity = await settleIdentity(
      this.scope,
      snapshot,
      {
        ...(this.ctx.adoptStateOf !== undefined ? { adoptStateOf: this.ctx.adoptStateOf } : {}),
        fresh: this.ctx.fresh ?? false,
      },
      this.ctx.dryRun ?? false,
    );
    if (identity) {
      state = identity.state;
      if (identity.adoptedStateOf !== undefined)
        this.report.adoptedStateOf = identity.adoptedStateOf;
      if (identity.version !== null) {
        this.report.commits += 1;
        snapshot = await this.scope.table.snapshot({ version: identity.version });
      }
    }
    // Known before anything can fail, so a failed run still reports where the table stands.
    this.report.tableVersion = snapshot?.version ?? null;
    this.report.watermark = describeWatermark(state.discovery);
    // Every change the config made since the state was committed is the run's to report.
    await this.loop.checkSettingsOnce(snapshot, state, () => true);
    // An edited source.uri: the remembered files, keyed relative to the source, carry over.
    state = rebasedOnSource(state, this.job.source.uri);
    const d = this.job.source.discover;
    if (d.by === 'partition') {
      // A HEAD per remembered file of the lookback, on the first run after a layout edit only.
      const stillThere = new Set<string>();
      for (const key of layoutRebaseKeys(state, d.layout))
        if ((await this.scope.source.head(key)) !== null) stillThere.add(key);
      state = rebasedOnLayout(state, this.job.source.uri, d.layout, stillThere);
    }
    const quarantined = quarantinedFiles(snapshot, this.job.name);
    const plan = await this.timer.time('list', async () =>
      this.withLedger(await this.discover(state, quarantined), state, snapshot, quarantined),
    );
    // "Nothing new" only when the source is there and the layout fits it.
    await checkPlannedSource(this.scope, plan);
    this.describePlan(plan, state);
    // Replace mode loads the newest delivery alone; older ones are superseded (./deliveries.ts).
    // Snapshot sources: the newest full extract, merged with its deletes, then the change files.
    const chosen = loadsDeliveries(this.job)
      ? newestDelivery(this.job, plan.files, state.delivery)
      : null;
    if (chosen) {
      reportSkipped(
        this.report,
        chosen.superseded.map((f) => ({ key: f.key, reason: SUPERSEDED })),
      );
      if (this.ctx.dryRun)
        this.report.plannedFiles = [...chosen.delivery, ...chosen.changes].map((f) => f.key);
    }
    // Messages whose files need no load are deleted now (not in a dry run); the others wait for their commit.
    await this.inbox?.expect(plan);
    if (this.ctx.dryRun) {
      this.report.backlog = reportBacklog(
        new PlanBacklog([plan.files], plan.waiting).once(0),
        new Date(),
      );
      this.report.status = 'dry-run';
      return;
    }
    const batches = chosen
      ? [
          ...(chosen.delivery.length > 0 ? [chosen.delivery] : []),
          ...splitBatches(chosen.changes, this.job.maxFilesPerBatch, this.job.maxBytesPerBatch),
        ]
      : splitBatches(
          await this.markLoadedBefore(plan.files, snapshot, state),
          this.job.maxFilesPerBatch,
          this.job.maxBytesPerBatch,
        );
    // The delivery's batch of a snapshot source deletes the keys it lacks.
    const extractBatch =
      this.job.source.snapshot && chosen !== null && chosen.delivery.length > 0 ? 0 : -1;
    // The files a delivery supersedes are handled by its commit: the watermark passes them.
    const handled = (loaded: readonly DiscoveredFile[]) =>
      chosen ? [...loaded, ...chosen.superseded] : loaded;
    // What stays outstanding as batches commit: recorded in each commit's state, reported at the end.
    const backlog = new PlanBacklog(batches, plan.waiting);
    this.report.backlog = reportBacklog(backlog.once(0), new Date());
    const waiting = waitingOf(plan);
    const quarantinedByBackfill = quarantinedByOthers(
      snapshot,
      this.job.name,
      jobAppId(this.job.name),
    );
    if (batches.length > 0)
      this.ctx.logger.info(
        { job: this.job.name, files: plan.files.length, batches: batches.length },
        'loading',
      );
    const last = await this.loop.loadBatches<JobState>({
      owner: (planned) => jobOwner(this.job, planned),
      snapshot,
      state,
      batches,
      stateAfter: ({ before, index, loaded, rowsRead, quarantined }) =>
        withWaiting(
          {
            ...before,
            batch: before.batch + 1,
            discovery:
              plan.basis.mode === 'notifications'
                ? notificationStateAfter(
                    before.discovery as NotificationState | null,
                    plan.basis,
                    handled(loaded),
                    index === batches.length - 1,
                  )
                : nextStateFor(before.discovery, plan, handled(loaded)),
            ...(chosen?.mark ? { delivery: chosen.mark } : {}),
            lastRunAt: new Date().toISOString(),
            quarantined: withQuarantined(before.quarantined, quarantined, loaded),
            configuredAs: configuredAs(this.job),
            ...clearedAfter(before, quarantinedByBackfill, loaded, quarantined),
            totals: {
              filesLoaded: before.totals.filesLoaded + loaded.length - quarantined.length,
              rowsLoaded: before.totals.rowsLoaded + rowsRead,
            },
            backlog: backlog.once(index + 1),
          },
          waiting,
        ),
      firstBatchNo: this.report.batches,
      // An append looks a file's earlier rows up under the names it was loaded with.
      ...(state.formerSources ? { formerSources: state.formerSources } : {}),
      fullExtract: (index) => index === extractBatch,
      progressLabel: `${this.job.name}: fetch`,
      logFields: (b, index) => ({
        batch: index + 1,
        of: batches.length,
        files: b.files,
        bytes: b.bytes,
        rows: b.rowsRead,
        version: b.written.version,
      }),
      onCommitted: (b, index) => {
        const r = this.report;
        this.ctx.onFilesCommitted?.(b.keys);
        // A delivery's commit also handles the deliveries it supersedes (replace mode).
        this.inbox?.committed(
          chosen ? [...b.keys, ...chosen.superseded.map((f) => f.key)] : b.keys,
        );
        r.watermark = describeWatermark(b.written.state.discovery);
        r.batches += 1;
        r.backlog = reportBacklog(backlog.once(index + 1), new Date());
      },
    });
    this.report.tableVersion = last.version;
    // Nothing loaded, but which partitions wait for their marker changed: status should know.
    // Replace mode: only deliveries no newer than the one applied were found; the watermark passes them.
    const passed =
      this.report.commits === 0 &&
      snapshot !== null &&
      chosen !== null &&
      chosen.superseded.length > 0
        ? {
            snapshot,
            discovery: nextStateFor(state.discovery, plan, chosen.superseded),
            keys: chosen.superseded.map((f) => f.key),
          }
        : null;
    // Or (by notifications) a reconciling listing found nothing to load: it is done, and recorded so.
    const reconciled = plan.mode === 'notifications' && plan.nextState !== state.discovery;
    if (passed) {
      await this.commitWaiting(
        passed.snapshot,
        { ...state, discovery: passed.discovery },
        waiting,
        backlog.once(0),
      );
      this.inbox?.committed(passed.keys);
    } else if (
      this.report.commits === 0 &&
      snapshot &&
      (reconciled || !sameWaiting(state.waiting, waiting))
    ) {
      await this.commitWaiting(
        snapshot,
        reconciled ? { ...state, discovery: plan.nextState } : state,
        waiting,
        backlog.once(0),
      );
    }
    if (this.report.commits > 0)
      this.report.watermark = describeWatermark(passed ? passed.discovery : last.state.discovery);
    // Files no commit recorded (no table yet, no rows: ./pipeline.ts).
    reportSkipped(this.report, last.waiting);
    this.report.status = this.report.commits > 0 ? 'succeeded' : 'nothing-new';
  }

  /**
   * Append mode: files the table may hold already are looked up in it before they are appended
   * (their rows replaced, or nothing appended when unchanged): those a backfill of the job may have
   * loaded, and by partition those the job's ledger records although its state forgot them (a
   * `reset --to` back; by modification time the ledger check of the plan marks them).
   */
  private async markLoadedBefore(
    files: DiscoveredFile[],
    snapshot: Snapshot | null,
    state: JobState,
  ): Promise<DiscoveredFile[]> {
    if (this.job.target.mode !== 'append') return files;
    // A job without a state of its own yet (a first run, or a renamed job that adopted nothing)
    // looks up the files every job's backfills may have loaded too: _source_file holds the source's
    // URI, so another source's files are not found, and appended as new.
    const own = snapshot?.domains.has(jobAppId(this.job.name)) ?? false;
    const covered = backfilledBy(snapshot, own ? this.job.name : backfillJobs(snapshot));
    const fresh = files.filter((f) => !f.loadedBefore && !covered(f));
    const ledgered =
      this.job.source.discover.by === 'partition'
        ? await lookUpLedger(this.scope, state.ledger, fresh)
        : new Map<string, unknown>();
    return files.map((f) =>
      covered(f) || ledgered.has(f.key) ? { ...f, loadedBefore: true as const } : f,
    );
  }

  /** Commit the job's state alone with the partitions now waiting for their marker. */
  private async commitWaiting(
    snapshot: Snapshot,
    state: JobState,
    waiting: WaitingPartitionState[],
    backlog: BacklogState,
  ): Promise<void> {
    const next = withWaiting(
      {
        ...state,
        batch: state.batch + 1,
        lastRunAt: new Date().toISOString(),
        configuredAs: configuredAs(this.job),
        backlog,
      },
      waiting,
    );
    await this.loop.commitState(stateCommitRequest(jobOwner(this.job, snapshot), next, snapshot));
  }

  /**
   * The job's ledger (./ledger.ts) checks the plan: files it takes for new that the job loaded before
   * they left the settle window, and files behind the window the job never loaded (named: no window
   * takes them again). Those a backfill of the job covered, or quarantined, are not named.
   */
  private async withLedger(
    plan: DiscoveryPlan,
    state: JobState,
    snapshot: Snapshot | null,
    quarantined: readonly QuarantinedFile[],
  ): Promise<DiscoveryPlan> {
    const ledger = state.ledger;
    if (this.inbox) return this.inbox.checkPlan(plan, ledger);
    if (!keepsLedger(this.job) || !ledger) return plan;
    const taken = new Set(
      plan.decisions.filter((d) => d.action === 'load' && d.reason === 'new').map((d) => d.key),
    );
    const candidates = plan.files.filter((f) => taken.has(f.key));
    const known = withKnownFiles(plan, await lookUpLedger(this.scope, ledger, candidates));
    const since = ledger.since;
    if (since === undefined || known.behindWindow.length === 0) return known;
    const setAside = new Set(quarantined.map((q) => q.key));
    const covered = backfilledBy(snapshot, this.job.name);
    const behind = known.behindWindow.filter(
      (f) => (since === null || f.arrival.getTime() > since) && !setAside.has(f.key) && !covered(f),
    );
    return withPassedOver(known, await passedOver(this.scope, ledger, behind, known.onOverwrite));
  }

  /** Plan the run; quarantined files are looked at again wherever they lie (an overwrite reloads them). */
  private async discover(
    state: JobState,
    quarantined: readonly QuarantinedFile[],
  ): Promise<DiscoveryPlan> {
    this.ctx.logger.debug({ job: this.job.name, source: this.scope.source.uri }, 'discovering');
    // The ledger claims every file loaded after `since`: the files behind the window after it are checked.
    const since = keepsLedger(this.job) ? state.ledger?.since : undefined;
    return discover(this.scope.source, discoveryConfigOf(this.job), state.discovery, {
      concurrency: Math.min(this.job.concurrency, 16),
      revisit: quarantined,
      ...(since !== undefined && !this.inbox ? { behindWindowAfter: since } : {}),
      ...(this.inbox ? { notifications: { received: this.inbox.messages, now: Date.now() } } : {}),
      ...(this.ctx.signal ? { signal: this.ctx.signal } : {}),
    });
  }

  private describePlan(plan: DiscoveryPlan, state: JobState): void {
    const skipped = plan.decisions.filter((d) => d.action === 'skip');
    const byReason: Record<string, number> = {};
    for (const d of skipped) byReason[d.reason] = (byReason[d.reason] ?? 0) + 1;
    this.report.filesDiscovered = plan.files.length;
    this.report.partitionsListed = plan.partitionsListed;
    this.report.listRequests = plan.listRequests;
    this.report.skippedByReason = byReason;
    if (plan.waiting.length > 0) {
      const waiting = reportWaiting(this.job, waitingOf(plan), plan.serverTime);
      this.report.waitingForMarker = waiting;
      const overdue = waiting.filter((w) => w.overdue).map((w) => w.partition);
      if (overdue.length > 0)
        this.ctx.logger.warn(
          { job: this.job.name, partitions: overdue },
          'partitions waiting for their success marker longer than discover.markerTimeout; the watermark stays before them',
        );
    }
    const folders = plan.skippedFolders.map((f) => ({ key: f.prefix, reason: f.reason }));
    if (folders.length > 0) {
      this.ctx.logger.warn(
        { job: this.job.name, folders: plan.skippedFolders },
        'folders skipped, each with its reason (not matching the layout, an impossible date, or after the current partition)',
      );
    }
    const late = lateFiles(this.job, plan);
    if (late.warning !== null)
      this.ctx.logger.warn(
        {
          job: this.job.name,
          files: late.files.length,
          keys: late.files.slice(0, 100).map((f) => f.key),
          ...late.range,
        },
        late.warning,
      );
    if (this.ctx.dryRun) {
      this.report.plannedFiles = plan.files.map((f) => f.key);
      this.report.skipped = [...skipped.map((d) => ({ key: d.key, reason: d.reason })), ...folders];
      this.report.watermarkAfter = describeWatermark(plan.nextState);
    } else {
      // A run lists what it passed over that a person may need to act on: folders off the layout,
      // files that landed behind the lookback or settle window.
      // (skippedByReason counts the late files already, with every decision)
      if (late.files.length > 0)
        this.report.skipped = [...(this.report.skipped ?? []), ...late.files];
      reportSkipped(this.report, folders);
    }
  }
}

/** A run commits the job's own state (`tidemark.job.<name>`): the job's watermark, ledger, tombstones. */
function runDomain(job: string): StateDomain {
  return {
    appId: jobAppId(job),
    subsystem: '[job]',
    replanMessage: 'another writer committed first; re-reading its commit and planning again',
    committedMessage: 'batch committed',
  };
}

/** `state` with the partitions waiting for their marker now (the field left out when none waits). */
function withWaiting(state: JobState, waiting: WaitingPartitionState[]): JobState {
  const { waiting: _before, ...rest } = state;
  return waiting.length > 0 ? { ...rest, waiting } : rest;
}

/** The job state's `cleared` after a batch: the loaded files its backfill had quarantined (./quarantine-list.ts). */
function clearedAfter(
  before: JobState,
  byBackfill: readonly QuarantinedFile[],
  loaded: readonly DiscoveredFile[],
  setAside: readonly QuarantinedFile[],
): Pick<JobState, 'cleared'> {
  const keys = new Set(setAside.map((q) => q.key));
  const cleared = withCleared(
    before.cleared,
    byBackfill,
    loaded.filter((f) => !keys.has(f.key)),
    new Date(),
  );
  return cleared ? { cleared } : {};
}

/** A PhaseTimer that says when each phase starts (the progress bar shows it). */
class AnnouncingTimer extends PhaseTimer {
  constructor(private readonly onPhase: (phase: Phase) => void) {
    super();
  }

  override async time<T>(phase: Phase, fn: () => Promise<T>): Promise<T> {
    this.onPhase(phase);
    return super.time(phase, fn);
  }
}

/** A run report with every counter at zero. */
export function emptyReport(job: string): RunReport {
  return {
    job,
    status: 'nothing-new',
    filesDiscovered: 0,
    ...noLoadCounts(),
    tableVersion: null,
    watermark: null,
    durationMs: 0,
    phases: new PhaseTimer().timings(),
    commits: 0,
    commitRetries: 0,
    replans: 0,
    batches: 0,
    bytesLoaded: 0,
  };
}
