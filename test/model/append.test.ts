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
import { checkModel, RUNS, SEED } from './check.js';

let session: DuckSession;
beforeAll(async () => {
  session = await DuckSession.open();
});
afterAll(() => session.close());

const runs = Math.max(1, Math.round(RUNS / 4));

describe('the promise, as a model (append table)', () => {
  it(`${runs} random sequences of landings and commands: after each command the table holds every loaded file version's rows once`, async () => {
    const partitioned = fc.sample(fc.boolean(), { seed: SEED + 2, numRuns: 1 })[0]!;
    await checkModel(session, { partitioned, runs, seed: SEED + 2, mode: 'append' });
  }, scaled(runs * 3_000));
});
