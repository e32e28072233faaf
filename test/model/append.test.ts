/**
 * The model-based test on an append table (./model.ts), partitioned by region half the time, with
 * and without deletion vectors: seeded sequences of landings and commands (overwrites, touches,
 * backfills in shards, crashes, renames), the table equal to the oracle after every command: the
 * rows of every file version loaded last, once. Fewer sequences than the merge kinds (their
 * commands are the same code but the write); TIDEMARK_SOAK=1 runs the soak.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { DuckSession } from '../../src/engine/duckdb.js';
import { scaled } from '../helpers/machine.js';
import { check, checkModel, RUNS, SEED } from './check.js';
import type { Row } from './model.js';

let session: DuckSession;
beforeAll(async () => {
  session = await DuckSession.open();
});
afterAll(() => session.close());

const runs = Math.max(1, Math.round(RUNS / 4));

describe('the promise, as a model (append table)', () => {
  it(
    `${runs} random sequences of landings and commands: after each command the table holds every loaded file version's rows once`,
    async () => {
      const partitioned = fc.sample(fc.boolean(), { seed: SEED + 2, numRuns: 1 })[0]!;
      await checkModel(session, { partitioned, runs, seed: SEED + 2, mode: 'append' });
    },
    scaled(runs * 3_000),
  );
});

describe('sequences kept as regressions (append table)', () => {
  const order = (id: number): Row => ({ id, ver: 1, val: 'a', region: 'eu', op: 'I' });
  it(
    'lookback raised past what the state remembers (1 -> 5): the files of days 2-3 are not appended again, and a file landing there is left for a backfill',
    async () => {
      await check(session, {
        table: {
          mode: 'append',
          partitioned: false,
          markers: false,
          deletionVectors: false,
          maxFilesPerBatch: 1000,
        },
        steps: [
          ...[1, 2, 3, 4, 5, 6, 7].map((d) => ({
            kind: 'land' as const,
            day: d,
            rows: [order(d)],
            complete: false,
          })),
          { kind: 'run' },
          // The state remembers days 4-7 (lookback 1 + lateCheck 2 before day 7); without the
          // rememberedFrom floor the run rescans days 2-3 and appends them again.
          { kind: 'lookback', to: 5 },
          { kind: 'land', day: 3, rows: [order(9)], complete: false },
          { kind: 'run' },
          { kind: 'backfill', from: 3, to: 3, shards: 1 },
        ],
      });
    },
    scaled(60_000),
  );

  it(
    'a job that only backfilled, renamed (nothing to adopt): the new name does not append the backfilled file again (found by the soak, seed 192028)',
    async () => {
      await check(session, {
        table: {
          mode: 'append',
          partitioned: true,
          markers: false,
          deletionVectors: false,
          maxFilesPerBatch: 1,
        },
        steps: [
          {
            kind: 'land',
            day: 1,
            rows: [{ id: 1, ver: null, val: 'a', region: null, op: 'I' }],
            complete: false,
          },
          { kind: 'backfill', from: 1, to: 1, shards: 1 },
          { kind: 'rename', how: 'adopt' },
          { kind: 'touch', of: 0, inPlace: false },
          { kind: 'run' },
        ],
      });
    },
    scaled(60_000),
  );
});
