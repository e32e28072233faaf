/**
 * Tombstones in the MERGE engine: a relation of recently deleted keys buries incoming rows that
 * are not newer than the delete (the delete wins ties, NULL is the oldest value), a stored row
 * decides alone when there is one, and the batch's own deletes are handed to the caller (`StagedMerge.deletes`)
 * before the commit, whose actions land in the same version. Plus: `deleteWhen` reads a table
 * column that a batch lacks as NULL (a CDC full-load file without its op column).
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DuckSession, type Row } from '../../../src/engine/duckdb.js';
import { TOMBSTONE_ORDER } from '../../../src/engine/merge/temp-names.js';
import type { DeletedKeys } from '../../../src/engine/merge/index.js';
import type { Relation } from '../../../src/engine/relation.js';
import { ident } from '../../../src/engine/sql.js';
import { MergeInputError } from '../../../src/errors.js';
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
const CDC = { ...KEY, deleteWhen: `op = 'D'` };
const rows = () => readRows(f, 'id');
/** The handle of the tombstone table `z` (`tombstones` fills it). */
const Z: Relation = { name: 'z', dispose: () => session.run('DROP TABLE IF EXISTS z') };

/** A tombstone table `z` from (id, order) pairs; the order is INTEGER like the tables' `v`. */
async function tombstones(...pairs: Array<[number, number | null]>): Promise<Relation> {
  const values = pairs.map(([id, v]) => `(${id}, ${v === null ? 'NULL::INTEGER' : v})`).join(', ');
  await session.run(
    `CREATE OR REPLACE TABLE z AS SELECT * FROM (VALUES ${values}) t(id, ${ident(TOMBSTONE_ORDER)})`,
  );
  return Z;
}

/** A table holding ids 1 and 2 at v = 10, with an `op` column. */
async function seed(): Promise<void> {
  await makeBatch(
    session,
    'seed',
    `SELECT * FROM (VALUES (1, 'a', 10, 'I'), (2, 'b', 10, 'I')) t(id, name, v, op)`,
  );
  await merge(f, { batch: 'seed', ...CDC });
}

describe('tombstones bury older rows of deleted keys', () => {
  it('skips a row not newer than the tombstone of its key (ties go to the delete), inserts a newer one', async () => {
    await seed();
    await tombstones([5, 20], [6, 20], [7, 20]);
    await makeBatch(
      session,
      'b',
      `SELECT * FROM (VALUES (5, 'old', 19, 'U'), (6, 'tie', 20, 'U'), (7, 'new', 21, 'U'), (8, 'fresh', 1, 'I')) t(id, name, v, op)`,
    );
    const r = await merge(f, { batch: 'b', ...CDC, tombstones: Z });
    expect(r).toMatchObject({ inserted: 2, skippedStale: 2, skippedByTombstone: 2, filesRead: 0 });
    expect((await rows()).map((x) => x['id'])).toEqual([1, 2, 7, 8]);
  });

  it('uses the newest of several tombstones of one key', async () => {
    await seed();
    await tombstones([5, 3], [5, 30], [5, 12]);
    await makeBatch(session, 'b', `SELECT * FROM (VALUES (5, 'x', 25, 'U')) t(id, name, v, op)`);
    const r = await merge(f, { batch: 'b', ...CDC, tombstones: Z });
    expect(r).toMatchObject({ version: null, inserted: 0, skippedByTombstone: 1 });
  });

  it.each([
    // [tombstone order, incoming order, buried]
    [null, 1, false],
    [null, null, true],
    [5, null, true],
  ])(
    'NULL is the oldest value: tombstone %s vs incoming %s -> buried %s',
    async (tomb, incoming, buried) => {
      await seed();
      await tombstones([5, tomb]);
      await makeBatch(
        session,
        'b',
        `SELECT 5 AS id, 'x' AS name, ${incoming === null ? 'NULL::INTEGER' : incoming} AS v, 'U' AS op`,
      );
      const r = await merge(f, { batch: 'b', ...CDC, tombstones: Z });
      expect(r.skippedByTombstone).toBe(buried ? 1 : 0);
      expect(r.inserted).toBe(buried ? 0 : 1);
    },
  );

  it('lets a stored row decide alone: a key re-inserted after its delete is updated by newer rows only', async () => {
    await seed(); // id 1 at v = 10, deleted at 5 before that (older tombstone)
    await tombstones([1, 5], [2, 5]);
    await makeBatch(
      session,
      'b',
      `SELECT * FROM (VALUES (1, 'between', 7, 'U'), (2, 'newer', 12, 'U')) t(id, name, v, op)`,
    );
    const r = await merge(f, { batch: 'b', ...CDC, tombstones: Z });
    expect(r).toMatchObject({ updated: 1, skippedStale: 1, skippedByTombstone: 0 });
    expect((await rows()).map((x) => [x['id'], x['name']])).toEqual([
      [1, 'a'],
      [2, 'newer'],
    ]);
  });

  it('buries rows on the table-creating MERGE too', async () => {
    await tombstones([1, 9]);
    await makeBatch(
      session,
      'b',
      `SELECT * FROM (VALUES (1, 'old', 4), (2, 'b', 4)) t(id, name, v)`,
    );
    const r = await merge(f, { batch: 'b', ...KEY, tombstones: Z });
    expect(r).toMatchObject({ version: 0, created: true, inserted: 1, skippedByTombstone: 1 });
    expect((await rows()).map((x) => x['id'])).toEqual([2]);
  });

  it('names a tombstone relation that lacks a key column or the order column', async () => {
    await seed();
    await makeBatch(session, 'b', `SELECT 3 AS id, 'c' AS name, 1 AS v, 'I' AS op`);
    await session.run(
      `CREATE OR REPLACE TABLE z AS SELECT 1 AS other, 2 AS ${ident(TOMBSTONE_ORDER)}`,
    );
    const err = await merge(f, { batch: 'b', ...CDC, tombstones: Z }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MergeInputError);
    expect((err as MergeInputError).message).toMatch(/tombstones relation "z" has no column "id"/);
  });
});

