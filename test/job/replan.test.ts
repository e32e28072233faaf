/**
 * Re-planning after lost commit races: losses to a rival that committed this owner's own state
 * (another run of the same job) do not count against maxReplans; other losses in a row do.
 */
import { describe, expect, it } from 'vitest';
import { CommitConflictError, CommitRetriesExhaustedError } from '../../src/errors.js';
import { silentLogger } from '../../src/log/logger.js';
import { withReplans } from '../../src/job/replan.js';

function losingThen(losses: CommitConflictError[]): {
  calls: () => number;
  planAndLoad: () => Promise<string>;
} {
  let calls = 0;
  return {
    calls: () => calls,
    planAndLoad: async () => {
      const err = losses[calls++];
      if (err) throw err;
      return 'done';
    },
  };
}

const options = (maxReplans: number) => ({
  ctx: { storage: { singleWriter: false }, logger: silentLogger(), maxReplans },
  job: 'orders',
  uri: 'file:///t/',
  commits: () => 0,
  ownAppId: 'tidemark.job.orders',
  subsystem: '[job]',
  replanMessage: 're-planning',
});

const lostTo = (conflict: string, subject: string) =>
  new CommitConflictError(conflict, `lost to ${subject}`, { subject });

describe('withReplans', () => {
  it('keeps re-planning while a rival run of the same job commits its state (it does our work)', async () => {
    const run = losingThen([
      lostTo('ConcurrentDomainMetadata', 'tidemark.job.orders'),
      lostTo('ConcurrentTransaction', 'tidemark.job.orders'),
      lostTo('ConcurrentDomainMetadata', 'tidemark.job.orders'),
    ]);
    await expect(withReplans(options(0), run.planAndLoad)).resolves.toBe('done');
    expect(run.calls()).toBe(4);
  });

  it('gives up (exit 3 class) after maxReplans losses in a row to other writers', async () => {
    const run = losingThen([
      lostTo('ConcurrentAppend', 'part-1.parquet'),
      lostTo('ConcurrentDomainMetadata', 'tidemark.job.other'),
    ]);
    const err = await withReplans(options(1), run.planAndLoad).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CommitRetriesExhaustedError);
    expect((err as CommitRetriesExhaustedError).kind).toBe('conflict');
    expect((err as Error).message).toMatch(/lost 2 commit races in a row/);
    expect(run.calls()).toBe(2);
  });
});
