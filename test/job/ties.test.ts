/**
 * One total order for ties (issue 19, docs/concepts.md "Keys and partitions"): rows of a key with
 * the same orderBy value are ordered by their file's LastModified, then its key, then the row's
 * position in the file, and the last one is the key's newest event, a delete or not. The result
 * never depends on how the files were batched: the same landing loaded in one batch and with
 * `maxFilesPerBatch: 1` gives the same table, and the one the order says. End to end: the real
 * job over local CSV landing folders (LastModified is the file's mtime), real DuckDB, the Delta
 * log read back by a fresh reader.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { tableRows } from './drift-helpers.js';
import { checkTarget, DuckSession, makeConfig, run, sessionPerFile, tempDir } from './helpers.js';

let session: DuckSession;
const dirs = sessionPerFile((s) => (session = s), { threads: 2 });

/** One landed row: key, version (null: empty field), delete or not, and a value telling rows apart. */
interface Event {
  id: number;
  seq: number | null;
  op: 'I' | 'D';
  note: string;
}

/** A landed file: its key below the landing root, its LastModified (ms) and its rows in order. */
interface Landed {
  key: string;
  mtimeMs: number;
  rows: Event[];
}

const BASE_MS = Date.parse('2026-03-25T12:00:00Z');

async function landAll(landing: string, files: readonly Landed[]): Promise<void> {
  for (const f of files) {
    const file = path.join(landing, ...f.key.split('/'));
    await fsp.mkdir(path.dirname(file), { recursive: true });
    const lines = f.rows.map((r) => `${r.id},${r.seq ?? ''},${r.op},${r.note}`);
    await fsp.writeFile(file, ['id,seq,op,note', ...lines].join('\n') + '\n');
    const at = new Date(f.mtimeMs);
    await fsp.utimes(file, at, at);
  }
}

/** Load `files` into a fresh table, in one batch or one file per batch; the table's rows. */
async function loaded(
  files: readonly Landed[],
  batching: { maxFilesPerBatch?: number },
  target: Record<string, unknown> = {},
) {
  const dir = await tempDir('ties', dirs);
  const landing = path.join(dir, 'landing');
  await landAll(landing, files);
  const setup = makeConfig({
    source: {
      uri: landing,
      discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}', start: '2026-03-20' },
    },
    target: {
      uri: path.join(dir, 'table'),
      key: ['id'],
      orderBy: 'seq',
      deleteWhen: "op = 'D'",
      ...target,
    },
    ...batching,
  });
  const report = await run(setup);
  expect(report.status).toBe('succeeded');
  expect((await checkTarget(session, setup)).problems).toEqual([]);
  return (await tableRows(session, setup, 'id')).map((r) => ({
    id: Number(r['id']),
    seq: r['seq'] === null ? null : Number(r['seq']),
    op: String(r['op']),
    note: String(r['note']),
  }));
}

/** The promise: per key the last event by (seq NULL first, LastModified, file key, position) unless it is a delete. */
function oracle(files: readonly Landed[]): Array<Omit<Event, 'op'> & { op: string }> {
  const cmp = (a: readonly (number | string)[], b: readonly (number | string)[]) => {
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i]! < b[i]! ? -1 : 1;
    return 0;
  };
  const best = new Map<number, { rank: (number | string)[]; row: Event }>();
  for (const f of files) {
    f.rows.forEach((row, pos) => {
      const rank = [row.seq === null ? -Infinity : row.seq, f.mtimeMs, f.key, pos];
      const cur = best.get(row.id);
      if (!cur || cmp(rank, cur.rank) > 0) best.set(row.id, { rank, row });
    });
  }
  return [...best.values()]
    .map((b) => b.row)
    .filter((r) => r.op !== 'D')
    .sort((a, b) => a.id - b.id);
}

