/**
 * Which files a MERGE reads and rewrites: only files that hold batch keys are rewritten, all
 * others keep their paths; min/max stats prune the key scan; rewritten files stay in key order.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DuckSession } from '../../../src/engine/duckdb.js';
import { str } from '../../../src/engine/sql.js';
import { localFixture, makeBatch, merge, readRows, snapshotOf, type Fixture } from './helpers.js';
import { join } from 'node:path';

let session: DuckSession;
let f: Fixture;
beforeAll(async () => {
  session = await DuckSession.open({ threads: 2 });
});
afterAll(() => session.close());
beforeEach(async () => {
  f = await localFixture(session);
});
afterEach(async () => {
  await f.close();
});

const KEY = { keyColumns: ['order_id'], orderBy: 'updated_at' };

/** 1000 orders in 10 files of 100, clustered by order_id. */
async function seedClustered(): Promise<void> {
  await makeBatch(
    session,
    'seed',
    `SELECT range AS order_id, range % 7 AS amount, 1 AS updated_at FROM range(1000)`,
  );
  const r = await merge(f, { batch: 'seed', ...KEY, targetFileRows: 100 });
  expect(r.filesAdded).toBe(10);
}

describe('untouched files', () => {
  it('rewrites only the file holding the batch keys; the others keep their paths', async () => {
    await seedClustered();
    const before = await snapshotOf(f);
    await makeBatch(
      session,
      'b',
      `SELECT range AS order_id, 100 AS amount, 2 AS updated_at FROM range(450, 455)`,
    );
    const r = await merge(f, { batch: 'b', ...KEY });
    const after = await snapshotOf(f);
    const touched = before.files.filter((x) => !after.files.some((y) => y.path === x.path));
    expect(touched).toHaveLength(1);
    expect(JSON.parse(touched[0]!.stats!)).toMatchObject({
      minValues: { order_id: 400 },
      maxValues: { order_id: 499 },
    });
    expect(r).toMatchObject({
      updated: 5,
      inserted: 0,
      filesScanned: 1,
      filesRead: 1,
      filesRemoved: 1,
      filesAdded: 1,
      rowsCopied: 95,
    });
    expect(r.bytesRewritten).toBe(touched[0]!.size);
    expect(after.files).toHaveLength(10);
    const kept = before.files.filter((x) => x !== touched[0]).map((x) => x.path);
    expect(after.files.map((x) => x.path)).toEqual(expect.arrayContaining(kept));
    const rows = await readRows(f, 'order_id');
    expect(rows).toHaveLength(1000);
    expect(rows.filter((x) => x['amount'] === '100').map((x) => x['order_id'])).toEqual([
      '450',
      '451',
      '452',
      '453',
      '454',
    ]);
  });

  it('writes new keys to a new file without reading or rewriting any stored file', async () => {
    await seedClustered();
    const before = await snapshotOf(f);
    await makeBatch(
      session,
      'b',
      `SELECT range AS order_id, 1 AS amount, 1 AS updated_at FROM range(1000, 1010)`,
    );
    const r = await merge(f, { batch: 'b', ...KEY });
    expect(r).toMatchObject({
      inserted: 10,
      filesScanned: 0,
      filesRead: 0,
      filesRemoved: 0,
      filesAdded: 1,
      bytesRewritten: 0,
    });
    const after = await snapshotOf(f);
    expect(after.files.map((x) => x.path)).toEqual(
      expect.arrayContaining(before.files.map((x) => x.path)),
    );
  });

  it('scans keys of files whose range covers a batch key but rewrites none when the key is absent', async () => {
    await makeBatch(
      session,
      'seed',
      `SELECT range * 2 AS order_id, 0 AS amount, 1 AS updated_at FROM range(100)`,
    );
    await merge(f, { batch: 'seed', ...KEY });
    await makeBatch(session, 'b', `SELECT 51 AS order_id, 0 AS amount, 1 AS updated_at`); // odd: inside [0, 198], not present
    const r = await merge(f, { batch: 'b', ...KEY });
    expect(r).toMatchObject({ inserted: 1, filesScanned: 1, filesRead: 0, filesRemoved: 0 });
  });

  it('keeps rewritten files in key order (clustered tables stay clustered)', async () => {
    await seedClustered();
    await makeBatch(
      session,
      'b',
      `SELECT range AS order_id, 5 AS amount, 2 AS updated_at FROM range(499, 400, -7)`,
    );
    await merge(f, { batch: 'b', ...KEY });
    const after = await snapshotOf(f);
    const fresh = after.files.find((x) => JSON.parse(x.stats!).minValues.order_id === 400)!;
    const path = join(f.dir, decodeURIComponent(fresh.path));
    const ids = await session.all(`SELECT order_id FROM read_parquet(${str(path)})`);
    const values = ids.map((x) => Number(x['order_id']));
    expect(values).toEqual([...values].sort((a, b) => a - b));
    expect(values).toHaveLength(100);
  });

  it('deletes every row of a file: the file is removed and nothing replaces it', async () => {
    await makeBatch(
      session,
      'seed',
      `SELECT range AS order_id, 0 AS amount, 1 AS updated_at FROM range(4)`,
    );
    await merge(f, { batch: 'seed', ...KEY });
    await makeBatch(
      session,
      'b',
      `SELECT range AS order_id, 0 AS amount, 2 AS updated_at, true AS gone FROM range(4)`,
    );
    const r = await merge(f, { batch: 'b', ...KEY, deleteWhen: 'gone', internalColumns: ['gone'] });
    expect(r).toMatchObject({ deleted: 4, filesRemoved: 1, filesAdded: 0 });
    expect((await snapshotOf(f)).files).toHaveLength(0);
    expect(await readRows(f, 'order_id')).toEqual([]);
  });
});

describe('stats pruning', () => {
  it('adds 1 ms to timestamp maxima (stats are ms-truncated), so a key just above the max still matches', async () => {
    const t = (us: number) => `TIMESTAMPTZ '2024-05-01 00:00:00+00' + to_microseconds(${us})`;
    await makeBatch(
      session,
      'seed',
      `SELECT * FROM (VALUES (${t(100)}, 'a', 1), (${t(900)}, 'b', 1)) x(happened, name, v)`,
    );
    await merge(f, { batch: 'seed', keyColumns: ['happened'], orderBy: 'v' });
    const stats = JSON.parse((await snapshotOf(f)).files[0]!.stats!);
    expect(stats.maxValues.happened).toBe('2024-05-01T00:00:00.000Z'); // 900 µs truncated away
    await makeBatch(session, 'b', `SELECT ${t(900)} AS happened, 'B' AS name, 2 AS v`);
    const r = await merge(f, { batch: 'b', keyColumns: ['happened'], orderBy: 'v' });
    expect(r).toMatchObject({ updated: 1, inserted: 0 });
    expect((await readRows(f, 'happened')).map((x) => x['name'])).toEqual(['a', 'B']);
  });

  it('prunes on string keys', async () => {
    await makeBatch(
      session,
      'seed',
      `SELECT 'k' || lpad(range::VARCHAR, 4, '0') AS id, 1 AS v FROM range(300)`,
    );
    await merge(f, { batch: 'seed', keyColumns: ['id'], orderBy: 'v', targetFileRows: 100 });
    await makeBatch(session, 'b', `SELECT 'k0150' AS id, 2 AS v`);
    const r = await merge(f, { batch: 'b', keyColumns: ['id'], orderBy: 'v' });
    expect(r).toMatchObject({ updated: 1, filesScanned: 1 });
  });
});
