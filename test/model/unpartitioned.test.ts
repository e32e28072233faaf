/**
 * The model-based test on an unpartitioned table, with and without deletion vectors (./model.ts):
 * seeded sequences of landings and commands, the table equal to the promise's oracle after every
 * command. TIDEMARK_SOAK=1 runs the soak (TIDEMARK_SOAK_RUNS sequences, default 2500 here).
 */
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

describe('the promise, as a model (unpartitioned table)', () => {
  it(
    `${RUNS} random sequences of landings and commands: after each command the table holds, per key, the newest row unless deleted`,
    async () => {
      await checkModel(session, { partitioned: false, runs: RUNS, seed: SEED });
    },
    scaled(RUNS * 3_000),
  );
});

describe('sequences the model found, kept as regressions', () => {
  it(
    'target.orderBy switched while a delete is remembered: refused, the config goes back, and a late older row stays deleted',
    async () => {
      await check(session, {
        table: {
          mode: 'merge',
          partitioned: false,
          markers: false,
          deletionVectors: false,
          maxFilesPerBatch: 1000,
        },
        steps: [
          {
            kind: 'land',
            day: 1,
            rows: [{ id: 1, ver: 1, val: 'a', region: 'eu', op: 'I' }],
            complete: false,
          },
          { kind: 'run' },
          {
            kind: 'land',
            day: 2,
            rows: [{ id: 1, ver: 5, val: 'a', region: 'eu', op: 'D' }],
            complete: false,
          },
          { kind: 'run' },
          // Refused (the tombstone holds ver, not ver2); the model then puts the config back.
          { kind: 'orderBy' },
          {
            kind: 'land',
            day: 2,
            rows: [{ id: 1, ver: 3, val: 'late', region: 'eu', op: 'I' }],
            complete: false,
          },
          { kind: 'run' },
          { kind: 'backfill', from: 1, to: 2, shards: 1 },
        ],
      });
    },
    scaled(60_000),
  );

  const tied = (val: string): Row => ({ id: 1, ver: 5, val, region: 'eu', op: 'I' });
  it(
    'a touched file reloaded (a backfill, a job started --fresh beside it, a run after reset) keeps its place in the tie order: the later file still wins',
    async () => {
      await check(session, {
        table: {
          mode: 'merge',
          partitioned: false,
          markers: false,
          deletionVectors: false,
          maxFilesPerBatch: 1000,
        },
        steps: [
          { kind: 'land', day: 3, rows: [tied('a')], complete: false },
          { kind: 'land', day: 3, rows: [tied('b')], complete: false },
          { kind: 'run' },
          { kind: 'touch', of: 0, inPlace: true },
          // Failed here before the ledger placed files at their first load (the touched file won).
          { kind: 'backfill', from: 3, to: 3, shards: 1 },
          // Failed here while a job read only its own ledger (a --fresh job reloads the old one's files).
          { kind: 'rename', how: 'fresh' },
          { kind: 'touch', of: 0, inPlace: false },
          { kind: 'reset', to: 1 },
          { kind: 'run' },
        ],
      });
    },
    scaled(60_000),
  );
});
