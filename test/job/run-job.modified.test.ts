/**
 * The ingestion job end to end with modification-time discovery: sources on s3rver (LastModified
 * at second precision, the store's clock) and in a local folder. A file dated below the watermark
 * (a multipart upload, whose LastModified is its start time) is staged by back-dating it: in
 * s3rver's store folder, or with fs.utimes.
 */
import { randomUUID } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalStorage } from '../../src/storage/local.js';
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

const byModified = { by: 'modified', settle: '15m' };
describe('modification-time discovery end to end (sources on s3rver)', () => {
  it('merge: initial load of mixed formats, then a file landing in the same second as the watermark loads exactly once', async () => {
    // The tie: the late file is stamped with the watermark's own second (s3rver's LastModified
    // set back), so the test does not depend on how fast the first run is.
    const zone = s3.landingZone();
    const setup = makeConfig(
      {
        source: { uri: zone.uri, discover: byModified },
        target: mergeTarget(await tempDir('t', dirs)),
      },
      zone.storageConfig,
    );
    const landed: OrderRow[] = [];
    const put = async (key: string, rows: OrderRow[]) => {
      landed.push(...rows);
      await land(zone.source, session, key, rows);
    };
    // c.csv a second after a and b (back-dated, not waited for): the watermark's second is its own.
    const now = Math.floor(Date.now() / 1000) * 1000;
    await put('feed/a.parquet', orders([1, 'placed', 1], [2, 'placed', 1]));
    await put('feed/b.ndjson', orders([1, 'paid', 2]));
    await put('feed/c.csv', orders([3, 'placed', 1], [2, 'paid', 2]));
    await s3.setLastModified(`${zone.prefix}feed/a.parquet`, new Date(now - 2000));
    await s3.setLastModified(`${zone.prefix}feed/b.ndjson`, new Date(now - 2000));
    await s3.setLastModified(`${zone.prefix}feed/c.csv`, new Date(now - 1000));
    const first = await run(setup);
    await put('feed/tie.csv', orders([3, 'paid', 2]));
    const c = await zone.source.head('feed/c.csv');
    await s3.setLastModified(`${zone.prefix}feed/tie.csv`, c!.lastModified);
    const tie = await zone.source.head('feed/tie.csv');
    expect(tie!.lastModified).toEqual(c!.lastModified);

    expect(first).toMatchObject({
      status: 'succeeded',
      filesLoaded: 3,
      rowsRead: 5,
      watermark: c!.lastModified.toISOString(),
    });
    const second = await run(setup);
    expect(second).toMatchObject({
      status: 'succeeded',
      filesDiscovered: 1,
      filesLoaded: 1,
      updated: 1,
    });
    expect(second.skippedByReason).toMatchObject({ 'already loaded': 3 });
    expect(await run(setup)).toMatchObject({
      status: 'nothing-new',
      commits: 0,
      tableVersion: second.tableVersion,
    });

    const table = await readTarget(session, setup);
    expect(table.rows).toEqual(expectedLatest(landed));
    expect(new Set(table.sourceFiles.values())).toEqual(
      new Set([`${zone.uri}feed/b.ndjson`, `${zone.uri}feed/c.csv`, `${zone.uri}feed/tie.csv`]),
    );
  });

  it('append into a target on s3rver (singleWriter): each landed row exactly once over incremental runs', async () => {
    const zone = s3.landingZone();
    const target = `s3://${s3.bucket}/lake-${randomUUID()}/events`;
    const setup = makeConfig(
      {
        source: { uri: zone.uri, discover: byModified },
        target: { uri: target, mode: 'append' },
        maxFilesPerBatch: 1,
      },
      { ...zone.storageConfig, singleWriter: true },
    );
    const landed: OrderRow[] = [];
    const put = async (key: string, rows: OrderRow[]) => {
      landed.push(...rows);
      await land(zone.source, session, key, rows);
    };
    await put('x/1.csv', orders([1, 'placed', 1], [1, 'placed', 1]));
    await put('y/2.ndjson', orders([2, 'placed', 1]));
    expect(await run(setup)).toMatchObject({
      status: 'succeeded',
      filesLoaded: 2,
      commits: 2,
      inserted: 3,
    });
    await put('x/3.parquet', orders([2, 'paid', 2]));
    expect(await run(setup)).toMatchObject({ status: 'succeeded', filesLoaded: 1, inserted: 1 });
    expect(await run(setup)).toMatchObject({ status: 'nothing-new', commits: 0 });
    const table = await readTarget(session, setup);
    expect(duplicateRids(table.rows)).toEqual([]);
    expect(table.rows).toEqual(sortRows(landed));
  });
});

