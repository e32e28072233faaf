/**
 * Zero-row files (issue 19): they never make a phantom commit or watermark. The run's JSON and
 * `status` agree, and an empty file counts as loaded once, in the commit that records it.
 * - No table yet, a zero-row Parquet file: it declares its columns' types, so it creates the
 *   table (no rows) and that commit records it; the next run finds nothing new.
 * - No table yet, an empty CSV or NDJSON file: it declares no types, so nothing commits; the run
 *   says so (no commit, watermark null, the file skipped with its reason) and the file loads with
 *   the first file that has rows, counted once.
 * Real DuckDB, real Parquet/CSV files, real Delta logs in local folders.
 */
import { describe, expect, it } from 'vitest';
import { str } from '../../src/engine/sql.js';
import { NO_TABLE_YET } from '../../src/job/pipeline.js';
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
  runOutcome,
  sessionPerFile,
  tempDir,
  unwrap,
} from './helpers.js';
import type { JobConfig, StorageConfig } from '../../src/config/schema.js';

let session: DuckSession;
const dirs = sessionPerFile((s) => (session = s));

const byDay = { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 2 };
type Setup = { job: JobConfig; storage: StorageConfig };

/** A Parquet file with the order feed's columns and no rows. */
async function landEmptyParquet(
  source: LocalStorage,
  key: string,
  columns = "1::BIGINT AS order_id, 'x' AS status, 1::BIGINT AS seq, 'r' AS rid",
): Promise<void> {
  const file = `${await tempDir('empty-pq', dirs)}/e.parquet`;
  await session.run(`COPY (SELECT ${columns} WHERE false) TO ${str(file)} (FORMAT parquet)`);
  await source.upload(key, file);
}

async function zone(
  target: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
): Promise<{ source: LocalStorage; setup: Setup }> {
  const source = new LocalStorage(await tempDir('empty-src', dirs));
  const setup = makeConfig({
    source: { uri: source.uri, discover: byDay },
    target: { ...mergeTarget(await tempDir('empty-t', dirs)), ...target },
    ...extra,
  });
  return { source, setup };
}

async function statusOf(setup: Setup) {
  return unwrap(await jobStatus(setup.job, { storage: setup.storage, logger: silentLogger() }));
}

