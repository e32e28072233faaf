/**
 * The one retry policy of the S3 driver. Every request (and every resumed GetObject body) goes
 * through it: transient faults are retried with full-jitter exponential backoff, permanent ones
 * are thrown at once, and all requests of a storage (and its children) draw on one retry budget,
 * so a dead store fails fast instead of every request waiting out its own maximum.
 *
 * The SDK's own retries are switched off for clients the driver builds (maxAttempts 1): one
 * policy decides, attempts are counted once, and the message says how many were made.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { StorageError } from '../../errors.js';
import {
  classify,
  codeOf,
  describeFault,
  hideRawResponse,
  isAbort,
  mapS3Error,
  statusOf,
} from './faults.js';

/** Attempts per operation (the first included); S3 advises retrying 5xx and SlowDown a few times. */
export const DEFAULT_MAX_ATTEMPTS = 6;
/** First backoff ceiling; it doubles per attempt (full jitter: the wait is random below it). */
export const DEFAULT_BASE_DELAY_MS = 100;
/** Backoff ceiling for one wait. */
export const DEFAULT_MAX_DELAY_MS = 20_000;
/** SlowDown means "reduce your request rate": its backoff starts this many times higher (500 ms). */
const THROTTLE_FACTOR = 5;
/**
 * Retry budget of a storage, in tokens (the SDK's standard retry quota uses the same numbers).
 * A retry costs RETRY_COST, a retry after a timeout TIMEOUT_COST, a success gives SUCCESS_REFUND
 * back. Faults on fewer than about one request in six can be retried for ever; a store that
 * fails everything drains the budget after ~100 retries, and then every request fails on its
 * first fault.
 */
export const DEFAULT_RETRY_BUDGET = 500;
const RETRY_COST = 5;
const TIMEOUT_COST = 10;
const SUCCESS_REFUND = 1;

/** Tokens shared by every request of a storage tree (pass one instance to share it wider). */
export class RetryBudget {
  private tokens: number;
  constructor(readonly capacity = DEFAULT_RETRY_BUDGET) {
    if (!(capacity >= 0))
      throw new StorageError(`[storage] retry budget must be >= 0, got ${capacity}`, {
        kind: 'usage',
      });
    this.tokens = capacity;
  }
  get available(): number {
    return this.tokens;
  }
  /** Take the cost of one retry; false when the budget cannot pay for it. */
  take(timeout: boolean): boolean {
    const cost = timeout ? TIMEOUT_COST : RETRY_COST;
    if (this.tokens < cost) return false;
    this.tokens -= cost;
    return true;
  }
  succeeded(): void {
    this.tokens = Math.min(this.capacity, this.tokens + SUCCESS_REFUND);
  }
}

export interface RetrySettings {
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  budget: RetryBudget;
  /** The endpoint, when not AWS's own (for messages). */
  endpoint?: string;
}

/** One storage operation, as messages name it. */
export interface Operation {
  op: string;
  key: string;
  uri: string;
  signal?: AbortSignal;
}

export class RetryPolicy {
  constructor(readonly settings: RetrySettings) {}

  /** The retry state of one operation (several requests, e.g. a resumed download, share it). */
  start(op: Operation): Attempts {
    return new Attempts(this.settings, op);
  }

  /** Run `attempt` until it succeeds, a permanent fault (thrown as StorageError), or giving up. */
  async run<T>(op: Operation, attempt: () => Promise<T>): Promise<T> {
    const attempts = this.start(op);
    for (;;) {
      try {
        const value = await attempt();
        attempts.succeeded();
        return value;
      } catch (err) {
        await attempts.failed(err);
      }
    }
  }
}

/** Failed attempts of one operation; `failed` waits before the next one, or throws. */
export class Attempts {
  /** Failed attempts so far. */
  failures = 0;
  /** Failed attempts since the operation last made progress (received bytes). */
  private inARow = 0;
  private readonly faults: string[] = [];

  constructor(
    private readonly settings: RetrySettings,
    readonly op: Operation,
  ) {}

  /**
   * After a failed attempt: rethrows aborts, throws permanent faults as StorageError, throws a
   * transient "storage unavailable" error when attempts or the budget are spent; else waits the
   * backoff and returns (the caller makes the next attempt).
   */
  async failed(err: unknown, extra: Record<string, unknown> = {}): Promise<void> {
    if (isAbort(err) || this.op.signal?.aborted) throw err;
    const fault = classify(err);
    if (!fault.transient) throw mapS3Error(err, { ...this.op, extra });
    this.failures++;
    this.inARow++;
    this.faults.push(describeFault(err));
    const { maxAttempts, budget } = this.settings;
    if (this.inARow >= maxAttempts) throw this.unavailable(err, extra, false);
    if (!budget.take(fault.timeout)) throw this.unavailable(err, extra, true);
    await sleep(
      this.backoff(fault.throttle),
      undefined,
      this.op.signal ? { signal: this.op.signal } : undefined,
    );
  }

  succeeded(): void {
    this.settings.budget.succeeded();
  }

  /** Bytes arrived: a long download cut several times is not given up while it advances. */
  progressed(): void {
    this.inARow = 0;
  }

  private backoff(throttle: boolean): number {
    const { baseDelayMs, maxDelayMs } = this.settings;
    const base = throttle ? baseDelayMs * THROTTLE_FACTOR : baseDelayMs;
    const ceiling = Math.min(maxDelayMs, base * 2 ** (this.inARow - 1));
    return Math.floor(Math.random() * ceiling);
  }

  private unavailable(
    last: unknown,
    extra: Record<string, unknown>,
    budgetSpent: boolean,
  ): StorageError {
    hideRawResponse(last);
    const { op, key, uri } = this.op;
    const endpoint = this.settings.endpoint;
    const n = this.failures;
    const where = endpoint ? `${uri} (endpoint ${endpoint})` : uri;
    const why = budgetSpent ? '; the retry budget of this storage is spent' : '';
    return new StorageError(
      `[storage] S3 storage unavailable after ${n} attempt${n === 1 ? '' : 's'}: ${op} ${JSON.stringify(key)} on ${where}: ` +
        `${describeFault(last)} (faults: ${summarise(this.faults)})${why}`,
      {
        kind: 'transient',
        context: {
          key,
          uri,
          op,
          attempts: n,
          ...(endpoint ? { endpoint } : {}),
          status: statusOf(last),
          code: codeOf(last),
          faults: [...this.faults],
          ...(budgetSpent ? { budgetSpent: true } : {}),
          ...extra,
        },
        cause: last,
      },
    );
  }
}

/** `HTTP 503 SlowDown ×3, ECONNRESET` */
function summarise(faults: string[]): string {
  const counts = new Map<string, number>();
  for (const f of faults) counts.set(f, (counts.get(f) ?? 0) + 1);
  return [...counts].map(([f, n]) => (n === 1 ? f : `${f} ×${n}`)).join(', ');
}