describe('ties follow one order, whatever the batching', () => {
  it('the same key and orderBy in two partitions: the later file by LastModified wins, in one batch and in two', async () => {
    // Day 20's file was written after day 21's (a re-delivery): it is the later statement.
    const files: Landed[] = [
      {
        key: '2026/03/20/a.csv',
        mtimeMs: BASE_MS + 60_000,
        rows: [{ id: 1, seq: 5, op: 'I', note: 'day20' }],
      },
      {
        key: '2026/03/21/a.csv',
        mtimeMs: BASE_MS,
        rows: [{ id: 1, seq: 5, op: 'I', note: 'day21' }],
      },
    ];
    const expected = [{ id: 1, seq: 5, op: 'I', note: 'day20' }];
    expect(await loaded(files, {})).toEqual(expected);
    expect(await loaded(files, { maxFilesPerBatch: 1 })).toEqual(expected);
  });

  it('a delete and an update at an equal version: the later one wins, across files and batches alike', async () => {
    const files: Landed[] = [
      // Key 1: the delete comes first, the insert later (by LastModified): the key stays.
      {
        key: '2026/03/20/a.csv',
        mtimeMs: BASE_MS,
        rows: [
          { id: 1, seq: 5, op: 'D', note: 'gone' },
          { id: 2, seq: 5, op: 'I', note: 'kept?' },
        ],
      },
      // Key 2: the insert comes first, the delete later: the key goes.
      {
        key: '2026/03/21/a.csv',
        mtimeMs: BASE_MS + 60_000,
        rows: [
          { id: 1, seq: 5, op: 'I', note: 'back' },
          { id: 2, seq: 5, op: 'D', note: 'gone' },
        ],
      },
      // Key 3: a NULL version ties a NULL version: the later file's delete wins over the earlier insert.
      {
        key: '2026/03/22/a.csv',
        mtimeMs: BASE_MS - 60_000,
        rows: [{ id: 3, seq: null, op: 'I', note: 'null' }],
      },
      {
        key: '2026/03/23/a.csv',
        mtimeMs: BASE_MS + 120_000,
        rows: [{ id: 3, seq: null, op: 'D', note: 'gone' }],
      },
    ];
    const expected = [{ id: 1, seq: 5, op: 'I', note: 'back' }];
    expect(await loaded(files, {})).toEqual(expected);
    expect(await loaded(files, { maxFilesPerBatch: 1 })).toEqual(expected);
  });

  // Equal LastModified values and rows of one key in one file come up too: the file key, then the position, decide.
  it("property: random landings of few keys, equal versions and deletes give the oracle's table in one batch and one file per batch (seeded)", async () => {
    const event = fc.record({
      id: fc.integer({ min: 1, max: 3 }),
      seq: fc.option(fc.integer({ min: 1, max: 2 }), { freq: 5 }),
      op: fc.constantFrom<'I' | 'D'>('I', 'I', 'D'),
      note: fc.constantFrom('p', 'q', 'r'),
    });
    const file = fc.record({
      day: fc.integer({ min: 20, max: 23 }),
      name: fc.constantFrom('a', 'b'),
      mtime: fc.integer({ min: 0, max: 3 }),
      rows: fc.array(event, { minLength: 1, maxLength: 3 }),
    });
    const landings = fc
      .uniqueArray(file, { minLength: 1, maxLength: 5, selector: (f) => `${f.day}/${f.name}` })
      .map((fs) =>
        fs.map((f): Landed => ({
          key: `2026/03/${f.day}/${f.name}.csv`,
          mtimeMs: BASE_MS + f.mtime * 1000,
          rows: f.rows,
        })),
      );
    await fc.assert(
      fc.asyncProperty(landings, async (files) => {
        const expected = oracle(files);
        expect(await loaded(files, {})).toEqual(expected);
        expect(await loaded(files, { maxFilesPerBatch: 1 })).toEqual(expected);
      }),
      { seed: 1919, numRuns: 10, endOnFailure: true },
    );
  }, 120_000);
});
