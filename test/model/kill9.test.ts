/**
 * The model-based test (./model.ts) with real kill -9s: besides the in-process crashes at commit
 * points, one step in three starts `tidemark run` as its own process (Node, AWS SDK, DuckDB) and
 * SIGKILLs it at a random moment of its work (0-1.5 s after its first log line), then runs the job
 * to completion; the table must equal the oracle after each command, as everywhere in the model.
 * Each kill costs a process start-up (seconds), so `npm test` runs a few sequences;
 * TIDEMARK_SOAK=1 runs TIDEMARK_SOAK_KILL_RUNS (default 50). The seed is printed on failure
 * (TIDEMARK_MODEL_SEED replays it). test/cli/kill9.test.ts kills the CLI over s3rver sources.
 */
import { afterAll, beforeAll, describe, it } from 'vitest';
import { DuckSession } from '../../src/engine/duckdb.js';
import { scaled } from '../helpers/machine.js';
import { checkModel, SEED } from './check.js';

const RUNS =
  process.env['TIDEMARK_SOAK'] === '1' ? Number(process.env['TIDEMARK_SOAK_KILL_RUNS'] ?? 50) : 3;

let session: DuckSession;
beforeAll(async () => {
  session = await DuckSession.open();
});
afterAll(() => session.close());

describe('the promise, as a model, with the real CLI killed -9', () => {
  it(
    `${RUNS} random sequences with kill -9s of tidemark run: after each command the table equals the oracle`,
    async () => {
      await checkModel(session, {
        partitioned: true,
        runs: RUNS,
        seed: SEED + 9,
        maxSteps: 6,
        kill9: true,
      });
    },
    scaled(RUNS * 60_000),
  );
});
