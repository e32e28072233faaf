/**
 * scd2 mode, model-based: random versions and deletes of a few keys, delivered in random files,
 * batches (maxFilesPerBatch) and runs, out of order, some rows delivered twice, give exactly the
 * history of the sorted sequence (the oracle: every row arriving in order by seq). Every status
 * is distinct, so each version is a tracked change; deletes never share a seq with a version of
 * their key (a delete wins such a tie, docs/concepts.md). With a snapshot source, some of the
 * events come in full extracts, each taken at an as-of (odd, so never at a version's even seq):
 * the history is the oracle's over the events with each applied extract's closes added
 * (`scd2SnapshotEvents`: the keys open before it and absent from it, closed at its as-of; none
 * for an extract older than one applied). With `trackColumns: [status]`, rid is untracked: a row
 * changing only rid updates its version in place, mixed with tracked changes, corrections at one
 * seq (the later row wins), late rows, replays and deletes; the oracle (`scd2BatchOracle`) applies
 * the documented rules batch by batch, since a version keeps only its first and latest row's
 * times. TIDEMARK_MODEL_RUNS sets the runs per property (4 in `npm test`).
 */
import { utimes } from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LocalStorage } from '../../src/storage/local.js';
import {
  DuckSession,
  land,
  makeConfig,
  run,
  scd2BatchOracle,
  scd2History,
  scd2Oracle as oracle,
  scd2Row as rowOf,
  scd2SnapshotEvents,
  sessionPerFile,
  tempDir,
  type OrderRow,
  type Scd2Landed,
  type Scd2Step,
} from './helpers.js';

let session: DuckSession;
const dirs = sessionPerFile((s) => (session = s));

/** Sequences per property in `npm test` (a few seconds each); TIDEMARK_MODEL_RUNS for more. */
const RUNS = Number(process.env['TIDEMARK_MODEL_RUNS'] ?? 4);

const history = (
  config: ReturnType<typeof makeConfig>,
  opts: { values?: boolean } = {},
): Promise<string[]> => scd2History(session, config, opts);

