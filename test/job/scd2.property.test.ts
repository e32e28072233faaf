/**
 * scd2 mode, model-based: random versions and deletes of a few keys, delivered in random files,
 * batches (maxFilesPerBatch) and runs, out of order, some rows delivered twice, give exactly the
 * history of the sorted sequence (the oracle: every row arriving in order by seq). Every status
 * is distinct, so each version is a tracked change; deletes never share a seq with a version of
 * their key (a delete wins such a tie, docs/concepts.md).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LocalStorage } from '../../src/storage/local.js';
import {
  DuckSession,
  land,
  makeConfig,
  run,
  scd2History,
  scd2Oracle as oracle,
  scd2Row as rowOf,
  sessionPerFile,
  tempDir,
  type OrderRow,
} from './helpers.js';

let session: DuckSession;
const dirs = sessionPerFile((s) => (session = s));

const history = (config: ReturnType<typeof makeConfig>): Promise<string[]> =>
  scd2History(session, config);

/** Distinct (id, seq) events, a few of them deletes. */
const eventsArb = fc.uniqueArray(
  fc.record({
    id: fc.integer({ min: 1, max: 3 }),
    seq: fc.integer({ min: 1, max: 12 }),
    deleted: fc.constantFrom(false, false, false, true),
  }),
  { minLength: 1, maxLength: 14, selector: (e) => `${e.id}/${e.seq}` },
);

describe('scd2 mode, against the in-order oracle', () => {
  it('random versions and deletes in random files, batches and runs give the sorted history', async () => {
    await fc.assert(
      fc.asyncProperty(
        eventsArb,
        fc.array(fc.nat(), { minLength: 14, maxLength: 14 }),
        fc.integer({ min: 1, max: 3 }),
        fc.array(fc.nat({ max: 3 }), { minLength: 4, maxLength: 4 }),
        async (events, draws, perBatch, runs) => {
          const src = await tempDir('scd2p-src', dirs);
          const dst = await tempDir('scd2p-dst', dirs);
          const config = makeConfig({
            source: {
              uri: src,
              discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 30 },
            },
            target: {
              uri: dst,
              mode: 'scd2',
              key: ['order_id'],
              orderBy: 'seq',
              deleteWhen: "status = 'deleted'",
            },
            maxFilesPerBatch: perBatch,
          });
          const source = new LocalStorage(src);
          // Each event goes to one of four files (its draw), the first event again to the last file (a replay).
          const files: OrderRow[][] = [[], [], [], []];
          events.forEach((e, i) => files[draws[i]! % 4]!.push(rowOf(e)));
          files[3]!.push(rowOf(events[0]!));
          // Files land in random day partitions, a few at a time, a run after each group.
          let landed = 0;
          for (const [f, rows] of files.entries()) {
            if (rows.length === 0) continue;
            await land(source, session, `2025/03/0${1 + (runs[f]! % 3)}/f${f}.csv`, rows);
            landed += 1;
            if (runs[f]! % 2 === 0) await run(config);
          }
          if (landed > 0) await run(config);
          expect(await history(config)).toEqual(oracle(events));
        },
      ),
      { numRuns: 4 },
    );
  });
});
