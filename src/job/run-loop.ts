/**
 * The run loop `run` and `backfill` share: a backfill is a run over a range with its own state
 * domain. The command plans (discovery, or the range) and computes the state each batch commits;
 * the loop does the rest, alike for both:
 *
 *   plan and load, planning again after each lost commit race (./replan.ts)
 *   the table's settings and config changes, checked once (not again after a re-plan)
 *   the batches (./pipeline.ts), with the job's bad-file policy (./quarantine.ts), each commit
 *   counted in the report and logged in one line
 *   a commit of the state alone (no data), counted the same way
 */
import type { Snapshot } from '../delta/snapshot.js';
import type { CommitRequest } from '../delta/transaction.js';
import { findConfigChanges, logConfigChanges, type ConfigChange } from './config-change.js';
import type { PhaseTimer, PhaseTimings } from './phases.js';
import {
  loadBatches,
  type BatchLoop,
  type CommittedReport,
  type LoadedBatches,
} from './pipeline.js';
import type { CommittedBatch } from './batch.js';
import { badFilePolicy } from './quarantine.js';
import { withReplans } from './replan.js';
import { writeCounts } from './report.js';
import type { JobScope } from './scope.js';
import { backfillTombstones } from './backfill/state.js';
import type { JobState } from './state.js';
import { checkTableSettings } from './table-settings.js';
import type { OwnedState } from './write-batch.js';

/** The state domain a command commits under, and how it speaks of it. */
export interface StateDomain {
  /** The txn appId / domain of its state (`tidemark.job.<name>`, `tidemark.backfill.<job>`…). */
  appId: string;
  /** `[job]` or `[backfill]`, in the message of a run that gives up. */
  subsystem: string;
  /** Logged at each re-plan. */
  replanMessage: string;
  /** Appended to the give-up message. */
  giveUpHint?: string;
  /** The message of each batch commit's log line. */
  committedMessage: string;
}

/** What the loop keeps in a command's report: its counts, commits, phases and config changes. */
export interface LoopReport extends CommittedReport {
  commits: number;
  phases: PhaseTimings;
  configChanges?: ConfigChange[];
}

/** The batches of one plan, as the command describes them; the loop adds its scope, timer, report and policy. */
export type PlannedBatches<S extends OwnedState> = Omit<
  BatchLoop<S>,
  'scope' | 'timer' | 'report' | 'badFiles' | 'onCommitted'
> & {
  /** The command's own fields of a batch's commit log line (the job, write counts are the loop's). */
  logFields(batch: CommittedBatch<S>, index: number): Record<string, unknown>;
  /** Called right after each commit, its report and its log line (BatchLoop.onCommitted). */
  onCommitted?(batch: CommittedBatch<S>, index: number): void;
};

export class RunLoop<R extends LoopReport> {
  /** The table's settings are checked (and warned about) once, not again after each re-plan. */
  private settingsChecked = false;

  constructor(
    readonly scope: JobScope,
    readonly report: R,
    readonly timer: PhaseTimer,
    private readonly domain: StateDomain,
  ) {}

  /** Run `planAndLoad`, planning again whenever another writer won a commit race (./replan.ts). */
  async execute(planAndLoad: () => Promise<void>): Promise<R> {
    const { scope, domain } = this;
    await withReplans(
      {
        ctx: scope.ctx,
        job: scope.job.name,
        uri: scope.table.uri,
        commits: () => this.report.commits,
        ownAppId: domain.appId,
        subsystem: domain.subsystem,
        ...(domain.giveUpHint !== undefined ? { giveUpHint: domain.giveUpHint } : {}),
        replanMessage: domain.replanMessage,
        onReplan: () => void (scope.contention.replans += 1),
      },
      planAndLoad,
    );
    // The scope adds its S3 requests and contention to this same report as it closes.
    this.report.phases = this.timer.timings();
    return this.report;
  }

  /**
   * Once per command: the table's settings (./table-settings.ts), and what changed in the config
   * since `state` was committed (./config-change.ts): refused (exit 2) where loading on would be
   * wrong; the changes `reported` keeps are logged and reported.
   */
  async checkSettingsOnce(
    snapshot: Snapshot | null,
    state: JobState,
    reported: (change: ConfigChange) => boolean,
  ): Promise<void> {
    if (this.settingsChecked) return;
    const { scope } = this;
    const { job, ctx } = scope;
    await checkTableSettings(scope, snapshot);
    const found = await findConfigChanges(
      job,
      state,
      snapshot,
      { session: scope.session, storage: scope.table.storage, spool: scope.spool },
      {
        tombstones: [
          { folder: job.name, state: state.tombstones },
          ...backfillTombstones(snapshot, job.name),
        ],
        accept: ctx.acceptConfigChange === true,
      },
    );
    if (found.refusals[0]) throw found.refusals[0];
    const changes = found.changes.filter(reported);
    logConfigChanges(ctx.logger, job.name, changes);
    if (changes.length > 0) this.report.configChanges = changes;
    this.settingsChecked = true;
  }

  /** Load and commit the planned batches (./pipeline.ts); each commit is counted and logged. */
  loadBatches<S extends OwnedState>(planned: PlannedBatches<S>): Promise<LoadedBatches<S>> {
    const { scope } = this;
    const { logFields, onCommitted, ...loop } = planned;
    return loadBatches<S>({
      ...loop,
      scope,
      timer: this.timer,
      report: this.report,
      badFiles: badFilePolicy(scope.job, scope.source.uri, scope.ctx.logger),
      onCommitted: (batch, index) => {
        scope.ctx.logger.info(
          {
            job: scope.job.name,
            ...logFields(batch, index),
            ...writeCounts(batch.written.summary),
          },
          this.domain.committedMessage,
        );
        onCommitted?.(batch, index);
      },
    });
  }

  /** Commit a state alone (no data: a watermark passed, a split opened, a range done); the version. */
  async commitState(request: CommitRequest): Promise<number> {
    const { scope } = this;
    const result = await this.timer.time('commit', () =>
      scope.table.commit(request, {
        onRetry: () => void (scope.contention.commitRetries += 1),
        ...(scope.ctx.signal ? { signal: scope.ctx.signal } : {}),
      }),
    );
    this.report.commits += 1;
    this.report.tableVersion = result.version;
    return result.version;
  }
}
