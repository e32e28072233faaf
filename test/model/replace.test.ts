/**
 * The model-based test of replace mode (./deliveries.ts): seeded sequences of deliveries (by
 * partition or by modification time, several per run, late older ones, empty ones, with and
 * without a key, crashes before the commit then a rerun); after every run the table is the newest
 * delivery applied, never an older one. TIDEMARK_MODEL_RUNS sets the number of sequences.
 */
import { afterAll, beforeAll, describe, it } from 'vitest';
import { DuckSession } from '../../src/engine/duckdb.js';
import { scaled } from '../helpers/machine.js';
import { checkDeliveryModel, DELIVERY_RUNS, DELIVERY_SEED } from './deliveries.js';

const timeout = scaled(DELIVERY_RUNS * 5_000);

let session: DuckSession;
beforeAll(async () => {
  session = await DuckSession.open();
});
afterAll(() => session.close());

describe('replace mode, as a model', () => {
  it(
    `${DELIVERY_RUNS} random sequences of deliveries and runs: after each run the table is the newest delivery applied`,
    async () => {
      await checkDeliveryModel(session, {
        mode: 'replace',
        runs: DELIVERY_RUNS,
        seed: DELIVERY_SEED,
        timeoutMs: timeout,
      });
    },
    timeout,
  );
});
