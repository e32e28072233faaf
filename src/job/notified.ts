/**
 * The job's side of notification discovery (../discovery/notifications/): the messages a run holds.
 *
 *   open:       receive every message on the queue (up to MAX_MESSAGES_PER_RUN), hidden for
 *               `visibilityTimeout`, and extend that every third of it while the run holds them
 *   expect:     after the plan is checked against the ledger, each message waits for the keys it
 *               names that the plan loads; a message waiting for none is deleted at once (its files
 *               are committed already, or need no load)
 *   committed:  after each commit, the messages whose keys are now all committed are deleted
 *   close:      the rest are handed back (visible at once) for the next run
 *
 * A message is never deleted before the commit that loaded its files. A run killed between a
 * commit and the deletion leaves the messages hidden until their timeout; redelivered, they name
 * files the ledger holds with the same ETag, so nothing is loaded twice, and they are deleted then.
 *
 * Visibility: the timeout set at receipt is `visibilityTimeout` (5 minutes by default: how soon a
 * killed run's messages come back), and a heartbeat extends it while the run holds them, so a long
 * run is not redelivered its own messages mid-run. SQS caps a message's hiding at 12 hours from its
 * receipt; a run that holds one longer sees it again in its next run, where the ledger finds it loaded.
 */
import {
  withLedgerAnswers,
  type DiscoveryPlan,
  type HeldMessage,
  type NotificationIntake,
} from '../discovery/index.js';
import { resolveDiscovery, type NotificationSettings } from '../discovery/config.js';
import { sourceStorageConfig } from '../config/storage.js';
import { queueRegion, SqsQueue, type ReceivedMessage } from '../storage/sqs.js';
import { unloaded, type LedgerState } from './ledger.js';
import { discoveryConfigOf } from './open.js';
import type { NotificationReport } from './report.js';
import type { JobScope } from './scope.js';

/**
 * Messages one run receives at most: SQS allows 120,000 in flight per standard queue; the rest
 * wait for the next run (the run report says the queue may hold more).
 */
export const MAX_MESSAGES_PER_RUN = 100_000;

/** The messages one run holds. */
export class Inbox {
  readonly settings: NotificationSettings;
  private readonly queue: SqsQueue;
  private readonly held = new Map<string, ReceivedMessage>();
  /** Message id -> keys it still waits for. */
  private waiting = new Map<string, Set<string>>();
  private deleted = 0;
  private intake: NotificationIntake | null = null;
  private heartbeat: NodeJS.Timeout | null = null;
  private pending: Promise<void> = Promise.resolve();

  private constructor(
    private readonly scope: JobScope,
    settings: NotificationSettings,
  ) {
    this.settings = settings;
    const region =
      settings.region ??
      queueRegion(settings.queueUrl) ??
      sourceStorageConfig(scope.ctx.storage, scope.job).region ??
      'us-east-1';
    this.queue = new SqsQueue({ url: settings.queueUrl, region });
  }

  /** Receive the queue's messages for a run of the job (a notification job). */
  static async open(scope: JobScope): Promise<Inbox> {
    const settings = resolveDiscovery(discoveryConfigOf(scope.job));
    if (settings.mode !== 'notifications')
      throw new Error(`[job] job ${scope.job.name} does not discover by notifications`);
    const inbox = new Inbox(scope, settings);
    inbox.startHeartbeat();
    try {
      await inbox.queue.receiveAll(
        MAX_MESSAGES_PER_RUN,
        settings.visibilityTimeoutS,
        (m) => void inbox.held.set(m.id, m),
        scope.ctx.signal,
      );
    } catch (err) {
      await inbox.close();
      throw err;
    }
    scope.ctx.logger.debug(
      { job: scope.job.name, queue: settings.queueUrl, messages: inbox.held.size },
      'messages received',
    );
    return inbox;
  }

  /** The messages held, for discovery. */
  get messages(): ReceivedMessage[] {
    return [...this.held.values()];
  }

  /**
   * The plan checked against the job's ledger (the files it loaded, by key and ETag): files it
   * holds with the same ETag are loaded already; one of another ETag is an overwrite.
   */
  async checkPlan(plan: DiscoveryPlan, ledger: LedgerState | undefined): Promise<DiscoveryPlan> {
    const scope = this.scope;
    if (plan.files.length === 0) return plan;
    const notLoaded = new Map<string, string | null>(plan.files.map((f) => [f.key, null]));
    if (ledger && ledger.files.length > 0) {
      notLoaded.clear();
      for (const { key, loaded } of await unloaded(scope, ledger, plan.files, true))
        notLoaded.set(key, loaded);
    }
    return withLedgerAnswers(plan, notLoaded);
  }

