/**
 * Another run of the same job commits while this one is between batches or inside a commit:
 * the run must notice (a commit conflict on the job's txn/domain), plan again on the rival's
 * state, and load nothing twice. The rival is a real second run started from a hook at an
 * exact point (fault injection: hook runs a rival run); the racing processes themselves are
 * test/cli/concurrent-runs.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunHooks } from '../../src/job/context.js';
import { LocalStorage } from '../../src/storage/local.js';
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
  run,
  sortRows,
  tempDir,
  type OrderRow,
} from './helpers.js';

let session: DuckSession;
const dirs: string[] = [];
let sourceRoot: string;
const landed: OrderRow[] = [];

beforeAll(async () => {
  session = await DuckSession.open();
  sourceRoot = await tempDir('rival-src', dirs);
  const source = new LocalStorage(sourceRoot);
  for (let i = 0; i < 6; i++) {
    const rows = orders([i % 4, `s${i}`, 10 + i], [(i + 1) % 4, `t${i}`, 20 + i]);
    await land(source, session, `2025/04/0${1 + (i % 3)}/f${i}.csv`, rows);
    landed.push(...rows);
  }
});

afterAll(async () => {
  session?.close();
  await cleanup(dirs);
});

type Setup = ReturnType<typeof makeConfig>;

async function setupFor(mode: 'merge' | 'append'): Promise<Setup> {
  const target = await tempDir('rival-t', dirs);
  return makeConfig({
    source: { uri: sourceRoot, discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}' } },
    target: mode === 'merge' ? mergeTarget(target) : { uri: target, mode: 'append' },
    maxFilesPerBatch: 2,
  });
}

/** At `point` of batch `batch`, a complete second run of the same job loads everything left. */
function rivalAt(setup: Setup, point: 'afterCommit' | 'beforeCommit', batch: number): RunHooks {
  let fired = false;
  const rival = async (b: number) => {
    if (b !== batch || fired) return;
    fired = true;
    expect(await run(setup)).toMatchObject({ status: 'succeeded' });
  };
  return { [point]: rival };
}

describe.each(['merge', 'append'] as const)(
  '%s mode: a rival run of the same job (fault injection: hook runs a rival run)',
  (mode) => {
    it.each([
      ['afterCommit', 0],
      ['afterCommit', 1],
      ['beforeCommit', 1],
    ] as const)(
      'commits everything at %s of batch %i: this run re-plans and loads nothing twice',
      async (point, batch) => {
        const setup = await setupFor(mode);
        const report = await run(setup, { hooks: rivalAt(setup, point, batch) });
        expect(report.status).toBe('succeeded');
        const table = await readTarget(session, setup);
        expect(duplicateRids(table.rows)).toEqual([]);
        expect(table.rows).toEqual(mode === 'merge' ? expectedLatest(landed) : sortRows(landed));
        expect(table.state.totals.filesLoaded).toBe(6);
        // This run committed only the batches before the rival took over.
        expect(report.filesLoaded).toBe(2 * (point === 'afterCommit' ? batch + 1 : batch));
      },
    );
  },
);
