/**
 * The committed job state must not grow with the runs behind it: real incremental runs of the job
 * over a growing landing zone (one new hour partition per run, plus a late file in the hour
 * before), each committing its state in the Delta log. The state committed by the last runs is no
 * bigger than the one committed once the lookback window first filled.
 *
 * 56 runs (two days and a third of hours; TIDEMARK_STATE_RUNS=120 for five days) at about 0.2 s each
 * on a quiet machine: past the window's filling (run 5) and the first runs compared (20), the ledger
 * is rewritten into one file twice (every MAX_LEDGER_FILES = 16 batches), and rewritten files are
 * dropped after MAX_DROP_GRACE_MS (an hour of the job's clock), so each way the state can grow comes
 * round more than once. Each run has a limit of its own (RUN_MS, scaled to the machine:
 * test/helpers/machine.ts) and the test RUNS of them, so a busy machine slows it down without
 * failing it. The 500-run version, for both discovery modes, drives
 * the planner and the state's JSON round trip without I/O (test/discovery/state.bounded.test.ts).
 * Sources and targets are local folders: the state does not depend on the store.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { jobAppId } from '../../src/job/state.js';
import { LocalStorage } from '../../src/storage/local.js';
import { stepBudget, withinStep } from '../helpers/machine.js';
import {
  DuckSession,
  land,
  makeConfig,
  mergeTarget,
  orders,
  readTarget,
  run,
  sessionPerFile,
  tempDir,
} from './helpers.js';

const RUNS = Number(process.env['TIDEMARK_STATE_RUNS'] ?? 56);
/** Limit of one step (land two files, run the job, read its commit) on a quiet machine, where it takes about 0.2 s. */
const RUN_MS = 5_000;
const HOUR_MS = 3_600_000;
const T0 = Date.parse('2025-01-01T00:00:00Z');

let session: DuckSession;
const dirs = sessionPerFile((s) => (session = s));

/** `yyyy/mm/dd/HH/` of an instant. */
function hourFolder(ms: number): string {
  const iso = new Date(ms).toISOString();
  return `${iso.slice(0, 4)}/${iso.slice(5, 7)}/${iso.slice(8, 10)}/${iso.slice(11, 13)}/`;
}

/** The job's domainMetadata action as committed in log version `version`, in bytes. */
async function committedStateBytes(tableRoot: string, version: number): Promise<number> {
  const commit = await readFile(
    path.join(tableRoot, '_delta_log', `${String(version).padStart(20, '0')}.json`),
    'utf8',
  );
  const line = commit
    .split('\n')
    .find((l) => l.includes('"domainMetadata"') && l.includes(JSON.stringify(jobAppId('orders'))));
  if (line === undefined) throw new Error(`commit ${version} has no job state`);
  return Buffer.byteLength(line);
}

afterEach(() => {
  vi.useRealTimers();
});

describe('committed job state over many real runs', () => {
  it(
    `${RUNS} hourly runs over a growing landing zone: the state committed with each run stays the same size`,
    { timeout: stepBudget(RUNS + 1, RUN_MS) },
    async () => {
      const sourceRoot = await tempDir('bounded-src', dirs);
      const targetRoot = await tempDir('bounded-t', dirs);
      const source = LocalStorage.at(sourceRoot);
      const setup = makeConfig({
        source: {
          uri: sourceRoot,
          discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}/{HH}', lookback: 2 },
        },
        target: mergeTarget(targetRoot),
      });
      const sizes: number[] = [];
      let loaded = 0;
      // The runs are an hour apart on the job's clock too: state kept for a wall-clock time (ledger
      // files rewritten away stay listed for MAX_DROP_GRACE_MS) expires as it would between hourly runs.
      vi.useFakeTimers({ toFake: ['Date'] });
      for (let hour = 0; hour < RUNS; hour++) {
        const start = T0 + hour * HOUR_MS;
        vi.setSystemTime(start + HOUR_MS + 60_000);
        const report = await withinStep(`run ${hour}`, RUN_MS, async () => {
          await land(
            source,
            session,
            `${hourFolder(start)}events.csv`,
            orders([hour % 50, 'placed', 2 * hour], [1000 + hour, 'placed', 1]),
          );
          if (hour > 0)
            await land(
              source,
              session,
              `${hourFolder(start - HOUR_MS)}late-${hour}.csv`,
              orders([hour % 50, 'late', 2 * hour + 1]),
            );
          return run(setup);
        });
        expect(report, `run ${hour}`).toMatchObject({
          status: 'succeeded',
          filesLoaded: hour > 0 ? 2 : 1,
          commits: 1,
        });
        loaded += report.filesLoaded;
        sizes.push(await committedStateBytes(targetRoot, report.tableVersion!));
      }
      expect(loaded).toBe(2 * RUNS - 1);
      // The window (this hour and two lookback hours, two files each) is full after a few runs.
      const early = Math.max(...sizes.slice(5, 20));
      expect(Math.max(...sizes.slice(20))).toBeLessThanOrEqual(early + 20); // digits of longer numbers at most
      const table = await readTarget(session, setup);
      expect(table.snapshot?.version).toBe(RUNS - 1);
      expect(table.state.discovery).toMatchObject({
        mode: 'partition',
        watermark: new Date(T0 + (RUNS - 1) * HOUR_MS).toISOString().slice(0, 13),
      });
      expect(table.rows).toHaveLength(50 + RUNS);
    },
  );
});
