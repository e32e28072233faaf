/**
 * `tidemark reset --job NAME --to WATERMARK`: move a job's watermark (back or forward) in a commit
 * without data: only the job's txn and its state (domainMetadata), operation `SET TRANSACTION`.
 *
 * `--to W` means "W is the last partition (or instant) considered loaded", as if a run had just
 * loaded it. The next run then, as every run does:
 * - partition mode: loads every file of the partitions after W, and rescans the `lookback`
 *   partitions up to W for files it does not remember. The state keeps the files it still
 *   remembers in partitions up to W (they are not reloaded, unless overwritten since), and forgets
 *   everything after W. So `--to 2026-11-03` reloads 2026-11-04 onwards, plus whatever of
 *   2026-11-02..03 (lookback 2) it no longer remembers.
 * - modification-time mode: loads the files modified after W, and rechecks the settle window
 *   before W for files it does not remember; remembered files modified up to W are kept.
 *
 * In merge mode reloading is idempotent (unchanged rows are no-ops, older rows are skipped as stale),
 * so a rewind leaves the table as it was and then brings in whatever changed. In append mode the
 * run after a rewind looks the reloaded files up in the table through the job's ledger: their rows
 * are replaced by the files' current content, never appended twice. Still refused unless `force`:
 * a rewind reloads whole partitions, and rows of files gone from the source stay.
 *
 * A reset also accepts a changed key or orderBy: the remembered deletes (tombstones) that no
 * longer fit them are dropped (./tombstones/plan.ts).
 */
import type { JobConfig } from '../config/schema.js';
import type { DeltaTable } from '../delta/table.js';
import type { Snapshot } from '../delta/snapshot.js';
import { parsePartitionStart, parseTimestampStart } from '../discovery/config.js';
import { granularityOfId } from '../discovery/calendar.js';
import {
  Layout,
  overlapMs,
  PartitionClock,
  type DiscoveryState,
  type ModifiedState,
  type PartitionState,
} from '../discovery/index.js';
import { ConfigError, TidemarkError } from '../errors.js';
import type { RunContext } from './context.js';
import { preflightJob } from './preflight.js';
import { withReplans } from './replan.js';
import { timedOutcome, type JobOutcome, type ReportedError } from './report.js';
import { withJobScope } from './scope.js';
import { jobAppId, readJobState, stateActions, type JobState } from './state.js';
import { fittedTombstones } from './tombstones/plan.js';
import { describeWatermark } from './watermark.js';

/** What to reset to. */
export interface ResetOptions {
  /** The new watermark: a partition id of the layout's granularity, or a timestamp. */
  to: string;
  /** Allow rewinding an append-mode job (reloaded rows are appended again). */
  force?: boolean;
  /** Compute and report the new watermark; commit nothing. */
  dryRun?: boolean;
}

/** What a reset reports. */
export interface ResetReport {
  job: string;
  command: 'reset';
  status: 'reset' | 'dry-run' | 'failed';
  /** The watermark before (null: the job never loaded). */
  watermarkBefore: string | null;
  /** The watermark committed. */
  watermark: string;
  /** True when the new watermark is before the old one (the next run reloads). */
  rewound: boolean;
  /** Files the state still remembers as loaded (not reloaded unless changed). */
  filesRemembered: number;
  /** Tombstone files dropped because they no longer fit the job's key or orderBy (absent: none). */
  tombstoneFilesDropped?: number;
  tableVersion: number | null;
  durationMs: number;
  error?: ReportedError;
}

/** The discovery state after `reset --to`, and whether it moves the watermark back. */
export interface ResetPlan {
  state: PartitionState | ModifiedState;
  rewound: boolean;
}

/**
 * The discovery state that `--to text` sets for `job`, given the committed one (pure). Throws
 * ConfigError (field `to`) when `text` is not a watermark of the job's discovery mode and layout.
 */
