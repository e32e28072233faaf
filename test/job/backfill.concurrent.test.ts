/**
 * A backfill and the hourly run at the same time, in one process, on a local source and target:
 * both MERGE into the same (unpartitioned) table, so their commits conflict; the loser re-plans
 * and goes on. Both complete, the table holds the latest row of every key from both ranges, the
 * job's state is the one it would have alone, and the backfill's range is done.
 *
 * Racing at full speed, a writer gives up after DEFAULT_MAX_REPLANS races lost in a row, about
 * 1.5 s of backoff in all: long enough for the other to finish on a quiet machine, not on a busy
 * one, where each of its commits takes longer. So the racing writers get as many re-plans as make
 * the same backoff time scaled to the machine (test/helpers/machine.ts).
 */
import { promises as fsp } from 'node:fs';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Logger } from '../../src/log/logger.js';
import { readBackfillState } from '../../src/job/backfill/state.js';
import { DEFAULT_MAX_REPLANS, replanDelayMs } from '../../src/job/replan.js';
import type { JobState } from '../../src/job/state.js';
import { LocalStorage } from '../../src/storage/local.js';
import { scaled } from '../helpers/machine.js';
import { backfill } from './backfill-helpers.js';
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
  tempDir,
  type OrderRow,
} from './helpers.js';

let session: DuckSession;
const dirs: string[] = [];

beforeAll(async () => {
  session = await DuckSession.open();
});

afterAll(async () => {
  session?.close();
  await cleanup(dirs);
});

/** Eight days; every day updates keys 1..3 (seq = day) and adds one new key. */
async function zone(): Promise<{ root: string; landed: OrderRow[] }> {
  const root = await tempDir('bfc-src', dirs);
  const source = new LocalStorage(root);
  const landed: OrderRow[] = [];
  for (let day = 1; day <= 8; day++) {
    for (const part of ['a', 'b']) {
      const rows =
        part === 'a'
          ? orders([1, `d${day}`, day], [2, `d${day}`, day])
          : orders([3, `d${day}`, day], [100 + day, 'placed', 1]);
      await land(source, session, `2025/03/0${day}/${part}.csv`, rows);
      landed.push(...rows);
    }
  }
  return { root, landed };
}

/** The job config: the hourly job owns 03-05 onwards (start), the backfill does 03-01..03-04. */
async function setupFor(root: string) {
  const target = await tempDir('bfc-t', dirs);
  return makeConfig({
    source: {
      uri: root,
      discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 1, start: '2025-03-05' },
    },
    target: mergeTarget(target),
    maxFilesPerBatch: 1,
  });
}

/** A logger keeping the messages of warnings (re-plans are logged as warnings). */
function warnings(): { logger: Logger; messages: string[] } {
  const messages: string[] = [];
  const logger = pino(
    { level: 'warn' },
    {
      write: (line: string) =>
        void messages.push(String((JSON.parse(line) as { msg: string }).msg)),
    },
  );
  return { logger, messages };
}

/** Re-plans whose backoff adds up (without jitter) to DEFAULT_MAX_REPLANS' backoff scaled to the machine. */
function scaledReplans(): number {
  const backoff = (replans: number) =>
    Array.from({ length: replans }, (_, i) => replanDelayMs(i + 1, () => 0.5)).reduce(
      (a, b) => a + b,
      0,
    );
  const wanted = scaled(backoff(DEFAULT_MAX_REPLANS));
  let replans = DEFAULT_MAX_REPLANS;
  while (backoff(replans) < wanted) replans++;
  return replans;
}

/** Fetch folders (`fetch-N`) anywhere below the spool root. */
async function countFetchFolders(root: string): Promise<number> {
  const entries = await fsp.readdir(root, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isDirectory() && /^fetch-\d+$/.test(e.name)).length;
}

function comparable(state: JobState) {
  const { lastRunAt: _t, ledger, ...rest } = state;
  // Ledger files are named by a fresh uuid each, one per committed batch: the entries they hold count.
  return { ...rest, ledgerEntries: (ledger?.files ?? []).reduce((n, f) => n + f.rows, 0) };
}

