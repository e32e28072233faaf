/**
 * MERGE into tables written by Spark (private copies of fixtures/delta-tables): partition value
 * and path encodings, decimals, timestamp_ntz, tables without stats or with a checkpoint; and
 * tables using features tidemark cannot write are refused, naming the feature, before any write.
 */
import { readdir, rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DuckSession } from '../../../src/engine/duckdb.js';
import { UnsupportedFeatureError } from '../../../src/errors.js';
import { LocalStorage } from '../../../src/storage/local.js';
import { copySharedTable } from '../../helpers/shared-tables.js';
import { fixtureOn, makeBatch, merge, readRows, snapshotOf, type Fixture } from './helpers.js';

let session: DuckSession;
beforeAll(async () => {
  session = await DuckSession.open({ threads: 2 });
});
afterAll(() => session.close());

async function copyOf(name: string): Promise<Fixture> {
  const dir = await copySharedTable(name);
  return fixtureOn(session, new LocalStorage(dir), { dir, cleanup: () => rm(dir, { recursive: true, force: true }) });
}

describe('MERGE into Spark-written tables', () => {
  it('partition-escaped-chars: deletes and inserts through doubly encoded partition paths', async () => {
    const f = await copyOf('partition-escaped-chars');
    try {
      await makeBatch(session, 'b', `SELECT * FROM (VALUES ('foo2', 'bar+%22', true), ('foo4', 'bar+%24 #?', false)) t(_1, _2, gone)`);
      const r = await merge(f, { batch: 'b', keyColumns: ['_1'], orderBy: '_1', deleteWhen: 'gone', internalColumns: ['gone'] });
      expect(r).toMatchObject({ version: 3, deleted: 1, inserted: 1, filesRemoved: 1, filesAdded: 1 });
      expect(await readRows(f, '_1')).toEqual([
        { _1: 'foo1', _2: 'bar+%21' },
        { _1: 'foo3', _2: 'bar+%23' },
        { _1: 'foo4', _2: 'bar+%24 #?' },
      ]);
    } finally {
      await f.close();
    }
  });

  it('decimal-partitioned: updates exact decimals in a decimal partition', async () => {
    const f = await copyOf('decimal-partitioned');
    try {
      await makeBatch(
        session,
        'b',
        `SELECT 234.00000::DECIMAL(12,5) AS part, 1.00::DECIMAL(5,2) AS col1, 2.00001::DECIMAL(10,5) AS col2, 1234567890.0123456789::DECIMAL(20,10) AS col3`,
      );
      const r = await merge(f, { batch: 'b', keyColumns: ['col1'], orderBy: 'col2' });
      expect(r).toMatchObject({ updated: 1, filesScanned: 1, filesRemoved: 1 });
      const rows = await readRows(f, 'col1');
      expect(rows).toHaveLength(4);
      expect(rows.find((x) => x['col1'] === '1.00')).toEqual({ part: '234.00000', col1: '1.00', col2: '2.00001', col3: '1234567890.0123456789' });
    } finally {
      await f.close();
    }
  });

  it('timestamp-ntz: matches in NULL and timestamp_ntz partitions; NULL orderBy is the oldest', async () => {
    const f = await copyOf('timestamp-ntz');
    try {
      const A = `TIMESTAMP '2021-11-18 02:30:00.123456'`;
      const B = `TIMESTAMP '2013-07-05 17:01:00.123456'`;
      await makeBatch(
        session,
        'b',
        `SELECT * FROM (VALUES (0, ${A} + INTERVAL 1 second, ${A}), (3, NULL, ${B}), (8, ${B}, NULL), (9, ${B}, NULL)) t(id, tsNtz, tsNtzPartition)`,
      );
      const r = await merge(f, { batch: 'b', keyColumns: ['id'], orderBy: 'tsNtz' });
      expect(r).toMatchObject({ updated: 2, skippedStale: 1, inserted: 1 });
      const rows = await readRows(f, 'id');
      expect(rows).toHaveLength(10);
      expect(rows.filter((x) => [0, 3, 8, 9].includes(x['id'] as number))).toEqual([
        { id: 0, tsNtz: '2021-11-18 02:30:01.123456', tsNtzPartition: '2021-11-18 02:30:00.123456' },
        { id: 3, tsNtz: '2021-11-18 02:30:00.123456', tsNtzPartition: '2013-07-05 17:01:00.123456' },
        { id: 8, tsNtz: '2013-07-05 17:01:00.123456', tsNtzPartition: null },
        { id: 9, tsNtz: '2013-07-05 17:01:00.123456', tsNtzPartition: null },
      ]);
    } finally {
      await f.close();
    }
  });

  it('primitives-append: files without stats are all scanned; only the one holding the key is rewritten', async () => {
    const f = await copyOf('primitives-append');
    try {
      const before = await snapshotOf(f);
      await makeBatch(
        session,
        'b',
        `SELECT 3 AS as_int, 3::BIGINT AS as_long, 3::TINYINT AS as_byte, 3::SMALLINT AS as_short, false AS as_boolean,
                3.0::FLOAT AS as_float, 3.0::DOUBLE AS as_double, 'three' AS as_string, '\\x03\\x03'::BLOB AS as_binary, 3::DECIMAL(1,0) AS as_big_decimal`,
      );
      const r = await merge(f, { batch: 'b', keyColumns: ['as_int'], orderBy: 'as_long' });
      expect(r).toMatchObject({ updated: 1, filesScanned: before.files.length, filesRemoved: 1 });
      const rows = await readRows(f, 'as_int NULLS LAST');
      expect(rows).toHaveLength(11);
      expect(rows.filter((x) => x['as_string'] === 'three')).toHaveLength(1);
      expect(rows.filter((x) => x['as_int'] === null)).toHaveLength(1);
    } finally {
      await f.close();
    }
  });

  it('checkpoint-classic: merges on top of a checkpoint and later commits', async () => {
    const f = await copyOf('checkpoint-classic');
    try {
      await makeBatch(session, 'b', `SELECT * FROM (VALUES (0::BIGINT, true), (100::BIGINT, false)) t(id, gone)`);
      const r = await merge(f, { batch: 'b', keyColumns: ['id'], orderBy: 'id', deleteWhen: 'gone', internalColumns: ['gone'] });
      expect(r).toMatchObject({ version: 14, deleted: 1, inserted: 1 });
      const ids = (await readRows(f, 'id')).map((x) => Number(x['id']));
      expect(ids).toHaveLength(41);
      expect(ids.reduce((a, b) => a + b, 0)).toBe(1470 - 0 + 100);
    } finally {
      await f.close();
    }
  });
});

