/**
 * The ingestion job end to end with partition discovery, sources on s3rver (S3Storage, the
 * job's own client, credentials from the environment as in production), targets in a local
 * folder or on s3rver (single writer: s3rver ignores If-None-Match).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { S3rverHandle } from '../helpers/s3rver.js';
import {
  closeS3JobEnv,
  DuckSession,
  duplicateRids,
  expectedLatest,
  land,
  makeConfig,
  mergeTarget,
  openS3JobEnv,
  type OrderRow,
  orders,
  readTarget,
  run,
  sortRows,
  tempDir,
} from './helpers.js';

let s3: S3rverHandle;
let session: DuckSession;
const dirs: string[] = [];

beforeAll(async () => {
  ({ s3, session } = await openS3JobEnv());
});
afterAll(() => closeS3JobEnv(s3, session, dirs));

const byDay = { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 2 };

describe('partition discovery end to end (sources on s3rver)', () => {
  it("merge: initial load of mixed CSV, Parquet and NDJSON; latest status per order wins; _source_file names the file's URI", async () => {
    const zone = s3.landingZone();
    const setup = makeConfig(
      { source: { uri: zone.uri, discover: byDay }, target: mergeTarget(await tempDir('t', dirs)) },
      zone.storageConfig,
    );
    // The last two rows of day 1 are the same event sent twice (duplicates within a day).
    const day1 = orders([1, 'placed', 1], [2, 'placed', 1], [1, 'paid', 2], [1, 'paid', 2]);
    const day2 = orders([2, 'paid', 2], [3, 'placed', 1]);
    const day3 = orders([1, 'shipped', 3], [3, 'cancelled', 2], [4, 'placed', 1]);
    await land(zone.source, session, '2025/06/01/a.csv', day1.slice(0, 2));
    await land(zone.source, session, '2025/06/01/b.parquet', day1.slice(2));
    await land(zone.source, session, '2025/06/02/c.ndjson', day2);
    await land(zone.source, session, '2025/06/03/d.parquet', day3);

    const report = await run(setup);
    expect(report).toMatchObject({
      status: 'succeeded',
      filesDiscovered: 4,
      filesLoaded: 4,
      rowsRead: 9,
      watermark: '2025-06-03',
      commits: 1,
    });
    const table = await readTarget(session, setup);
    expect(table.rows.map((r) => [r.order_id, r.status, r.seq])).toEqual(
      expect.arrayContaining([
        [1, 'shipped', 3],
        [2, 'paid', 2],
        [3, 'cancelled', 2],
        [4, 'placed', 1],
      ]),
    );
    expect(table.rows).toHaveLength(4);
    expect(table.columns).toEqual(
      expect.arrayContaining([
        'order_id',
        'status',
        'seq',
        'rid',
        '_source_file',
        '_source_modified',
      ]),
    );
    expect(table.columns).not.toContain('_source_row');
    expect(table.sourceFiles.get(day3[0]!.rid)).toBe(`${zone.uri}2025/06/03/d.parquet`);
    expect(table.sourceFiles.get(day2[0]!.rid)).toBe(`${zone.uri}2025/06/02/c.ndjson`);
  });

  it('merge: an incremental run loads only the new day and a late file in a lookback day; a late older event never rolls a row back', async () => {
    const zone = s3.landingZone();
    const setup = makeConfig(
      { source: { uri: zone.uri, discover: byDay }, target: mergeTarget(await tempDir('t', dirs)) },
      zone.storageConfig,
    );
    const landed: OrderRow[] = [];
    const put = async (key: string, rows: OrderRow[]) => {
      landed.push(...rows);
      await land(zone.source, session, key, rows);
    };
    await put('2025/06/01/a.csv', orders([1, 'placed', 1], [2, 'placed', 1]));
    await put('2025/06/02/b.parquet', orders([1, 'paid', 2], [3, 'placed', 1]));
    await put('2025/06/03/c.ndjson', orders([2, 'paid', 2]));
    const first = await run(setup);
    expect(first).toMatchObject({ status: 'succeeded', filesLoaded: 3, watermark: '2025-06-03' });

    await put('2025/06/04/d.csv', orders([4, 'placed', 1], [3, 'paid', 2]));
    // Late into 2025-06-02 (inside lookback 2): order 1 is already at seq 2, this seq-1 event is stale.
    const late = orders([1, 'placed-late', 1], [5, 'placed', 1]);
    await put('2025/06/02/late.parquet', late);
    const second = await run(setup);
    expect(second).toMatchObject({
      status: 'succeeded',
      filesDiscovered: 2,
      filesLoaded: 2,
      rowsRead: 4,
      watermark: '2025-06-04',
      skippedStale: 1,
    });
    expect(second.partitionsListed).toEqual([
      '2025/06/01/',
      '2025/06/02/',
      '2025/06/03/',
      '2025/06/04/',
    ]);
    expect(second.skippedByReason).toEqual({ 'already loaded': 3 });

    const table = await readTarget(session, setup);
    expect(table.rows).toEqual(expectedLatest(landed));
    expect(table.sourceFiles.get(late[1]!.rid)).toBe(`${zone.uri}2025/06/02/late.parquet`);
    expect(table.state.discovery).toMatchObject({ mode: 'partition', watermark: '2025-06-04' });
  });

  it('a rerun with nothing new commits nothing: same table version, status nothing-new', async () => {
    const zone = s3.landingZone();
    const setup = makeConfig(
      { source: { uri: zone.uri, discover: byDay }, target: mergeTarget(await tempDir('t', dirs)) },
      zone.storageConfig,
    );
    await land(zone.source, session, '2025/06/01/a.csv', orders([1, 'placed', 1]));
    const first = await run(setup);
    const before = await readTarget(session, setup);
    const again = await run(setup);
    expect(again).toMatchObject({
      status: 'nothing-new',
      filesLoaded: 0,
      commits: 0,
      tableVersion: first.tableVersion,
      watermark: '2025-06-01',
    });
    const after = await readTarget(session, setup);
    expect(after.snapshot!.version).toBe(before.snapshot!.version);
    expect(after.state).toEqual(before.state);
  });

  it('append: every landed row appears exactly once across initial and incremental runs, with a late file', async () => {
    const zone = s3.landingZone();
    const setup = makeConfig(
      {
        source: { uri: zone.uri, discover: byDay },
        target: { uri: await tempDir('t', dirs), mode: 'append' },
        maxFilesPerBatch: 2,
      },
      zone.storageConfig,
    );
    const landed: OrderRow[] = [];
    const put = async (key: string, rows: OrderRow[]) => {
      landed.push(...rows);
      await land(zone.source, session, key, rows);
    };
    await put('2025/06/01/a.csv', orders([1, 'placed', 1], [1, 'placed', 1]));
    await put('2025/06/01/b.ndjson', orders([2, 'placed', 1]));
    await put('2025/06/02/c.parquet', orders([1, 'paid', 2]));
    expect(await run(setup)).toMatchObject({
      status: 'succeeded',
      filesLoaded: 3,
      batches: 2,
      commits: 2,
      inserted: 4,
    });
    await put('2025/06/03/d.csv', orders([3, 'placed', 1]));
    await put('2025/06/01/late.csv', orders([2, 'paid', 2]));
    expect(await run(setup)).toMatchObject({ status: 'succeeded', filesLoaded: 2, inserted: 2 });
    expect(await run(setup)).toMatchObject({ status: 'nothing-new' });

    const table = await readTarget(session, setup);
    expect(duplicateRids(table.rows)).toEqual([]);
    expect(table.rows).toEqual(sortRows(landed));
  });

  it('merge into a target on s3rver (singleWriter): initial, incremental and no-op runs', async () => {
    const zone = s3.landingZone();
    const target = `s3://${s3.bucket}/lake-${randomUUID()}/orders`;
    const setup = makeConfig(
      { source: { uri: zone.uri, discover: byDay }, target: mergeTarget(target) },
      { ...zone.storageConfig, singleWriter: true },
    );
    const landed: OrderRow[] = [];
    const put = async (key: string, rows: OrderRow[]) => {
      landed.push(...rows);
      await land(zone.source, session, key, rows);
    };
    await put('2025/06/01/a.parquet', orders([1, 'placed', 1], [2, 'placed', 1]));
    await put('2025/06/02/b.csv', orders([1, 'paid', 2]));
    expect(await run(setup)).toMatchObject({
      status: 'succeeded',
      filesLoaded: 2,
      tableVersion: 0,
    });
    await put('2025/06/03/c.ndjson', orders([2, 'cancelled', 2], [3, 'placed', 1]));
    expect(await run(setup)).toMatchObject({
      status: 'succeeded',
      filesLoaded: 1,
      tableVersion: 1,
      updated: 1,
      inserted: 1,
    });
    expect(await run(setup)).toMatchObject({ status: 'nothing-new', tableVersion: 1 });
    const table = await readTarget(session, setup);
    expect(table.rows).toEqual(expectedLatest(landed));
  });
});