const orderRow = (r: Scd2Landed): OrderRow => ({
  order_id: r.id,
  status: r.status,
  seq: r.seq,
  rid: r.rid,
});

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
      { numRuns: RUNS },
    );
  });

  it('a snapshot source: random extracts (as-of in random order) and change files give the in-order history with the closes', async () => {
    // Versions at even seqs, deletes by deleteWhen; an extract's as-of is odd.
    const stepsArb = fc
      .tuple(
        fc.uniqueArray(
          fc.record({
            id: fc.integer({ min: 1, max: 4 }),
            seq: fc.integer({ min: 1, max: 10 }).map((n) => 2 * n),
            deleted: fc.constantFrom(false, false, false, true),
          }),
          { minLength: 1, maxLength: 12, selector: (e) => `${e.id}/${e.seq}` },
        ),
        fc.array(fc.nat({ max: 4 }), { minLength: 12, maxLength: 12 }),
        fc.array(
          fc.integer({ min: 0, max: 10 }).map((n) => 2 * n + 1),
          {
            minLength: 5,
            maxLength: 5,
          },
        ),
        fc.array(fc.boolean(), { minLength: 5, maxLength: 5 }),
      )
      .map(([events, draws, asOfs, extracts]) =>
        // Five steps; an event goes to the step its draw names (a delete always to a change file).
        asOfs.flatMap((asOf, i): Scd2Step[] => {
          const mine = events.filter((_, j) => draws[j] === i);
          const rows = mine.filter((e) => !e.deleted);
          if (!extracts[i] || rows.length === 0) return [{ kind: 'changes', events: mine }];
          const deletes = mine.filter((e) => e.deleted);
          return [
            { kind: 'extract', asOf, events: rows },
            ...(deletes.length > 0 ? [{ kind: 'changes' as const, events: deletes }] : []),
          ];
        }),
      );
    await fc.assert(
      fc.asyncProperty(stepsArb, async (steps) => {
        const src = await tempDir('scd2s-src', dirs);
        const dst = await tempDir('scd2s-dst', dirs);
        const config = makeConfig({
          source: {
            uri: src,
            discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 30 },
            snapshot: true,
            snapshotPattern: 'full-*.csv',
            snapshotAsOf: 'as_of',
            maxDeleteShare: 1,
          },
          target: {
            uri: dst,
            mode: 'scd2',
            key: ['order_id'],
            orderBy: 'seq',
            deleteWhen: "status = 'deleted'",
          },
        });
        const source = new LocalStorage(src);
        // One step a run, each in the next day: every extract is the newest delivery when it lands.
        for (const [i, step] of steps.entries()) {
          if (step.events.length === 0) continue;
          const day = `2025/03/${String(i + 1).padStart(2, '0')}`;
          const rows = step.events.map(rowOf);
          if (step.kind === 'changes') await land(source, session, `${day}/c${i}.csv`, rows);
          else
            await source.write(
              `${day}/full-${i}.csv`,
              [
                'order_id,status,seq,rid,as_of',
                ...rows.map((r) => `${r.order_id},${r.status},${r.seq},${r.rid},${step.asOf}`),
              ].join('\n') + '\n',
            );
          await run(config);
        }
        expect(await history(config)).toEqual(oracle(scd2SnapshotEvents(steps)));
      }),
      { numRuns: RUNS },
    );
  });

  it('an untracked column: in-place updates mixed with tracked changes, corrections at one seq, late rows and deletes give the documented history, batch by batch', async () => {
    // Rows of 3 keys at seqs 1..8: status (tracked) a or b, or a delete; rid (untracked) x, y or
    // z. Two rows of a key may share a seq with other values (a correction: the later row wins).
    const rowsArb = fc.uniqueArray(
      fc.record({
        id: fc.integer({ min: 1, max: 3 }),
        seq: fc.integer({ min: 1, max: 8 }),
        status: fc.constantFrom('a', 'a', 'b', 'b', 'deleted'),
        rid: fc.constantFrom('x', 'y', 'z'),
      }),
      { minLength: 4, maxLength: 16, selector: (e) => `${e.id}/${e.seq}/${e.status}/${e.rid}` },
    );
    await fc.assert(
      fc.asyncProperty(
        rowsArb,
        fc.array(fc.nat(), { minLength: 16, maxLength: 16 }),
        fc.integer({ min: 1, max: 3 }),
        fc.array(fc.nat({ max: 5 }), { minLength: 4, maxLength: 4 }),
        async (rows, draws, perBatch, runs) => {
          const src = await tempDir('scd2u-src', dirs);
          const dst = await tempDir('scd2u-dst', dirs);
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
              trackColumns: ['status'],
            },
            maxFilesPerBatch: perBatch,
          });
          const source = new LocalStorage(src);
          // Each row goes to one of four files (its draw); the first row no other row shares a
          // seq with is delivered again in the last file (a replay: the same row, no statement).
          const files: Omit<Scd2Landed, 'file' | 'line'>[][] = [[], [], [], []];
          rows.forEach((r, i) => files[draws[i]! % 4]!.push(r));
          const replay = rows.find(
            (r) => rows.filter((o) => o.id === r.id && o.seq === r.seq).length === 1,
          );
          if (replay) files[3]!.push(replay);
          // Files land in random day partitions with increasing LastModified, a run after some;
          // a run takes its pending files in plan order (partition, LastModified), perBatch a batch.
          const batches: Scd2Landed[][] = [];
          let pending: { path: string; rows: Scd2Landed[] }[] = [];
          const runNow = async () => {
            pending.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
            for (let i = 0; i < pending.length; i += perBatch)
              batches.push(pending.slice(i, i + perBatch).flatMap((p) => p.rows));
            pending = [];
            await run(config);
          };
          for (const [f, fileRows] of files.entries()) {
            if (fileRows.length === 0) continue;
            const path = `2025/03/0${1 + (runs[f]! % 3)}/f${f}.csv`;
            const landed = fileRows.map((r, line) => ({ ...r, file: f, line }));
            await land(source, session, path, landed.map(orderRow));
            const at = new Date(Date.UTC(2025, 2, 10, 0, f));
            await utimes(join(src, path), at, at);
            pending.push({ path, rows: landed });
            if (runs[f]! % 2 === 0) await runNow();
          }
          if (pending.length > 0) await runNow();
          expect(await history(config, { values: true })).toEqual(scd2BatchOracle(batches));
        },
      ),
      { numRuns: RUNS },
    );
  });
});