describe('MERGE into tables with deletion vectors (README 14, 18, 21), writing deletion vectors', () => {
  /** Every file gets a DV rather than a rewrite, however small (the shared tables are tiny). */
  const DV = { deletionVectors: 'on' as const, rewriteBelowBytes: 0, rewriteDeletedShare: 1 };

  it('table-with-dv-large: re-inserts a DV-deleted value, updates live rows twice (a second DV on a file that has one), deletes one; every row checked', async () => {
    const f = await copyOf('table-with-dv-large');
    try {
      const expected = new Map<number, number>();
      for (let v = 0; v < 2000; v++) if (![0, 180, 250, 300, 350, 1353, 1800].includes(v)) expected.set(v, 0);
      // value is the key; rev orders versions. Stored rows have no rev column yet: it is added (NULL, the oldest).
      await makeBatch(session, 'b1', `SELECT * FROM (VALUES (1800, 1, false), (5, 1, false), (1999, 1, false), (42, 1, true)) t(value, rev, gone)`);
      const r1 = await merge(f, { batch: 'b1', keyColumns: ['value'], orderBy: 'rev', deleteWhen: 'gone', internalColumns: ['gone'], schemaEvolution: 'addColumns', ...DV });
      expect(r1).toMatchObject({ inserted: 1, updated: 2, deleted: 1, bytesRewritten: 0 });
      expect(r1.filesWithNewDv).toBe(3);
      expected.set(1800, 1).set(5, 1).set(1999, 1);
      expected.delete(42);
      const afterFirst = await snapshotOf(f);
      // The file holding 5 already had a DV or gets one now; update 5 and its neighbours again.
      const holding5 = afterFirst.files.find((x) => x.deletionVector && x.deletionVector.cardinality >= 1 && x.path.includes('part-'))!;
      expect(holding5).toBeDefined();
      await makeBatch(session, 'b2', `SELECT * FROM (VALUES (5, 2, false), (1999, 2, false), (7, 2, false)) t(value, rev, gone)`);
      const r2 = await merge(f, { batch: 'b2', keyColumns: ['value'], orderBy: 'rev', deleteWhen: 'gone', internalColumns: ['gone'], ...DV });
      expect(r2).toMatchObject({ updated: 3, inserted: 0 });
      expected.set(5, 2).set(1999, 2).set(7, 2);
      const rows = await readRows(f, 'value');
      expect(rows.map((x) => [Number(x['value']), x['rev'] === null ? 0 : Number(x['rev'])])).toEqual([...expected].sort((a, b) => a[0] - b[0]));
      const after = await snapshotOf(f);
      // Every live file that lost a row has a DV whose cardinality matches its missing rows; no (path) twice.
      expect(new Set(after.files.map((x) => x.path)).size).toBe(after.files.length);
      expect(after.protocol).toMatchObject({ minReaderVersion: 3, minWriterVersion: 7 });
    } finally {
      await f.close();
    }
  });

  it('deletion-vectors: the DV on the only file is extended (old deletes kept), a deleted id comes back, the table reads exactly', async () => {
    const f = await copyOf('deletion-vectors');
    try {
      await makeBatch(session, 'b', `SELECT * FROM (VALUES (7::BIGINT), (20::BIGINT), (21::BIGINT)) t(id)`);
      // Key id, orderBy id: 20 and 21 tie with their stored rows (unchanged); 7 was deleted by a DV: inserted again.
      const r = await merge(f, { batch: 'b', keyColumns: ['id'], orderBy: 'id', ...DV });
      expect(r).toMatchObject({ inserted: 1, unchanged: 2, updated: 0 });
      await makeBatch(session, 'd', `SELECT * FROM (VALUES (1::BIGINT, true), (49::BIGINT, true)) t(id, gone)`);
      const d = await merge(f, { batch: 'd', keyColumns: ['id'], orderBy: 'id', deleteWhen: 'gone', internalColumns: ['gone'], ...DV });
      expect(d).toMatchObject({ deleted: 2, filesWithNewDv: 1 });
      const s = await snapshotOf(f);
      const original = s.files.find((x) => !x.path.includes('insert') && x.deletionVector)!;
      expect(original.deletionVector!.cardinality).toBe(5); // 0, 7, 14 from Spark, then 1 and 49
      const ids = (await readRows(f, 'id')).map((x) => Number(x['id']));
      const want = Array.from({ length: 50 }, (_, i) => i).filter((i) => ![0, 14, 1, 49].includes(i));
      expect(ids).toEqual(want);
    } finally {
      await f.close();
    }
  });

  it('dv-partitioned-with-checkpoint: updates rows in partitions whose files carry DVs from a checkpoint', async () => {
    const f = await copyOf('dv-partitioned-with-checkpoint');
    try {
      const before = await readRows(f, 'col1');
      expect(before).toHaveLength(35);
      const target = before.slice(0, 3).map((x) => Number(x['col1']));
      await makeBatch(
        session,
        'b',
        `SELECT part, col1, 'updated-' || col1 AS col2 FROM (VALUES ${before.slice(0, 3).map((x) => `(${x['part']}, ${x['col1']})`).join(', ')}) t(part, col1)`,
      );
      const r = await merge(f, { batch: 'b', keyColumns: ['col1'], orderBy: 'col2', ...DV });
      expect(r).toMatchObject({ updated: 3, inserted: 0 });
      const after = await readRows(f, 'col1');
      expect(after).toHaveLength(35);
      expect(after.filter((x) => String(x['col2']).startsWith('updated-')).map((x) => Number(x['col1']))).toEqual(target);
    } finally {
      await f.close();
    }
  });
});

describe('tables tidemark cannot write', () => {
  it.each([
    ['column-mapping-name', 'columnMapping'],
    // Row tracking and DVs are honoured; the pre-standard writer feature `liquid` is unknown.
    ['liquid-clustering-rowtracking', 'liquid'],
  ])('%s is refused naming %s, and nothing is written', async (name, feature) => {
    const f = await copyOf(name);
    try {
      const before = await readdir(f.dir, { recursive: true });
      await makeBatch(session, 'b', `SELECT 1 AS id`);
      const err = await merge(f, { batch: 'b', keyColumns: ['id'], orderBy: 'id' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(UnsupportedFeatureError);
      expect((err as UnsupportedFeatureError).feature).toBe(feature);
      expect(await readdir(f.dir, { recursive: true })).toEqual(before);
    } finally {
      await f.close();
    }
  });
});