export function planReset(job: JobConfig, prev: DiscoveryState | null, text: string): ResetPlan {
  const d = job.source.discover;
  if (d.by === 'partition') {
    const layout = Layout.parse(d.layout);
    const clock = new PartitionClock(d.timezone);
    const to = partitionWatermark(text, layout, clock);
    const old =
      prev?.mode === 'partition' && granularityOfId(prev.watermark) === layout.granularity
        ? prev
        : null;
    let rememberedFrom = clock.step(to, -d.lookback);
    // The old state lists in full from its rememberedFrom: rescanning below that would reload files it forgot.
    if (old && old.rememberedFrom <= to && old.rememberedFrom > rememberedFrom)
      rememberedFrom = old.rememberedFrom;
    const loaded = (old?.loaded ?? []).filter(
      (e) => e.partition >= rememberedFrom && e.partition <= to,
    );
    const state: PartitionState = {
      stateVersion: 1,
      mode: 'partition',
      watermark: to,
      rememberedFrom,
      loaded,
    };
    return { state, rewound: prev !== null && (old === null || to < old.watermark) };
  }
  if (d.by === 'notifications') {
    throw new ConfigError(
      `[reset] job ${job.name} discovers by notifications: its ledger, not a watermark, says which files are loaded, so there is nothing to reset to`,
      { field: 'source.discover.by', job: job.name },
    );
  }
  const to = flag(() => parseTimestampStart(text));
  const old = prev?.mode === 'modified' ? prev : null;
  const floor = to - overlapMs(d.settle);
  const loaded = (old?.loaded ?? []).filter((e) => e.lastModified > floor && e.lastModified <= to);
  const state: ModifiedState = {
    stateVersion: 1,
    mode: 'modified',
    watermark: to,
    rememberedAfter: floor,
    loaded,
  };
  return { state, rewound: prev !== null && (old === null || to < old.watermark) };
}

/** A partition id of exactly the layout's granularity that exists in the job's time zone. */
function partitionWatermark(text: string, layout: Layout, clock: PartitionClock): string {
  const id = flag(() => parsePartitionStart(text, layout.granularity));
  if (layout.granularity === 'hour' && !/[T ]\d{2}/.test(text)) {
    throw new ConfigError(
      `--to ${JSON.stringify(text)} names a day but layout '${layout.text}' has hour partitions; give the hour (e.g. ${id.slice(0, 10)}T23 counts the whole day as loaded)`,
      { field: 'to' },
    );
  }
  if (!clock.exists(id))
    throw new ConfigError(
      `--to ${JSON.stringify(text)}: partition ${id} does not exist in time zone ${clock.zone}`,
      { field: 'to' },
    );
  return id;
}

/** Run a discovery parser, re-labelling its error as one about `--to`. */
function flag<T>(parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    if (!(err instanceof TidemarkError)) throw err;
    throw new ConfigError(
      `--to: ${err.message.replace(/^\[discovery\] start /, '')}`,
      { field: 'to' },
      err,
    );
  }
}

/** Reset `job`'s watermark (see the module comment); a lost commit race re-reads the state and tries again. Never throws. */
export async function resetJob(
  job: JobConfig,
  ctx: RunContext,
  opts: ResetOptions,
): Promise<JobOutcome<ResetReport>> {
  const progress = (): ResetReport => ({
    job: job.name,
    command: 'reset',
    status: 'failed',
    watermarkBefore: null,
    watermark: opts.to,
    rewound: false,
    filesRemembered: 0,
    tableVersion: null,
    durationMs: 0,
  });
  return timedOutcome(progress, async () => {
    planReset(job, null, opts.to); // a bad --to is refused before any I/O
    return withJobScope(job, ctx, `${job.name}-reset`, async (scope) => {
      const { table } = scope;
      // The next run must find the source, and the reset's own commit must be writable.
      await preflightJob(scope, { survey: true, probeTarget: !opts.dryRun });
      const replans = {
        ctx,
        job: job.name,
        uri: table.uri,
        commits: () => 0, // a reset is one commit; losses to a run of the job (it progressed) do not count
        ownAppId: jobAppId(job.name),
        subsystem: '[reset]',
        replanMessage: 'reset: a run committed first; reading its state and resetting again',
      };
      return {
        ...(await withReplans(replans, () => resetOnce(job, table, opts, ctx.signal))),
        durationMs: 0,
      };
    });
  });
}