describe('a staged MERGE hands its deletes to the caller before the commit', () => {
  /** MERGE the batch, capturing the deletes relation's rows while it is valid. */
  async function mergeRecording(
    opts: { tombstones?: Relation } = {},
  ): Promise<{ deletes: Row[]; info: DeletedKeys; version: number | null }> {
    let deletes: Row[] = [];
    let info: DeletedKeys | undefined;
    const txn = { txn: { appId: 'job', version: 3, lastUpdated: 1 } };
    const r = await merge(f, {
      batch: 'b',
      ...CDC,
      ...opts,
      onDeletes: async (d) => {
        info = d;
        deletes = await session.allJson(`SELECT * FROM ${ident(d.relation.name)} ORDER BY id`);
        return [txn];
      },
    });
    return { deletes, info: info!, version: r.version };
  }

  it('lists deleted keys and deletes of missing keys, not stale deletes; its actions share the version', async () => {
    await seed();
    // 1: deletes a stored row; 2: stale delete (stored v=10); 9: delete of a key never stored.
    await makeBatch(
      session,
      'b',
      `SELECT * FROM (VALUES (1, 'a', 11, 'D'), (2, 'b', 4, 'D'), (9, NULL, 3, 'D'), (3, 'c', 1, 'I')) t(id, name, v, op)`,
    );
    const { deletes, info, version } = await mergeRecording();
    expect(info).toMatchObject({ rows: 2, keyColumns: ['id'] });
    expect(deletes).toEqual([
      { id: 1, [TOMBSTONE_ORDER]: 11 },
      { id: 9, [TOMBSTONE_ORDER]: 3 },
    ]);
    expect(version).toBe(1);
    expect((await snapshotOf(f)).txns.get('job')?.version).toBe(3);
    expect((await rows()).map((x) => x['id'])).toEqual([2, 3]);
  });

  it('is called, and its actions committed, when the batch changes no row', async () => {
    await seed();
    await makeBatch(session, 'b', `SELECT * FROM (VALUES (2, 'b', 4, 'U')) t(id, name, v, op)`);
    const { info, version } = await mergeRecording();
    expect(info.rows).toBe(0);
    expect(version).toBe(1);
  });

  it('is called on the table-creating MERGE, with every delete row', async () => {
    await makeBatch(
      session,
      'b',
      `SELECT * FROM (VALUES (1, 'a', 1, 'I'), (2, 'b', 2, 'D')) t(id, name, v, op)`,
    );
    const { deletes, version } = await mergeRecording();
    expect(version).toBe(0);
    expect(deletes).toEqual([{ id: 2, [TOMBSTONE_ORDER]: 2 }]);
  });
});

