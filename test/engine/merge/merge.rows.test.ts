/**
 * MERGE row semantics on an unpartitioned table: insert, update when not older, stale rows
 * skipped, deletes, idempotent reruns, NULLs in non-key columns and in orderBy. Every result is
 * checked by reading the whole table back through the reader.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DuckSession } from '../../../src/engine/duckdb.js';
import { localFixture, makeBatch, merge, readRows, snapshotOf, type Fixture } from './helpers.js';

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

const KEY = { keyColumns: ['id'], orderBy: 'v' };

/** A table with ids 1..3 at version v=10, one file. */
async function seed(): Promise<void> {
  await makeBatch(
    session,
    'seed',
    `SELECT * FROM (VALUES (1, 'a', 10), (2, 'b', 10), (3, 'c', 10)) t(id, name, v)`,
  );
  const r = await merge(f, { batch: 'seed', ...KEY });
  expect(r).toMatchObject({ version: 0, created: true, inserted: 3 });
}

const rows = () => readRows(f, 'id');

describe('MERGE into a new table', () => {
  it('creates the table from the batch schema in version 0 and inserts every row', async () => {
    await makeBatch(
      session,
      'b',
      `SELECT range AS id, 'n' || range AS name, TIMESTAMPTZ '2024-01-01 00:00:00+00' + to_seconds(range) AS v FROM range(5)`,
    );
    const r = await merge(f, { batch: 'b', keyColumns: ['id'], orderBy: 'v' });
    expect(r).toMatchObject({
      version: 0,
      created: true,
      sourceRows: 5,
      inserted: 5,
      updated: 0,
      filesAdded: 1,
      filesRemoved: 0,
    });
    const snapshot = await snapshotOf(f);
    expect(snapshot.schema.fields.map((x) => [x.name, x.type])).toEqual([
      ['id', 'long'],
      ['name', 'string'],
      ['v', 'timestamp'],
    ]);
    expect(await rows()).toEqual(
      [0, 1, 2, 3, 4].map((i) => ({
        id: String(i),
        name: `n${i}`,
        v: `2024-01-01 00:00:0${i}+00`,
      })),
    );
  });

  it('does not insert rows flagged for delete', async () => {
    await makeBatch(
      session,
      'b',
      `SELECT * FROM (VALUES (1, 'a', 1, false), (2, 'b', 1, true)) t(id, name, v, gone)`,
    );
    const r = await merge(f, { batch: 'b', ...KEY, deleteWhen: 'gone', internalColumns: ['gone'] });
    expect(r).toMatchObject({ inserted: 1, deleteNotFound: 1 });
    expect(await rows()).toEqual([{ id: 1, name: 'a', v: 1 }]);
  });
});

