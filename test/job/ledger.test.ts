/**
 * The ledger of an append job by modification time (issue 20, item 1): a file touched, copied in
 * place or overwritten after it left the settle window is not taken for a new file. Through the
 * real job: local folders and s3rver, real DuckDB and Delta logs.
 */
import { utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalStorage } from '../../src/storage/local.js';
import type { S3rverHandle } from '../helpers/s3rver.js';
import { reset } from './backfill-helpers.js';
import {
  closeS3JobEnv,
  DuckSession,
  duplicateRids,
  land,
  makeConfig,
  openS3JobEnv,
  orders,
  readTarget,
  run,
  tempDir,
  type OrderRow,
} from './helpers.js';

let s3: S3rverHandle;
let session: DuckSession;
const dirs: string[] = [];

beforeAll(async () => {
  ({ s3, session } = await openS3JobEnv());
});
afterAll(() => closeS3JobEnv(s3, session, dirs));

/** A local zone with a.csv modified 10 minutes ago and b.csv now, loaded once with settle 1m: a.csv has left the window. */
async function loadedTwo(onOverwrite: 'reload' | 'ignore'): Promise<{
  dir: string;
  src: LocalStorage;
  setup: ReturnType<typeof makeConfig>;
  a: OrderRow[];
}> {
  const dir = await tempDir('src', dirs);
  const src = new LocalStorage(dir);
  const setup = makeConfig({
    source: { uri: dir, discover: { by: 'modified', settle: '1m', onOverwrite } },
    target: { uri: await tempDir('t', dirs), mode: 'append' },
  });
  const a = orders([1, 'a', 1], [2, 'b', 1]);
  await land(src, session, 'feed/a.csv', a);
  const old = new Date(Date.now() - 10 * 60_000);
  await utimes(join(dir, 'feed/a.csv'), old, old);
  await land(src, session, 'feed/b.csv', orders([3, 'c', 1]));
  expect(await run(setup)).toMatchObject({ status: 'succeeded', inserted: 3 });
  const state = (await readTarget(session, setup)).state;
  expect(
    (state.discovery as { loaded?: Array<{ key: string }> } | null)?.loaded?.map((e) => e.key),
  ).toEqual(['feed/b.csv']);
  expect(state.ledger?.files).toHaveLength(1);
  return { dir, src, setup, a };
}