async function resetOnce(
  job: JobConfig,
  table: DeltaTable,
  opts: ResetOptions,
  signal?: AbortSignal,
): Promise<Omit<ResetReport, 'durationMs'>> {
  const snapshot = await table.snapshot();
  if (!snapshot) {
    throw new ConfigError(
      `[reset] job ${job.name}: table ${table.uri} does not exist yet, so there is no watermark to reset (set source.discover.start for the first run)`,
      {
        field: 'job',
        uri: table.uri,
      },
    );
  }
  const prev = readJobState(snapshot, job.name);
  const before = prev.discovery;
  const plan = planReset(job, before, opts.to);
  const report = {
    job: job.name,
    command: 'reset' as const,
    watermarkBefore: describeWatermark(before),
    watermark: describeWatermark(plan.state)!,
    rewound: plan.rewound,
    filesRemembered: plan.state.loaded.length,
  };
  refuseFuture(job, plan.state, opts);
  // Refused in a dry run too (as a future --to is): the dry run says what the reset would do.
  if (job.target.mode === 'append' && plan.rewound && !opts.force) {
    throw new ConfigError(
      `[reset] job ${job.name} appends (target.mode: append): moving its watermark back from ${report.watermarkBefore} to ${report.watermark} ` +
        'makes the next run reload the files after it (their rows replaced by the current content, not appended twice; rows of files gone from the source stay); pass --force to do it',
      { field: 'force', job: job.name },
    );
  }
  // A reset accepts the config as it is: remembered deletes that no longer fit its key or orderBy are dropped.
  const tombstones =
    job.target.mode === 'merge'
      ? fittedTombstones(
          prev.tombstones,
          { key: job.target.key!, orderBy: job.target.orderBy! },
          Date.now(),
        )
      : prev.tombstones;
  const dropped = (prev.tombstones?.files.length ?? 0) - (tombstones?.files.length ?? 0);
  const withDropped = dropped > 0 ? { ...report, tombstoneFilesDropped: dropped } : report;
  if (opts.dryRun) return { ...withDropped, status: 'dry-run', tableVersion: snapshot.version };
  // The delivery applied is forgotten too (replace mode, snapshot sources, their as-of): the next run loads the newest one after the new watermark.
  const { delivery: _applied, snapshotAsOf: _asOf, ...kept } = prev;
  const next: JobState = {
    ...kept,
    batch: prev.batch + 1,
    discovery: plan.state,
    ...(tombstones ? { tombstones } : {}),
    ...ledgerAfter(prev, plan, prev.batch + 1),
  };
  const version = await commitReset(table, snapshot, next, report, signal);
  return { ...withDropped, status: 'reset', tableVersion: version };
}

/**
 * The job's ledger (./ledger.ts) after the reset: files that arrived after the new watermark load
 * again although it recorded them (a rewind reloads: `reset`). Moved forward, the files skipped
 * before the new window were left out on purpose: it no longer names those behind it (`since`).
 */
function ledgerAfter(prev: JobState, plan: ResetPlan, batch: number): Pick<JobState, 'ledger'> {
  const ledger = prev.ledger;
  if (!ledger || plan.state.mode !== 'modified') return {};
  const reset = { batch, after: plan.state.watermark };
  if (ledger.since === undefined || plan.rewound) return { ledger: { ...ledger, reset } };
  const floor = plan.state.rememberedAfter ?? plan.state.watermark;
  return {
    ledger: {
      ...ledger,
      reset,
      since: ledger.since === null ? floor : Math.max(ledger.since, floor),
    },
  };
}

/**
 * A watermark after the current partition (or instant) makes every run find nothing new until
 * then, without a word: refused unless --force.
 */
function refuseFuture(
  job: JobConfig,
  state: PartitionState | ModifiedState,
  opts: ResetOptions,
  now = new Date(),
): void {
  if (opts.force) return;
  const d = job.source.discover;
  const current =
    state.mode === 'partition' && d.by === 'partition'
      ? new PartitionClock(d.timezone).partitionOf(now, Layout.parse(d.layout).granularity)
      : null;
  const future =
    state.mode === 'partition'
      ? current !== null && state.watermark > current
      : state.watermark > now.getTime();
  if (!future) return;
  throw new ConfigError(
    `[reset] job ${job.name}: --to ${opts.to} is in the future (now ${current ?? now.toISOString()}): every run would find nothing new until then; pass --force to do it anyway`,
    { field: 'to', job: job.name },
  );
}

/** The commit without data: the job's txn and state, read set = the job's appId (a concurrent run conflicts). */
async function commitReset(
  table: DeltaTable,
  snapshot: Snapshot,
  state: JobState,
  report: { watermarkBefore: string | null; watermark: string },
  signal?: AbortSignal,
): Promise<number> {
  const result = await table.commit(
    {
      actions: stateActions(state),
      operation: 'SET TRANSACTION',
      operationParameters: {
        job: state.job,
        reset: `${report.watermarkBefore ?? 'none'} → ${report.watermark}`,
        batch: state.batch,
      },
      operationMetrics: { numFiles: '0', numOutputRows: '0' },
      read: {
        readVersion: snapshot.version,
        partitions: [],
        files: [],
        appIds: [jobAppId(state.job)],
      },
      isBlindAppend: true,
    },
    signal ? { signal } : {},
  );
  return result.version;
}