  /**
   * Which messages wait for which keys of `plan` (checked against the ledger); the ones waiting for
   * none are deleted now. Called again after a re-plan: the winner's commits may have loaded some.
   */
  async expect(plan: DiscoveryPlan): Promise<void> {
    const intake = plan.notifications;
    if (!intake) throw new Error('[job] a notification plan without its intake');
    this.intake = intake;
    const loads = new Set(plan.files.map((f) => f.key));
    this.waiting = new Map(
      intake.messages
        .filter((m) => this.held.has(m.id))
        .map((m: HeldMessage) => [m.id, new Set(m.keys.filter((k) => loads.has(k)))]),
    );
    await this.deleteDone();
  }

  /** The keys of a commit: messages now waiting for nothing are deleted (after the commit, never before). */
  committed(keys: readonly string[]): void {
    for (const keysLeft of this.waiting.values()) for (const k of keys) keysLeft.delete(k);
    // Deletions run in order, behind the commits; `close` waits for them.
    this.pending = this.pending.then(() => this.deleteDone());
  }

  /** Stop extending, wait for deletions, and hand back the messages not deleted (visible at once). */
  async close(): Promise<void> {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
    try {
      await this.pending;
      const left = [...this.held.values()].map((m) => m.receipt);
      if (left.length > 0)
        await this.queue
          .changeVisibility(left, 0)
          .catch((err: unknown) =>
            this.warn(
              'could not hand back messages; they come back after their visibility timeout',
              err,
            ),
          );
    } finally {
      this.queue.close();
    }
  }

  report(): NotificationReport {
    const c = this.intake?.counts;
    return {
      queue: this.settings.queueUrl,
      received: this.intake?.counts.messages ?? this.held.size,
      deleted: this.deleted,
      events: c?.events ?? 0,
      outside: c?.outside ?? 0,
      notCreated: c?.notCreated ?? 0,
      gone: c?.gone ?? 0,
      unreadable: this.intake?.unreadable ?? [],
      reconciled: this.intake?.reconciled ?? false,
      moreWaiting: (this.intake?.counts.messages ?? this.held.size) >= MAX_MESSAGES_PER_RUN,
      requests: { ...this.queue.requests },
    };
  }

  /** Delete the held messages that wait for nothing (a refused deletion: the message comes back, found loaded). */
  private async deleteDone(): Promise<void> {
    if (this.scope.ctx.dryRun) return;
    const done = [...this.waiting.entries()]
      .filter(([id, keys]) => keys.size === 0 && this.held.has(id))
      .map(([id]) => id);
    if (done.length === 0) return;
    const receipts = new Map(done.map((id) => [this.held.get(id)!.receipt, id]));
    const failed = new Set(await this.queue.delete([...receipts.keys()]));
    for (const [receipt, id] of receipts) {
      if (failed.has(receipt)) continue;
      this.held.delete(id);
      this.waiting.delete(id);
      this.deleted += 1;
    }
    if (failed.size > 0)
      this.scope.ctx.logger.warn(
        { job: this.scope.job.name, messages: failed.size },
        'SQS refused to delete messages; they come back and are found loaded',
      );
  }

  private startHeartbeat(): void {
    const everyMs = Math.max(500, (this.settings.visibilityTimeoutS * 1000) / 3);
    let busy = false;
    this.heartbeat = setInterval(() => {
      if (busy || this.held.size === 0) return;
      busy = true;
      const receipts = [...this.held.values()].map((m) => m.receipt);
      this.queue
        .changeVisibility(receipts, this.settings.visibilityTimeoutS)
        .then((failed) => {
          if (failed.length > 0)
            this.scope.ctx.logger.warn(
              { job: this.scope.job.name, messages: failed.length },
              'SQS refused to extend the visibility of messages (12 hours since receipt?); they may come back and are found loaded',
            );
        })
        .catch((err: unknown) =>
          this.warn('could not extend the visibility of the messages held', err),
        )
        .finally(() => (busy = false));
    }, everyMs);
    this.heartbeat.unref();
  }

  private warn(message: string, err: unknown): void {
    this.scope.ctx.logger.warn(
      { job: this.scope.job.name, queue: this.settings.queueUrl, err: (err as Error).message },
      message,
    );
  }
}
