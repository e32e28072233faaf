/**
 * A backfill interrupted at each step of a batch, then run again with the same range, continues
 * where it stopped: the table equals that of one uninterrupted backfill, with no duplicate rows
 * (append mode shows any), in both discovery modes. A crash is an exception thrown from a
 * RunContext hook (fault injection: the hooks stand in for a process dying at that point).
 * Sources and targets are local folders: the hooks, not the store, are under test here.
 *
 * Each case is bounded by its own steps (three backfills, with the reads between them), at
 * BACKFILL_MS each scaled to the machine (test/helpers/machine.ts), not by one budget for the matrix.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunHooks } from '../../src/job/context.js';
import { readBackfillState } from '../../src/job/backfill/state.js';
import { LocalStorage } from '../../src/storage/local.js';
import { stepBudget } from '../helpers/machine.js';
import { backfill, backfillOutcome } from './backfill-helpers.js';
import {
  cleanup,
  DuckSession,
  duplicateRids,
  expectedLatest,
  land,
  makeConfig,
  mergeTarget,
  orders,
  readTarget,
  sortRows,
  tempDir,
  type OrderRow,
  type TableView,
} from './helpers.js';

let session: DuckSession;
const dirs: string[] = [];
let sourceRoot: string;
/** Rows of the backfilled range (2025-03-02..2025-03-04). */
const inRange: OrderRow[] = [];
/** Limit of one backfill (up to five batches) and a read of its table, on a quiet machine, where it takes about 0.5 s. */
const BACKFILL_MS = 10_000;

/** Five days, two of them with two files; modification times in landing order. */
async function landSource(): Promise<void> {
  sourceRoot = await tempDir('bff-src', dirs);
  const source = new LocalStorage(sourceRoot);
  const files: Array<[string, OrderRow[]]> = [
    ['2025/03/01/a.csv', orders([1, 'placed', 1])],
    ['2025/03/02/b.csv', orders([1, 'paid', 2], [2, 'placed', 1])],
    ['2025/03/02/c.parquet', orders([3, 'placed', 1], [2, 'paid', 2])],
    ['2025/03/03/d.ndjson', orders([1, 'shipped', 3], [4, 'placed', 1])],
    ['2025/03/04/e.csv', orders([3, 'paid', 2], [5, 'placed', 1])],
    ['2025/03/04/f.csv', orders([4, 'paid', 2])],
    ['2025/03/05/g.csv', orders([5, 'paid', 2])],
  ];
  const t0 = Date.parse('2025-03-10T00:00:00Z');
  for (const [i, [key, rows]] of files.entries()) {
    await land(source, session, key, rows);
    const s = (t0 + i * 60_000) / 1000;
    await fsp.utimes(path.join(sourceRoot, key), s, s);
    if (i >= 1 && i <= 5) inRange.push(...rows);
  }
}

beforeAll(async () => {
  session = await DuckSession.open();
  await landSource();
});

afterAll(async () => {
  session?.close();
  await cleanup(dirs);
});

type Mode = 'merge' | 'append';
type Discovery = 'partition' | 'modified';
type Point = keyof RunHooks;

/** The range of files b..f in either mode (modified: their minute stamps). */
const RANGE: Record<Discovery, { from: string; to: string }> = {
  partition: { from: '2025-03-02', to: '2025-03-04' },
  modified: { from: '2025-03-10T00:01:00Z', to: '2025-03-10T00:05:00Z' },
};

async function setupFor(mode: Mode, discovery: Discovery) {
  const target = await tempDir('bff-t', dirs);
  const discover =
    discovery === 'partition'
      ? { by: 'partition', layout: '{yyyy}/{mm}/{dd}' }
      : { by: 'modified' };
  return makeConfig({
    source: { uri: sourceRoot, discover },
    target: mode === 'merge' ? mergeTarget(target) : { uri: target, mode: 'append' },
    // Partition mode: 03-02 and 03-04 split in two batches (5 commits); modified mode: 3 batches.
    maxFilesPerBatch: discovery === 'partition' ? 1 : 2,
  });
}

function crashAt(point: Point, batch: number): RunHooks {
  return {
    [point]: (b: number) => {
      if (b === batch) throw new Error(`injected crash at ${point} of batch ${b}`);
    },
  };
}

const cases: Array<[Mode, Discovery]> = [
  ['merge', 'partition'],
  ['append', 'partition'],
  ['merge', 'modified'],
  ['append', 'modified'],
];

describe.each(cases)('%s mode, %s range (fault injection: hook throws)', (mode, discovery) => {
  let reference: TableView;
  const opts = { ...RANGE[discovery], force: mode === 'append' };
  const commits = discovery === 'partition' ? 5 : 3;

  beforeAll(
    async () => {
      const setup = await setupFor(mode, discovery);
      expect(await backfill(setup, opts)).toMatchObject({
        status: 'succeeded',
        filesLoaded: 5,
        commits,
      });
      reference = await readTarget(session, setup);
      expect(reference.rows).toEqual(
        mode === 'merge' ? expectedLatest(inRange) : sortRows(inRange),
      );
    },
    stepBudget(1, BACKFILL_MS),
  );

  const points: Point[] = ['afterFetch', 'afterWrite', 'beforeCommit', 'afterCommit'];
  // Batch 0 of the partition range is half of 03-02 (resume inside a partition); batch 2 is 03-03
  // (resume at a partition boundary), and the last batch of the modified range.
  it.each(points.flatMap((p) => [0, 2].map((b) => [p, b] as const)))(
    'a crash at %s of batch %i, then the same backfill again: it resumes and the table equals an uninterrupted backfill (fault injection: hook throws)',
    { timeout: stepBudget(3, BACKFILL_MS) }, // the crashed backfill, the resumed one, the one with nothing left
    async (point, batch) => {
      const setup = await setupFor(mode, discovery);
      const crash = await backfillOutcome(setup, opts, { hooks: crashAt(point, batch) });
      expect(crash.ok).toBe(false);
      expect(!crash.ok && (crash.error as Error).message).toBe(
        `injected crash at ${point} of batch ${batch}`,
      );
      const committed = point === 'afterCommit' ? batch + 1 : batch;
      expect(crash.report).toMatchObject({ status: 'failed', commits: committed });
      const afterCrash = await readTarget(session, setup);
      const finished = committed === commits;
      expect(readBackfillState(afterCrash.snapshot, 'orders')?.status ?? 'none').toBe(
        committed === 0 ? 'none' : finished ? 'done' : 'running',
      );

      const resumed = await backfill(setup, opts);
      expect(resumed).toMatchObject(
        finished
          ? { status: 'already-done', commits: 0 }
          : { status: 'succeeded', commits: commits - committed },
      );
      const table = await readTarget(session, setup);
      expect(duplicateRids(table.rows)).toEqual([]);
      expect(table.rows).toEqual(reference.rows);
      expect(table.snapshot!.version).toBe(reference.snapshot!.version);
      expect(readBackfillState(table.snapshot, 'orders')).toMatchObject({
        status: 'done',
        totals: { filesLoaded: 5 },
      });
      expect(await backfill(setup, opts)).toMatchObject({ status: 'already-done', commits: 0 });
    },
  );
});