describe('deleteWhen over a batch that lacks the op column', () => {
  it('reads the missing table column as NULL: the rows upsert and nothing is deleted', async () => {
    await seed();
    await makeBatch(
      session,
      'b',
      `SELECT * FROM (VALUES (1, 'reloaded', 11), (4, 'd', 11)) t(id, name, v)`,
    );
    const r = await merge(f, { batch: 'b', ...CDC });
    expect(r).toMatchObject({ updated: 1, inserted: 1, deleted: 0 });
    expect((await rows()).map((x) => [x['id'], x['name'], x['op']])).toEqual([
      [1, 'reloaded', null],
      [2, 'b', 'I'],
      [4, 'd', null],
    ]);
  });

  it('still fails on a column that is in neither the batch nor the table, naming deleteWhen', async () => {
    await seed();
    await makeBatch(session, 'b', `SELECT 1 AS id, 'x' AS name, 11 AS v`);
    const err = await merge(f, { batch: 'b', ...KEY, deleteWhen: `opp = 'D'` }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(MergeInputError);
    expect((err as MergeInputError).message).toMatch(/invalid deleteWhen expression "opp = 'D'"/);
  });
});

describe('tieBreak: rows of equal orderBy ordered by further columns', () => {
  const TIES = { ...CDC, tieBreak: ['stamp'] };
  /** Ids 1..3 at v = 10, written at `stamp` = 5. */
  async function seedAt(): Promise<void> {
    await makeBatch(
      session,
      'seed',
      `SELECT * FROM (VALUES (1, 'a', 10, 'I', 5), (2, 'b', 10, 'I', 5), (3, 'c', 10, 'I', 5)) t(id, name, v, op, stamp)`,
    );
    await merge(f, { batch: 'seed', ...TIES });
  }

  it.each([
    { label: 'rewritten', opts: { deletionVectors: 'off' as const } },
    {
      label: 'given deletion vectors',
      opts: { deletionVectors: 'on' as const, rewriteBelowBytes: 0, rewriteDeletedShare: 1 },
    },
  ])(
    'at an equal orderBy an earlier update or delete is stale, a later one wins; files $label',
    async ({ opts }) => {
      await seedAt();
      await makeBatch(
        session,
        'b',
        `SELECT * FROM (VALUES (1, 'earlier', 10, 'U', 4), (2, 'later', 10, 'U', 6), (3, 'gone?', 10, 'D', 4)) t(id, name, v, op, stamp)`,
      );
      let tombstoned = -1;
      const r = await merge(f, {
        batch: 'b',
        ...TIES,
        ...opts,
        onDeletes: async (d: DeletedKeys) => ((tombstoned = d.rows), []),
      });
      expect(r).toMatchObject({ updated: 1, deleted: 0, skippedStale: 2 });
      expect(tombstoned).toBe(0); // a stale delete leaves no tombstone
      await makeBatch(
        session,
        'd',
        `SELECT 3 AS id, 'gone' AS name, 10 AS v, 'D' AS op, 6 AS stamp`,
      );
      expect(await merge(f, { batch: 'd', ...TIES, ...opts })).toMatchObject({ deleted: 1 });
      expect((await rows()).map((x) => [x['id'], x['name']])).toEqual([
        [1, 'a'],
        [2, 'later'],
      ]);
    },
  );

  it('a tombstone buries a row of equal orderBy unless the row is later; one without the column counts it NULL (the oldest)', async () => {
    await seedAt();
    await session.run(
      `CREATE OR REPLACE TABLE z AS SELECT * FROM (VALUES (5, 20, 5), (6, 20, 5), (7, 20, 5)) t(id, ${ident(TOMBSTONE_ORDER)}, stamp)`,
    );
    await makeBatch(
      session,
      'b',
      `SELECT * FROM (VALUES (5, 'earlier', 20, 'U', 4), (6, 'same', 20, 'U', 5), (7, 'later', 20, 'U', 6)) t(id, name, v, op, stamp)`,
    );
    const r = await merge(f, { batch: 'b', ...TIES, tombstones: Z });
    expect(r).toMatchObject({ inserted: 1, skippedByTombstone: 2 });
    expect((await rows()).map((x) => x['id'])).toEqual([1, 2, 3, 7]);
    await tombstones([8, 20]);
    await makeBatch(session, 'c', `SELECT 8 AS id, 'x' AS name, 20 AS v, 'U' AS op, 1 AS stamp`);
    expect(await merge(f, { batch: 'c', ...TIES, tombstones: Z })).toMatchObject({
      inserted: 1,
      skippedByTombstone: 0,
    });
  });

  it("the batch's deletes carry the tie columns for the caller's tombstones", async () => {
    await seedAt();
    await makeBatch(session, 'b', `SELECT 1 AS id, 'gone' AS name, 11 AS v, 'D' AS op, 7 AS stamp`);
    const r = await merge(f, {
      batch: 'b',
      ...TIES,
      onDeletes: async (d: DeletedKeys) => {
        expect(d.tieColumns).toEqual(['stamp']);
        expect(
          await session.allJson(
            `SELECT id, stamp, ${ident(TOMBSTONE_ORDER)} AS o FROM ${ident(d.relation.name)}`,
          ),
        ).toEqual([{ id: 1, stamp: 7, o: 11 }]);
        return [];
      },
    });
    expect(r).toMatchObject({ deleted: 1 });
  });
});