describe('backfill and hourly run at the same time (target: local)', () => {
  let landed: OrderRow[];
  let root: string;
  let alone: JobState;

  beforeAll(async () => {
    ({ root, landed } = await zone());
    const reference = await setupFor(root);
    await run(reference);
    alone = (await readTarget(session, reference)).state;
    expect(alone.discovery).toMatchObject({ watermark: '2025-03-08' });
  });

  it('a run commits while a backfill batch is about to: the backfill loses the race, re-plans, and both end correct (fault injection: hook runs the job)', async () => {
    const setup = await setupFor(root);
    const log = warnings();
    let jobRan = false;
    const spoolRoot = await tempDir('bfc-spool', dirs);
    const fetchFolders: number[] = [];
    const report = await backfill(
      setup,
      { from: '2025-03-01', to: '2025-03-04' },
      {
        logger: log.logger,
        spoolRoot,
        hooks: {
          beforeCommit: async (b) => {
            fetchFolders.push(await countFetchFolders(spoolRoot));
            if (b !== 1 || jobRan) return;
            jobRan = true;
            expect(await run(setup)).toMatchObject({ status: 'succeeded', filesLoaded: 8 });
          },
        },
      },
    );
    expect(jobRan).toBe(true);
    expect(log.messages).toContain(
      'backfill: another writer committed first; planning the rest of the range again',
    );
    // Each batch's downloads go when it ends, the batch that lost the race included.
    expect(fetchFolders.length).toBeGreaterThan(8);
    expect(new Set(fetchFolders)).toEqual(new Set([1]));
    expect(report).toMatchObject({
      status: 'succeeded',
      filesLoaded: 8,
      commits: 8,
      watermark: '2025-03-08',
    });

    const table = await readTarget(session, setup);
    expect(duplicateRids(table.rows)).toEqual([]);
    expect(table.rows).toEqual(expectedLatest(landed));
    expect(comparable(table.state)).toEqual(comparable(alone));
    expect(readBackfillState(table.snapshot, 'orders')).toMatchObject({
      status: 'done',
      totals: { filesLoaded: 8 },
    });
  });

  it('Promise.all of a backfill and a run: both complete, the table holds the latest row of every key', async () => {
    const setup = await setupFor(root);
    const racing = { maxReplans: scaledReplans() };
    const [b, r] = await Promise.all([
      backfill(setup, { from: '2025-03-01', to: '2025-03-04' }, racing),
      run(setup, racing),
    ]);
    expect(b).toMatchObject({ status: 'succeeded', filesLoaded: 8 });
    expect(r).toMatchObject({ status: 'succeeded', filesLoaded: 8, watermark: '2025-03-08' });
    const table = await readTarget(session, setup);
    expect(duplicateRids(table.rows)).toEqual([]);
    expect(table.rows).toEqual(expectedLatest(landed));
    expect(comparable(table.state)).toEqual(comparable(alone));
    expect(readBackfillState(table.snapshot, 'orders')?.status).toBe('done');
    expect(await run(setup)).toMatchObject({ status: 'nothing-new' });
  });

  it('a delete the job commits between two backfill batches buries the older row of the next batch (fault injection: hook runs the job)', async () => {
    const root = await tempDir('bfc-del-src', dirs);
    const source = new LocalStorage(root);
    const setup = makeConfig({
      source: {
        uri: root,
        discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}', start: '2025-03-05' },
      },
      target: {
        ...mergeTarget(await tempDir('bfc-del-t', dirs)),
        deleteWhen: "status = 'cancelled'",
      },
      maxFilesPerBatch: 1,
    });
    await land(source, session, '2025/03/05/a.csv', orders([50, 'placed', 5]));
    expect(await run(setup)).toMatchObject({ status: 'succeeded', inserted: 1 });
    // The backfill's two days: a new key, then an old version of key 50.
    await land(source, session, '2025/03/01/a.csv', orders([1, 'placed', 1]));
    await land(source, session, '2025/03/02/a.csv', orders([50, 'old', 2]));

    let jobRan = false;
    const report = await backfill(
      setup,
      { from: '2025-03-01', to: '2025-03-02' },
      {
        hooks: {
          beforeCommit: async (b) => {
            if (b !== 0 || jobRan) return;
            jobRan = true;
            // The job deletes key 50 in a file the first batch never read: that batch retries its
            // commit on top (no re-plan), and the second batch plans on a version after the delete.
            await land(source, session, '2025/03/06/a.csv', orders([50, 'cancelled', 6]));
            expect(await run(setup)).toMatchObject({ status: 'succeeded', deleted: 1 });
          },
        },
      },
    );
    expect(jobRan).toBe(true);
    expect(report).toMatchObject({
      status: 'succeeded',
      commits: 2,
      replans: 0,
      skippedStale: 1,
      inserted: 1,
    });
    expect(report.commitRetries).toBeGreaterThan(0);
    const table = await readTarget(session, setup);
    expect(table.rows.map((r) => [r.order_id, r.status])).toEqual([[1, 'placed']]);
  });
});