describe('append by modification time: a file loaded before it left the settle window', () => {
  it('onOverwrite ignore: touched after the window, it is not appended again (3 rows stay 3)', async () => {
    const { dir, setup } = await loadedTwo('ignore');
    const now = new Date();
    await utimes(join(dir, 'feed/a.csv'), now, now);
    const second = await run(setup);
    expect(second).toMatchObject({ filesLoaded: 0, inserted: 0 });
    // A small local file is known by its content: the touch leaves a.csv the file the ledger
    // recorded (b.csv the state remembers).
    expect(second.skippedByReason).toMatchObject({ 'already loaded': 2 });
    expect((await readTarget(session, setup)).rows).toHaveLength(3);
  });

  it('onOverwrite reload: touched after the window, it is already loaded (nothing appended)', async () => {
    const { dir, setup } = await loadedTwo('reload');
    const now = new Date();
    await utimes(join(dir, 'feed/a.csv'), now, now);
    const second = await run(setup);
    expect(second).toMatchObject({ status: 'nothing-new', filesLoaded: 0, inserted: 0 });
    expect(second.skippedByReason).toMatchObject({ 'already loaded': 2 }); // a.csv by the ledger, b.csv by the state
    expect((await readTarget(session, setup)).rows).toHaveLength(3);
  });

  it('onOverwrite reload: rewritten with other rows after the window, its earlier rows are replaced', async () => {
    const { src, setup } = await loadedTwo('reload');
    await land(src, session, 'feed/a.csv', orders([1, 'a-fixed', 2]));
    expect(await run(setup)).toMatchObject({
      filesLoaded: 1,
      inserted: 1,
      filesReplaced: 1,
      rowsReplaced: 2,
    });
    const rows = (await readTarget(session, setup)).rows;
    expect(rows.map((r) => [r.order_id, r.status]).sort()).toEqual([
      [1, 'a-fixed'],
      [3, 'c'],
    ]);
  });

  it('onOverwrite ignore: rewritten with other rows after the window, it is not appended (skipped as overwritten, ignored)', async () => {
    const { src, setup } = await loadedTwo('ignore');
    await land(src, session, 'feed/a.csv', orders([1, 'a-fixed', 2], [4, 'd', 1]));
    const second = await run(setup);
    expect(second).toMatchObject({ filesLoaded: 0, inserted: 0 });
    expect(second.skippedByReason).toMatchObject({ 'overwritten, ignored': 1 });
    const rows = (await readTarget(session, setup)).rows;
    expect(rows.map((r) => [r.order_id, r.status]).sort()).toEqual([
      [1, 'a'],
      [2, 'b'],
      [3, 'c'],
    ]);
    // Remembered as ignored: the next run does not take it for new either.
    expect(await run(setup)).toMatchObject({ status: 'nothing-new', inserted: 0 });
    expect((await readTarget(session, setup)).rows).toHaveLength(3);
  });

  it('a renamed job adopting the state takes the ledger along (copied into its folder): a touch is still not appended', async () => {
    const { dir, setup } = await loadedTwo('ignore');
    const renamed = { ...setup, job: { ...setup.job, name: 'orders_v2' } };
    expect(await run(renamed, { adoptStateOf: 'orders' })).toMatchObject({
      adoptedStateOf: 'orders',
    });
    expect((await readTarget(session, renamed)).state.ledger?.files).toEqual([
      expect.objectContaining({ path: expect.stringMatching(/^_tidemark\/ledger\/orders_v2\//) }),
    ]);
    const now = new Date();
    await utimes(join(dir, 'feed/a.csv'), now, now);
    expect(await run(renamed)).toMatchObject({ filesLoaded: 0, inserted: 0 });
    expect((await readTarget(session, renamed)).rows).toHaveLength(3);
  });

  it('S3: the same bytes put again after the window (same ETag, new LastModified) are already loaded', async () => {
    const zone = s3.landingZone();
    const setup = makeConfig(
      {
        source: { uri: zone.uri, discover: { by: 'modified', settle: '1s' } },
        target: { uri: await tempDir('t', dirs), mode: 'append' },
      },
      zone.storageConfig,
    );
    const a = orders([1, 'a', 1]);
    // Back-dated, not waited for: a.csv 10 minutes ago, b.csv 5 (the settle window is 1 s), so
    // a.csv put again now has a later LastModified than both.
    const now = Math.floor(Date.now() / 1000) * 1000;
    await land(zone.source, session, 'feed/a.csv', a);
    await s3.setLastModified(`${zone.prefix}feed/a.csv`, new Date(now - 600_000));
    await run(setup);
    await land(zone.source, session, 'feed/b.csv', orders([2, 'b', 1]));
    await s3.setLastModified(`${zone.prefix}feed/b.csv`, new Date(now - 300_000));
    expect(await run(setup)).toMatchObject({ filesLoaded: 1 });
    const before = await zone.source.head('feed/a.csv');
    expect(before!.lastModified.getTime()).toBe(now - 600_000);
    await land(zone.source, session, 'feed/a.csv', a);
    const after = await zone.source.head('feed/a.csv');
    expect(after!.etag).toBe(before!.etag);
    expect(after!.lastModified.getTime()).toBeGreaterThan(before!.lastModified.getTime());
    const third = await run(setup);
    expect(third).toMatchObject({ status: 'nothing-new', filesLoaded: 0, inserted: 0 });
    const rows = (await readTarget(session, setup)).rows;
    expect(rows).toHaveLength(2);
    expect(duplicateRids(rows)).toEqual([]);
  });
});

describe('the ledger and reset', () => {
  it('a reset back (--force, append) loads the files after the new watermark again, replacing their rows: no duplicates, none skipped', async () => {
    const dir = await tempDir('src', dirs);
    const src = new LocalStorage(dir);
    const setup = makeConfig({
      source: { uri: dir, discover: { by: 'modified', settle: '1m' } },
      target: { uri: await tempDir('t', dirs), mode: 'append' },
    });
    const t0 = Date.now();
    for (const [key, rows, ago] of [
      ['feed/a.csv', orders([1, 'a', 1]), 120],
      ['feed/b.csv', orders([2, 'b', 1]), 60],
    ] as const) {
      await land(src, session, key, rows);
      const t = new Date(t0 - ago * 60_000);
      await utimes(join(dir, key), t, t);
    }
    expect(await run(setup)).toMatchObject({ inserted: 2 });
    await reset(setup, { to: new Date(t0 - 90 * 60_000).toISOString(), force: true });
    // b.csv lies after the new watermark: loaded again (found unchanged), though the ledger recorded it.
    const again = await run(setup);
    expect(again).toMatchObject({
      status: 'succeeded',
      filesLoaded: 1,
      inserted: 0,
      filesAlreadyLoaded: 1,
    });
    expect(again.skippedByReason?.['already loaded']).toBeUndefined();
    const rows = (await readTarget(session, setup)).rows;
    expect(rows.map((r) => r.order_id).sort()).toEqual([1, 2]);
    expect(duplicateRids(rows)).toEqual([]);
  });
});
