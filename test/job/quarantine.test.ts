/**
 * Quarantine follows its docs (issue 19, item 5): a quarantined file overwritten with fixed
 * content loads again on the next run (the dry run lists it), however far its partition lies
 * behind the lookback window; a loaded file leaves the quarantine list, also when the job's
 * backfill loads it, and a file the backfill set aside is listed by `status` and leaves the list
 * when the job loads it. Local folders, real DuckDB, real CSV files and Delta logs.
 */
import { describe, expect, it } from 'vitest';
import type { JobConfig, StorageConfig } from '../../src/config/schema.js';
import { readBackfillStates } from '../../src/job/backfill/state.js';
import { jobStatus } from '../../src/job/status.js';
import { silentLogger } from '../../src/log/logger.js';
import { LocalStorage } from '../../src/storage/local.js';
import { backfill } from './backfill-helpers.js';
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
  unwrap,
} from './helpers.js';

let session: DuckSession;
const dirs = sessionPerFile((s) => (session = s));

type Setup = { job: JobConfig; storage: StorageConfig };
const HEADER = 'order_id,status,seq,rid\n';
const BAD = `${HEADER}7,2\n`;
const FIXED = `${HEADER}7,placed,1,fixed\n`;
const KEY = '2025/03/01/bad.csv';

async function zone(
  onOverwrite: 'reload' | 'ignore' = 'reload',
): Promise<{ source: LocalStorage; setup: Setup }> {
  const source = new LocalStorage(await tempDir('q-src', dirs));
  const discover = { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 1, onOverwrite };
  const setup = makeConfig({
    source: { uri: source.uri, discover },
    target: mergeTarget(await tempDir('q-t', dirs)),
    onBadFile: 'quarantine',
  });
  return { source, setup };
}

async function quarantinedKeys(setup: Setup): Promise<string[]> {
  return unwrap(
    await jobStatus(setup.job, { storage: setup.storage, logger: silentLogger() }),
  ).quarantined.map((q) => q.key);
}

/** Day 1 with a bad file (quarantined by the first run), then day 5: day 1 is behind the lookback window. */
async function quarantinedThenLeftBehind(
  onOverwrite: 'reload' | 'ignore' = 'reload',
): Promise<{ source: LocalStorage; setup: Setup }> {
  const z = await zone(onOverwrite);
  await land(z.source, session, '2025/03/01/a.csv', orders([1, 'placed', 1]));
  await z.source.write(KEY, BAD);
  expect((await run(z.setup)).quarantined?.map((q) => q.key)).toEqual([KEY]);
  await land(z.source, session, '2025/03/05/c.csv', orders([3, 'placed', 1]));
  expect(await run(z.setup)).toMatchObject({
    filesLoaded: 1,
    watermark: '2025-03-05',
    partitionsListed: ['2025/03/01/', '2025/03/05/'],
  });
  expect(await quarantinedKeys(z.setup)).toEqual([KEY]);
  return z;
}

const ids = async (setup: Setup) =>
  (await readTarget(session, setup)).rows.map((r) => r.order_id).sort((a, b) => a - b);

describe('quarantine', () => {
  it('a quarantined file behind the lookback window, overwritten with fixed content: the dry run lists it, the next run loads it once, and it leaves the list', async () => {
    const { source, setup } = await quarantinedThenLeftBehind();
    await source.write(KEY, FIXED);
    const dry = await run(setup, { dryRun: true });
    expect(dry.plannedFiles).toEqual([KEY]);
    const loaded = await run(setup);
    expect(loaded).toMatchObject({
      status: 'succeeded',
      filesLoaded: 1,
      inserted: 1,
      watermark: '2025-03-05',
    });
    expect(await ids(setup)).toEqual([1, 3, 7]);
    expect((await readTarget(session, setup)).state.quarantined).toEqual([]);
    expect(await quarantinedKeys(setup)).toEqual([]);
    // Left the list: no longer looked at, not loaded again.
    expect(await run(setup)).toMatchObject({
      status: 'nothing-new',
      filesLoaded: 0,
      partitionsListed: ['2025/03/05/'],
    });
  });

  it('a quarantined file not overwritten is not loaded again; with onOverwrite: ignore an overwrite is not either', async () => {
    const kept = await quarantinedThenLeftBehind();
    expect(await run(kept.setup)).toMatchObject({ status: 'nothing-new', filesLoaded: 0 });
    const ignoring = await quarantinedThenLeftBehind('ignore');
    await ignoring.source.write(KEY, FIXED);
    expect(await run(ignoring.setup)).toMatchObject({ status: 'nothing-new', filesLoaded: 0 });
    expect(await quarantinedKeys(ignoring.setup)).toEqual([KEY]);
  });

  it('a fixed quarantined file that a backfill loads leaves the list, and the next run does not load it again', async () => {
    const { source, setup } = await quarantinedThenLeftBehind();
    await source.write(KEY, FIXED);
    expect(await backfill(setup, { from: '2025-03-01', to: '2025-03-01' })).toMatchObject({
      status: 'succeeded',
      filesLoaded: 2,
    });
    expect(await ids(setup)).toEqual([1, 3, 7]);
    expect(await quarantinedKeys(setup)).toEqual([]);
    expect(await run(setup)).toMatchObject({ status: 'nothing-new', filesLoaded: 0 });
  });

  it('a file the backfill sets aside is listed by status; fixed, the job loads it and it leaves the list; the backfill drops a file it loads itself', async () => {
    const { source, setup } = await zone();
    await land(source, session, '2025/03/05/c.csv', orders([3, 'placed', 1]));
    await run(setup);
    await source.write(KEY, BAD);
    expect(
      (await backfill(setup, { from: '2025-03-01', to: '2025-03-01' })).quarantined?.map(
        (q) => q.key,
      ),
    ).toEqual([KEY]);
    expect(await quarantinedKeys(setup)).toEqual([KEY]);
    await source.write(KEY, FIXED);
    expect(await run(setup)).toMatchObject({ status: 'succeeded', filesLoaded: 1, inserted: 1 });
    expect(await quarantinedKeys(setup)).toEqual([]);

    // The backfill's own list: set aside, then loaded by the backfill itself.
    await source.write('2025/03/02/bad2.csv', BAD);
    expect(
      (await backfill(setup, { from: '2025-03-02', to: '2025-03-02' })).quarantined?.map(
        (q) => q.key,
      ),
    ).toEqual(['2025/03/02/bad2.csv']);
    expect(await quarantinedKeys(setup)).toEqual(['2025/03/02/bad2.csv']);
    await source.write('2025/03/02/bad2.csv', `${HEADER}8,placed,1,fixed2\n`);
    await backfill(setup, { from: '2025-03-02', to: '2025-03-02', restart: true });
    const state = [
      ...readBackfillStates((await readTarget(session, setup)).snapshot, 'orders').values(),
    ][0]!;
    expect(state.quarantined ?? []).toEqual([]);
    expect(await quarantinedKeys(setup)).toEqual([]);
    expect(await ids(setup)).toEqual([3, 7, 8]);
  });
});
