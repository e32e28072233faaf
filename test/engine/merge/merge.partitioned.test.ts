/**
 * MERGE on partitioned tables: a batch row matches its key's stored row in whatever partition it
 * sits (a key moves partition; a delete finds it anywhere), key statistics and key partition
 * columns prune files, NULL partitions, composite keys.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DuckSession } from '../../../src/engine/duckdb.js';
import { appendAndCommit } from '../../../scripts/lib/tables.js';
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

/** Ids 0..29 over three days (10 per day) plus two rows with a NULL day. */
async function seed(): Promise<void> {
  await makeBatch(
    session,
    'seed',
    `SELECT range AS id, DATE '2024-03-01' + CAST(range // 10 AS INTEGER) AS day, 'x' AS name, 1 AS v FROM range(30)
     UNION ALL SELECT * FROM (VALUES (100, NULL::DATE, 'n', 1), (101, NULL::DATE, 'n', 1))`,
  );
  const r = await merge(f, { batch: 'seed', ...KEY, partitionBy: ['day'] });
  expect(r).toMatchObject({ created: true, inserted: 32, filesAdded: 4 });
}

const partitionOf = (values: Record<string, string | null>) => values['day'] ?? null;

describe('partitioned MERGE', () => {
  it('creates a table partitioned by the given column with one folder per value', async () => {
    await seed();
    const snapshot = await snapshotOf(f);
    expect(snapshot.partitionColumns).toEqual(['day']);
    expect(snapshot.files.map((x) => partitionOf(x.partitionValues)).sort()).toEqual([
      '2024-03-01',
      '2024-03-02',
      '2024-03-03',
      null,
    ]);
    expect(snapshot.files.find((x) => x.partitionValues['day'] === null)!.path).toMatch(
      /^day=__HIVE_DEFAULT_PARTITION__\//,
    );
  });

  it('reads and rewrites only the files whose key range holds a batch key', async () => {
    await seed();
    const before = await snapshotOf(f);
    await makeBatch(
      session,
      'b',
      `SELECT * FROM (VALUES (12, DATE '2024-03-02', 'updated', 2), (40, DATE '2024-03-09', 'new day', 1), (200, NULL::DATE, 'new null', 1)) t(id, day, name, v)`,
    );
    const r = await merge(f, { batch: 'b', ...KEY });
    expect(r).toMatchObject({ updated: 1, inserted: 2, filesRemoved: 1 });
    // Key statistics leave day 2's file (ids 10..19) alone: the other days' and the NULL partition's do not hold 12, 40 or 200.
    expect(r.filesScanned).toBe(1);
    const after = await snapshotOf(f);
    const untouched = before.files
      .filter((x) => partitionOf(x.partitionValues) !== '2024-03-02')
      .map((x) => x.path);
    expect(after.files.map((x) => x.path)).toEqual(expect.arrayContaining(untouched));
    const rows = await readRows(f, 'id');
    expect(rows).toHaveLength(34);
    expect(rows.find((x) => x['id'] === '12')).toEqual({
      id: '12',
      day: '2024-03-02',
      name: 'updated',
      v: 2,
    });
    expect(rows.find((x) => x['id'] === '40')).toEqual({
      id: '40',
      day: '2024-03-09',
      name: 'new day',
      v: 1,
    });
    expect(rows.find((x) => x['id'] === '200')).toEqual({
      id: '200',
      day: null,
      name: 'new null',
      v: 1,
    });
  });

  it('matches rows in the NULL partition', async () => {
    await seed();
    await makeBatch(session, 'b', `SELECT 101 AS id, NULL::DATE AS day, 'n2' AS name, 2 AS v`);
    const r = await merge(f, { batch: 'b', ...KEY });
    expect(r).toMatchObject({ updated: 1, inserted: 0, filesRemoved: 1 });
    expect((await readRows(f, 'id')).find((x) => x['id'] === '101')).toEqual({
      id: '101',
      day: null,
      name: 'n2',
      v: 2,
    });
  });

  it('a key moves to its new partition: removed from the old one, written in the new one', async () => {
    await seed();
    await makeBatch(
      session,
      'b',
      `SELECT 1 AS id, DATE '2024-03-03' AS day, 'moved' AS name, 2 AS v`,
    );
    const r = await merge(f, { batch: 'b', ...KEY });
    expect(r).toMatchObject({ inserted: 0, updated: 1, filesRemoved: 1, filesAdded: 2 });
    const ones = (await readRows(f, 'id')).filter((x) => x['id'] === '1');
    expect(ones).toEqual([{ id: '1', day: '2024-03-03', name: 'moved', v: 2 }]);
    expect(await readRows(f, 'id')).toHaveLength(32);
  });

  it('a key moves into and out of the NULL partition, and an older row in another partition is stale', async () => {
    await seed();
    await makeBatch(
      session,
      'b',
      `SELECT * FROM (VALUES (2, NULL::DATE, 'to null', 2), (100, DATE '2024-03-01', 'from null', 2), (3, DATE '2024-03-02', 'old', 0)) t(id, day, name, v)`,
    );
    const r = await merge(f, { batch: 'b', ...KEY });
    expect(r).toMatchObject({ inserted: 0, updated: 2, skippedStale: 1 });
    const rows = await readRows(f, 'id');
    expect(rows).toHaveLength(32);
    expect(rows.filter((x) => ['2', '3', '100'].includes(String(x['id'])))).toEqual([
      { id: '2', day: null, name: 'to null', v: 2 },
      { id: '3', day: '2024-03-01', name: 'x', v: 1 },
      { id: '100', day: '2024-03-01', name: 'from null', v: 2 },
    ]);
  });

  it('a delete row deletes its key in whatever partition holds it, its own partition value other or NULL', async () => {
    await seed();
    await makeBatch(
      session,
      'b',
      `SELECT * FROM (VALUES (5, NULL::DATE, 'D', 2), (15, DATE '2024-03-09', 'D', 2), (101, DATE '2024-03-01', 'D', 2)) t(id, day, op, v)`,
    );
    const r = await merge(f, {
      batch: 'b',
      ...KEY,
      deleteWhen: "op = 'D'",
      internalColumns: ['op'],
    });
    expect(r).toMatchObject({ deleted: 3, inserted: 0 });
    const ids = (await readRows(f, 'id')).map((x) => String(x['id']));
    expect(ids).toHaveLength(29);
    expect(ids).not.toContain('5');
    expect(ids).not.toContain('15');
    expect(ids).not.toContain('101');
  });

  it.each([
    { label: 'rewritten', opts: { deletionVectors: 'off' as const } },
    {
      label: 'given deletion vectors',
      opts: { deletionVectors: 'on' as const, rewriteBelowBytes: 0 },
    },
  ])(
    'a key held twice (in two partitions, as matching by partition once left it) becomes one row; files $label',
    async ({ opts }) => {
      await seed();
      await makeBatch(
        session,
        'dup',
        `SELECT 3 AS id, DATE '2024-03-03' AS day, 'copy' AS name, 1 AS v`,
      );
      await appendAndCommit(f.table, session, { batch: 'dup' });
      expect((await readRows(f, 'id')).filter((x) => x['id'] === '3')).toHaveLength(2);
      await makeBatch(
        session,
        'b',
        `SELECT 3 AS id, DATE '2024-03-02' AS day, 'one' AS name, 2 AS v`,
      );
      const r = await merge(f, { batch: 'b', ...KEY, ...opts });
      expect(r).toMatchObject({ inserted: 0, updated: 2 });
      const rows = await readRows(f, 'id');
      expect(rows.filter((x) => x['id'] === '3')).toEqual([
        { id: '3', day: '2024-03-02', name: 'one', v: 2 },
      ]);
      expect(rows).toHaveLength(32);
    },
  );

  it('supports composite keys that include the partition column', async () => {
    await makeBatch(
      session,
      'seed',
      `SELECT * FROM (VALUES ('eu', 1, 'a', 1), ('us', 1, 'b', 1), ('eu', 2, 'c', 1)) t(region, id, name, v)`,
    );
    await merge(f, {
      batch: 'seed',
      keyColumns: ['region', 'id'],
      orderBy: 'v',
      partitionBy: ['region'],
    });
    await makeBatch(
      session,
      'b',
      `SELECT * FROM (VALUES ('us', 1, 'B', 2), ('us', 2, 'new', 1), ('eu', 2, 'old', 0)) t(region, id, name, v)`,
    );
    const r = await merge(f, { batch: 'b', keyColumns: ['region', 'id'], orderBy: 'v' });
    expect(r).toMatchObject({ updated: 1, inserted: 1, skippedStale: 1, filesRemoved: 1 });
    expect(await readRows(f, 'region, id')).toEqual([
      { region: 'eu', id: 1, name: 'a', v: 1 },
      { region: 'eu', id: 2, name: 'c', v: 1 },
      { region: 'us', id: 1, name: 'B', v: 2 },
      { region: 'us', id: 2, name: 'new', v: 1 },
    ]);
  });

  it('prunes by a partition column that is part of the key', async () => {
    await makeBatch(
      session,
      'seed',
      `SELECT * FROM (VALUES ('eu', 1, 'a', 1), ('us', 1, 'b', 1), ('ap', 1, 'c', 1)) t(region, id, name, v)`,
    );
    await merge(f, {
      batch: 'seed',
      keyColumns: ['region', 'id'],
      orderBy: 'v',
      partitionBy: ['region'],
    });
    await makeBatch(session, 'b', `SELECT 'us' AS region, 1 AS id, 'B' AS name, 2 AS v`);
    const r = await merge(f, { batch: 'b', keyColumns: ['region', 'id'], orderBy: 'v' });
    expect(r).toMatchObject({ updated: 1, filesScanned: 1, filesRemoved: 1 });
  });

  it('supports composite keys of data columns on an unpartitioned table', async () => {
    await makeBatch(
      session,
      'seed',
      `SELECT range // 10 AS a, range % 10 AS b, 'x' AS name, 1 AS v FROM range(100)`,
    );
    await merge(f, { batch: 'seed', keyColumns: ['a', 'b'], orderBy: 'v', targetFileRows: 20 });
    await makeBatch(
      session,
      'b',
      `SELECT * FROM (VALUES (3, 3, 'y', 2), (3, 10, 'z', 1)) t(a, b, name, v)`,
    );
    const r = await merge(f, { batch: 'b', keyColumns: ['a', 'b'], orderBy: 'v' });
    expect(r).toMatchObject({ updated: 1, inserted: 1, filesRemoved: 1 });
    const rows = await readRows(f, 'a, b');
    expect(rows).toHaveLength(101);
    expect(rows.filter((x) => x['name'] !== 'x')).toEqual([
      { a: '3', b: '3', name: 'y', v: 2 },
      { a: '3', b: '10', name: 'z', v: 1 },
    ]);
  });
});