describe('MERGE into an existing table', () => {
  it('updates a matched key when the incoming row is newer, inserts new keys', async () => {
    await seed();
    await makeBatch(
      session,
      'b',
      `SELECT * FROM (VALUES (2, 'B', 11), (4, 'd', 1)) t(id, name, v)`,
    );
    const r = await merge(f, { batch: 'b', ...KEY });
    expect(r).toMatchObject({
      version: 1,
      inserted: 1,
      updated: 1,
      deleted: 0,
      skippedStale: 0,
      filesRemoved: 1,
      rowsCopied: 2,
    });
    expect(await rows()).toEqual([
      { id: 1, name: 'a', v: 10 },
      { id: 2, name: 'B', v: 11 },
      { id: 3, name: 'c', v: 10 },
      { id: 4, name: 'd', v: 1 },
    ]);
  });

  it('skips an older incoming row, counts it as stale and keeps the stored row', async () => {
    await seed();
    await makeBatch(session, 'b', `SELECT * FROM (VALUES (2, 'old', 9)) t(id, name, v)`);
    const r = await merge(f, { batch: 'b', ...KEY });
    expect(r).toMatchObject({
      version: null,
      skippedStale: 1,
      updated: 0,
      inserted: 0,
      filesAdded: 0,
      filesRemoved: 0,
    });
    expect(r.filesRead).toBe(0); // a stale hit is decided from the key scan alone
    expect((await rows())[1]).toEqual({ id: 2, name: 'b', v: 10 });
    expect((await snapshotOf(f)).version).toBe(0);
  });

  it('applies an incoming row with an equal orderBy (equal is not older)', async () => {
    await seed();
    await makeBatch(session, 'b', `SELECT * FROM (VALUES (2, 'same time', 10)) t(id, name, v)`);
    const r = await merge(f, { batch: 'b', ...KEY });
    expect(r).toMatchObject({ version: 1, updated: 1, skippedStale: 0 });
    expect((await rows())[1]).toEqual({ id: 2, name: 'same time', v: 10 });
  });

  it('rerunning the same batch rewrites nothing and commits nothing (rows equal: unchanged)', async () => {
    await seed();
    await makeBatch(
      session,
      'b',
      `SELECT * FROM (VALUES (2, 'B', 11), (4, 'd', 1)) t(id, name, v)`,
    );
    await merge(f, { batch: 'b', ...KEY });
    const before = await snapshotOf(f);
    const again = await merge(f, { batch: 'b', ...KEY });
    expect(again).toMatchObject({
      version: null,
      inserted: 0,
      updated: 0,
      unchanged: 2,
      filesAdded: 0,
      filesRemoved: 0,
      bytesRewritten: 0,
    });
    const after = await snapshotOf(f);
    expect(after.version).toBe(before.version);
    expect(after.files.map((x) => x.path)).toEqual(before.files.map((x) => x.path));
  });

  it('deletes a matched key flagged by deleteWhen when not older', async () => {
    await seed();
    await makeBatch(
      session,
      'b',
      `SELECT * FROM (VALUES (2, 'x', 12, 'D'), (3, 'C', 12, 'U')) t(id, name, v, op)`,
    );
    const r = await merge(f, {
      batch: 'b',
      ...KEY,
      deleteWhen: `op = 'D'`,
      internalColumns: ['op'],
    });
    expect(r).toMatchObject({ version: 1, deleted: 1, updated: 1, inserted: 0, rowsCopied: 1 });
    expect(await rows()).toEqual([
      { id: 1, name: 'a', v: 10 },
      { id: 3, name: 'C', v: 12 },
    ]);
  });

  it('treats the delete of a key that is not in the table as a no-op', async () => {
    await seed();
    await makeBatch(
      session,
      'b',
      `SELECT * FROM (VALUES (9, 'x', 12, true)) t(id, name, v, is_deleted)`,
    );
    const r = await merge(f, {
      batch: 'b',
      ...KEY,
      deleteWhen: 'is_deleted',
      internalColumns: ['is_deleted'],
    });
    expect(r).toMatchObject({ version: null, deleted: 0, inserted: 0, deleteNotFound: 1 });
    expect((await rows()).map((x) => x['id'])).toEqual([1, 2, 3]);
  });

  it('skips a delete older than the stored row', async () => {
    await seed();
    await makeBatch(
      session,
      'b',
      `SELECT * FROM (VALUES (2, 'x', 5, true)) t(id, name, v, is_deleted)`,
    );
    const r = await merge(f, {
      batch: 'b',
      ...KEY,
      deleteWhen: 'is_deleted',
      internalColumns: ['is_deleted'],
    });
    expect(r).toMatchObject({ version: null, deleted: 0, skippedStale: 1 });
    expect((await rows()).map((x) => x['id'])).toEqual([1, 2, 3]);
  });

  it('treats a NULL deleteWhen result as "not deleted"', async () => {
    await seed();
    await makeBatch(
      session,
      'b',
      `SELECT * FROM (VALUES (2, 'B', 12, NULL::BOOLEAN)) t(id, name, v, is_deleted)`,
    );
    const r = await merge(f, {
      batch: 'b',
      ...KEY,
      deleteWhen: 'is_deleted',
      internalColumns: ['is_deleted'],
    });
    expect(r).toMatchObject({ updated: 1, deleted: 0 });
  });

  it('writes NULLs in non-key columns, and replaces NULLs with values', async () => {
    await seed();
    await makeBatch(
      session,
      'b1',
      `SELECT * FROM (VALUES (1, NULL, 11), (5, NULL, 1)) t(id, name, v)`,
    );
    expect(await merge(f, { batch: 'b1', ...KEY })).toMatchObject({ updated: 1, inserted: 1 });
    expect((await rows()).filter((x) => x['name'] === null).map((x) => x['id'])).toEqual([1, 5]);
    await makeBatch(session, 'b2', `SELECT * FROM (VALUES (1, 'back', 12)) t(id, name, v)`);
    expect(await merge(f, { batch: 'b2', ...KEY })).toMatchObject({ updated: 1, unchanged: 0 });
    expect((await rows())[0]).toEqual({ id: 1, name: 'back', v: 12 });
  });

  it('orders NULL orderBy values as the oldest', async () => {
    await makeBatch(
      session,
      'seed',
      `SELECT * FROM (VALUES (1, 'a', 10), (2, 'b', NULL)) t(id, name, v)`,
    );
    await merge(f, { batch: 'seed', ...KEY });
    await makeBatch(
      session,
      'b',
      `SELECT * FROM (VALUES (1, 'null never beats a value', NULL::INTEGER), (2, 'a value beats null', 1)) t(id, name, v)`,
    );
    expect(await merge(f, { batch: 'b', ...KEY })).toMatchObject({ updated: 1, skippedStale: 1 });
    await makeBatch(
      session,
      'b2',
      `SELECT * FROM (VALUES (2, 'x', 2), (3, 'y', NULL)) t(id, name, v)`,
    );
    await merge(f, { batch: 'b2', ...KEY });
    await makeBatch(
      session,
      'b3',
      `SELECT * FROM (VALUES (3, 'null vs null: incoming wins', NULL::INTEGER)) t(id, name, v)`,
    );
    expect(await merge(f, { batch: 'b3', ...KEY })).toMatchObject({ updated: 1 });
    expect(await rows()).toEqual([
      { id: 1, name: 'a', v: 10 },
      { id: 2, name: 'x', v: 2 },
      { id: 3, name: 'null vs null: incoming wins', v: null },
    ]);
  });

  it('fills table columns missing from the batch with NULL and casts batch types to the table types', async () => {
    await seed();
    await makeBatch(
      session,
      'b',
      `SELECT * FROM (VALUES (CAST(3 AS TINYINT), CAST(20 AS SMALLINT))) t(id, v)`,
    );
    const r = await merge(f, { batch: 'b', ...KEY });
    expect(r).toMatchObject({ updated: 1 });
    expect((await rows())[2]).toEqual({ id: 3, name: null, v: 20 });
    expect((await snapshotOf(f)).schema.fields.map((x) => x.type)).toEqual([
      'integer',
      'string',
      'integer',
    ]);
  });

  it('reads nothing and commits nothing for an empty batch', async () => {
    await seed();
    await makeBatch(session, 'b', `SELECT 1 AS id, 'x' AS name, 1 AS v WHERE false`);
    expect(await merge(f, { batch: 'b', ...KEY })).toMatchObject({
      version: null,
      sourceRows: 0,
      filesScanned: 0,
      filesRead: 0,
    });
  });

  it('matches several stored rows of many keys in one pass (1000-row batch)', async () => {
    await makeBatch(session, 'seed', `SELECT range AS id, 'x' AS name, 1 AS v FROM range(2000)`);
    await merge(f, { batch: 'seed', ...KEY });
    await makeBatch(session, 'b', `SELECT range * 3 AS id, 'y' AS name, 2 AS v FROM range(1000)`);
    const r = await merge(f, { batch: 'b', ...KEY });
    expect(r).toMatchObject({ updated: 667, inserted: 333, rowsCopied: 2000 - 667 });
    const all = await readRows(f, 'id');
    expect(all).toHaveLength(2333);
    expect(all.filter((x) => x['name'] === 'y')).toHaveLength(1000);
  });
});
