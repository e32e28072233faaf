/**
 * The model-based test of snapshot sources (./deliveries.ts): merge mode with `source.snapshot`,
 * with and without `snapshotPattern` (change files beside the extracts), by partition or by
 * modification time. After every run the table holds merge semantics over the rows loaded, minus
 * the keys each applied extract lacked; a late older extract never deletes; an extract deleting
 * more than `maxDeleteShare` of the keys is refused (the counts checked) until
 * `--allow-large-delete`, which lets it through once. TIDEMARK_MODEL_RUNS sets the number of
 * sequences.
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

describe('snapshot sources, as a model', () => {
  it(
    `${DELIVERY_RUNS} random sequences of extracts, changes and runs: after each run the table is the merge of what loaded, less the keys the applied extracts lacked`,
    async () => {
      await checkDeliveryModel(session, {
        mode: 'snapshot',
        runs: DELIVERY_RUNS,
        seed: DELIVERY_SEED + 1,
        timeoutMs: timeout,
      });
    },
    timeout,
  );
});