describe('zero-row files', () => {
  it.each([
    ['merge', {}],
    ['append', { mode: 'append', key: undefined, orderBy: undefined }],
  ])(
    'a zero-row Parquet first file creates the table (%s): one commit records it, run JSON and status agree, and it is not loaded again',
    async (_mode, target) => {
      const { source, setup } = await zone(target);
      await landEmptyParquet(source, '2025/03/01/empty.parquet');
      const first = await run(setup);
      expect(first).toMatchObject({
        status: 'succeeded',
        filesLoaded: 1,
        rowsRead: 0,
        commits: 1,
        tableVersion: 0,
        watermark: '2025-03-01',
      });
      const status = await statusOf(setup);
      expect(status).toMatchObject({
        watermark: first.watermark,
        tableVersion: first.tableVersion,
        rows: 0,
      });
      const table = await readTarget(session, setup);
      expect(table.rows).toEqual([]);
      expect(table.columns).toEqual(expect.arrayContaining(['order_id', 'status', 'seq', 'rid']));
      expect(table.state.totals.filesLoaded).toBe(1);
      expect(
        (table.state.discovery as { loaded?: Array<{ key: string }> } | null)?.loaded?.map(
          (f) => f.key,
        ),
      ).toEqual(['2025/03/01/empty.parquet']);

      expect(await run(setup)).toMatchObject({
        status: 'nothing-new',
        filesLoaded: 0,
        commits: 0,
        tableVersion: 0,
        skippedByReason: { 'already loaded': 1 },
      });
      await land(source, session, '2025/03/02/a.csv', orders([1, 'placed', 1]));
      expect(await run(setup)).toMatchObject({
        status: 'succeeded',
        filesLoaded: 1,
        rowsRead: 1,
        inserted: 1,
        tableVersion: 1,
        watermark: '2025-03-02',
      });
      expect((await readTarget(session, setup)).state.totals.filesLoaded).toBe(2);
    },
  );

  it('a zero-row Parquet first file without the key column is refused naming it; nothing commits', async () => {
    const { source, setup } = await zone();
    await landEmptyParquet(source, '2025/03/01/empty.parquet', "'x' AS status, 1::BIGINT AS seq");
    const outcome = await runOutcome(setup);
    expect(outcome.ok).toBe(false);
    expect(String((outcome as { error: Error }).error.message)).toMatch(/order_id/);
    expect((await readTarget(session, setup)).snapshot).toBeNull();
  });

  it.each([
    ['a zero-byte CSV', '2025/03/01/empty.csv', ''],
    ['a header-only CSV', '2025/03/01/header.csv', 'order_id,status,seq,rid\n'],
    ['an empty NDJSON file', '2025/03/01/empty.ndjson', ''],
  ])(
    '%s first: nothing commits and the run says so (no commit, no watermark, the file skipped with its reason); it loads once, with the first file that has rows',
    async (_name, key, body) => {
      const { source, setup } = await zone();
      await source.write(key, body);
      for (let i = 0; i < 2; i++) {
        const report = await run(setup);
        expect(report).toMatchObject({
          status: 'nothing-new',
          filesDiscovered: 1,
          filesLoaded: 0,
          commits: 0,
          batches: 0,
          tableVersion: null,
          watermark: null,
        });
        expect(report.skipped).toEqual([{ key, reason: NO_TABLE_YET }]);
        expect(report.skippedByReason).toEqual({ [NO_TABLE_YET]: 1 });
        expect(await statusOf(setup)).toMatchObject({ watermark: null, tableVersion: null });
      }
      await land(source, session, '2025/03/02/a.csv', orders([1, 'placed', 1], [2, 'placed', 1]));
      const loaded = await run(setup);
      expect(loaded).toMatchObject({
        status: 'succeeded',
        filesLoaded: 2,
        rowsRead: 2,
        commits: 1,
        tableVersion: 0,
        watermark: '2025-03-02',
      });
      expect(loaded.skipped).toBeUndefined();
      const table = await readTarget(session, setup);
      expect(table.state.totals.filesLoaded).toBe(2);
      expect(
        (table.state.discovery as { loaded?: Array<{ key: string }> } | null)?.loaded
          ?.map((f) => f.key)
          .sort(),
      ).toEqual([key, '2025/03/02/a.csv']);
      expect(await run(setup)).toMatchObject({ status: 'nothing-new', filesLoaded: 0, commits: 0 });
    },
  );

  it('an empty CSV in its own batch (maxFilesPerBatch: 1) is counted with the batch whose commit records it', async () => {
    const { source, setup } = await zone({}, { maxFilesPerBatch: 1 });
    await source.write('2025/03/01/empty.csv', '');
    await land(source, session, '2025/03/02/a.csv', orders([1, 'placed', 1]));
    await land(source, session, '2025/03/03/b.csv', orders([2, 'placed', 1]));
    const report = await run(setup);
    expect(report).toMatchObject({
      status: 'succeeded',
      filesDiscovered: 3,
      filesLoaded: 3,
      commits: 2,
      batches: 2,
      tableVersion: 1,
      watermark: '2025-03-03',
    });
    expect(report.skipped).toBeUndefined();
    const table = await readTarget(session, setup);
    expect(table.state.totals.filesLoaded).toBe(3);
    expect(await statusOf(setup)).toMatchObject({
      watermark: report.watermark,
      tableVersion: report.tableVersion,
    });
  });

  it('backfill: an empty CSV range before the table exists commits nothing and says so; a zero-row Parquet file creates the table and counts once', async () => {
    const { source, setup } = await zone();
    await source.write('2025/03/01/empty.csv', '');
    const range = { from: '2025-03-01', to: '2025-03-02' };
    const waiting = await backfill(setup, range);
    expect(waiting).toMatchObject({
      status: 'succeeded',
      filesLoaded: 0,
      commits: 0,
      tableVersion: null,
      doneThrough: null,
      skipped: [{ key: '2025/03/01/empty.csv', reason: NO_TABLE_YET }],
    });
    await landEmptyParquet(source, '2025/03/02/empty.parquet');
    const loaded = await backfill(setup, range);
    expect(loaded).toMatchObject({ filesLoaded: 2, tableVersion: 0, doneThrough: '2025-03-02' });
    expect(loaded.skipped).toBeUndefined();
    expect(await backfill(setup, range)).toMatchObject({ status: 'already-done', commits: 0 });
  });
});
