/**
 * Losing a commit race: another writer (a run of the same job, a backfill, optimize) committed
 * first. The job and its backfill both re-read the table and plan again, pausing a little longer
 * each time (with jitter) so that two runs started together settle into one loading and the other
 * finding nothing left. Only races lost in a row count against the limit, and a loss to a rival
 * that committed this owner's own state (another run of the same job) does not count: the rival
 * did this run's work, and a run that commits between its losses is making progress too.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { isCommitConflict } from '../delta/table.js';
import { CommitRetriesExhaustedError, type CommitConflictError } from '../errors.js';
import type { RunContext } from './context.js';

/** Commit races lost in a row (re-planning after each) before giving up with exit code 3. */
export const DEFAULT_MAX_REPLANS = 5;

/** Pause before re-plan number `n` (1-based): 50 ms doubling up to 1.6 s, times 0.5–1.5. */
export function replanDelayMs(n: number, random: () => number = Math.random): number {
  return Math.round(Math.min(1600, 50 * 2 ** (n - 1)) * (0.5 + random()));
}

export interface ReplanOptions {
  ctx: RunContext;
  job: string;
  uri: string;
  /** Commits made so far (a commit between two losses resets the count). */
  commits(): number;
  /** The txn appId / domain this run commits its state under (`tidemark.job.<name>`, …). */
  ownAppId: string;
  /** `[job]` or `[backfill]`, and what to tell the user when giving up. */
  subsystem: string;
  giveUpHint?: string;
  /** Log message when re-planning. */
  replanMessage: string;
  /** Told of each re-plan (reports count them). */
  onReplan?: () => void;
}

/** Run `planAndLoad`, planning again after each lost commit race, up to `ctx.maxReplans` in a row. */
export async function withReplans<T>(
  opts: ReplanOptions,
  planAndLoad: () => Promise<T>,
): Promise<T> {
  const maxReplans = opts.ctx.maxReplans ?? DEFAULT_MAX_REPLANS;
  let lostInARow = 0;
  let losses = 0;
  for (;;) {
    const commitsBefore = opts.commits();
    try {
      return await planAndLoad();
    } catch (err) {
      if (!isCommitConflict(err)) throw err;
      losses += 1;
      if (opts.commits() > commitsBefore) lostInARow = 1;
      else if (!rivalCommittedOwnState(err, opts.ownAppId)) lostInARow += 1;
      if (lostInARow > maxReplans) {
        throw new CommitRetriesExhaustedError(
          `${opts.subsystem} ${opts.job}: lost ${lostInARow} commit races in a row to concurrent writers of ${opts.uri}; giving up${opts.giveUpHint ?? ''}`,
          { kind: 'conflict', context: { uri: opts.uri, job: opts.job }, cause: err },
        );
      }
      opts.onReplan?.();
      const delayMs = replanDelayMs(losses);
      opts.ctx.logger.warn(
        { job: opts.job, conflict: err.conflict, lostInARow, delayMs },
        opts.replanMessage,
      );
      await delay(delayMs, undefined, opts.ctx.signal ? { signal: opts.ctx.signal } : {});
    }
  }
}

/** The winner committed the same txn appId or domain: a rival run of the same owner made progress. */
function rivalCommittedOwnState(err: CommitConflictError, ownAppId: string): boolean {
  const sameState =
    err.conflict === 'ConcurrentTransaction' || err.conflict === 'ConcurrentDomainMetadata';
  return sameState && err.context['subject'] === ownAppId;
}