/** A landing zone whose files a test can date, and the job reading it. */
interface DatedZone {
  setup: ReturnType<typeof makeConfig>;
  /** Land `rows` as `key` with LastModified `mtimeMs` (whole seconds). */
  landAt(key: string, rows: OrderRow[], mtimeMs: number): Promise<void>;
}

/**
 * A multipart upload completes after a run, dated 5 minutes below that run's watermark: inside the
 * 15-minute settle window it loads, once; a file an hour old is outside the window and does not.
 */
async function settleWindowScenario(zone: DatedZone): Promise<void> {
  const { setup } = zone;
  const t = Math.floor((Date.now() - 60_000) / 1000) * 1000;
  await zone.landAt('in/a.csv', orders([1, 'placed', 1]), t);
  const first = await run(setup);
  expect(first).toMatchObject({
    status: 'succeeded',
    filesLoaded: 1,
    watermark: new Date(t).toISOString(),
  });

  const multipart = orders([1, 'paid', 2], [2, 'placed', 1]);
  await zone.landAt('in/multipart.parquet', multipart, t - 5 * 60_000);
  await zone.landAt('in/ancient.csv', orders([9, 'placed', 1]), t - 60 * 60_000);
  const second = await run(setup);
  expect(second).toMatchObject({
    status: 'succeeded',
    filesLoaded: 1,
    inserted: 1,
    updated: 1,
    watermark: new Date(t).toISOString(),
  });
  expect(await run(setup)).toMatchObject({
    status: 'nothing-new',
    commits: 0,
    tableVersion: second.tableVersion,
  });

  const table = await readTarget(session, setup);
  expect(table.rows.map((r) => [r.order_id, r.status])).toEqual([
    [1, 'paid'],
    [2, 'placed'],
  ]);
  expect(table.rows.map((r) => r.rid).sort()).toEqual(multipart.map((r) => r.rid).sort());
  expect(table.state.discovery).toMatchObject({ mode: 'modified', watermark: t });
}

const SETTLE_CASE =
  'a file whose LastModified is below the watermark but inside the settle window loads once; one older than the window does not';

describe('modification-time discovery end to end: the settle window', () => {
  it(`${SETTLE_CASE} (source on s3rver, back-dated in its store)`, async () => {
    const zone = s3.landingZone();
    await settleWindowScenario({
      setup: makeConfig(
        {
          source: { uri: zone.uri, discover: byModified },
          target: mergeTarget(await tempDir('t', dirs)),
        },
        zone.storageConfig,
      ),
      landAt: async (key, rows, mtimeMs) => {
        await land(zone.source, session, key, rows);
        await s3.setLastModified(zone.prefix + key, new Date(mtimeMs));
      },
    });
  });

  it(`${SETTLE_CASE} (local source folder, dated with utimes)`, async () => {
    const root = await tempDir('src', dirs);
    const source = new LocalStorage(root);
    await settleWindowScenario({
      setup: makeConfig({
        source: { uri: root, discover: byModified },
        target: mergeTarget(await tempDir('t', dirs)),
      }),
      landAt: async (key, rows, mtimeMs) => {
        await land(source, session, key, rows);
        const file = path.join(root, ...key.split('/'));
        await fsp.utimes(file, mtimeMs / 1000, mtimeMs / 1000);
      },
    });
  });
});
