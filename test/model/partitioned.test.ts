/**
 * The model-based test on an table partitioned by region, which a key may change, with and without deletion vectors (./model.ts):
 * seeded sequences of landings and commands, the table equal to the promise's oracle after every
 * command. TIDEMARK_SOAK=1 runs the soak (TIDEMARK_SOAK_RUNS sequences, default 2500 here).
 */
import { afterAll, beforeAll, describe, it } from 'vitest';
import { DuckSession } from '../../src/engine/duckdb.js';
import { scaled } from '../helpers/machine.js';
import { checkModel, RUNS, SEED } from './check.js';

let session: DuckSession;
beforeAll(async () => {
  session = await DuckSession.open();
});
afterAll(() => session.close());

describe('the promise, as a model (table partitioned by region, which a key may change)', () => {
  it(
    `${RUNS} random sequences of landings and commands: after each command the table holds, per key, the newest row unless deleted`,
    async () => {
      await checkModel(session, { partitioned: true, runs: RUNS, seed: SEED + 1 });
    },
    scaled(RUNS * 3_000),
  );
});
