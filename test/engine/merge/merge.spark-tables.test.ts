/**
 * MERGE into tables written by Spark (private copies of fixtures/delta-tables): partition value
 * and path encodings, decimals, timestamp_ntz, tables without stats or with a checkpoint; and
 * tables using features tidemark cannot write are refused, naming the feature, before any write.
 */
import { readdir, rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DuckSession, type Row } from '../../../src/engine/duckdb.js';
import { UnsupportedFeatureError } from '../../../src/errors.js';
import { LocalStorage } from '../../../src/storage/local.js';
import { withTableScan } from '../../../src/engine/scan.js';
import { scanSource } from '../../../scripts/lib/tables.js';
import { copySharedTable } from '../../helpers/shared-tables.js';
import { fixtureOn, makeBatch, merge, readRows, snapshotOf, type Fixture } from './helpers.js';

let session: DuckSession;
beforeAll(async () => {
  session = await DuckSession.open({ threads: 2 });
});
afterAll(() => session.close());

async function copyOf(name: string): Promise<Fixture> {
  const dir = await copySharedTable(name);
  return fixtureOn(session, new LocalStorage(dir), {
    dir,
    cleanup: () => rm(dir, { recursive: true, force: true }),
  });
}

describe('MERGE into Spark-written tables', () => {
  it('partition-escaped-chars: deletes and inserts through doubly encoded partition paths', async () => {
    const f = await copyOf('partition-escaped-chars');
    try {
      await makeBatch(
        session,
        'b',
        `SELECT * FROM (VALUES ('foo2', 'bar+%22', true), ('foo4', 'bar+%24 #?', false)) t(_1, _2, gone)`,
      );
      const r = await merge(f, {
        batch: 'b',
        keyColumns: ['_1'],
        orderBy: '_1',
        deleteWhen: 'gone',
        internalColumns: ['gone'],
      });
      expect(r).toMatchObject({
        version: 3,
        deleted: 1,
        inserted: 1,
        filesRemoved: 1,
        filesAdded: 1,
      });
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
      expect(rows.find((x) => x['col1'] === '1.00')).toEqual({
        part: '234.00000',
        col1: '1.00',
        col2: '2.00001',
        col3: '1234567890.0123456789',
      });
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
        {
          id: 0,
          tsNtz: '2021-11-18 02:30:01.123456',
          tsNtzPartition: '2021-11-18 02:30:00.123456',
        },
        {
          id: 3,
          tsNtz: '2021-11-18 02:30:00.123456',
          tsNtzPartition: '2013-07-05 17:01:00.123456',
        },
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
      await makeBatch(
        session,
        'b',
        `SELECT * FROM (VALUES (0::BIGINT, true), (100::BIGINT, false)) t(id, gone)`,
      );
      const r = await merge(f, {
        batch: 'b',
        keyColumns: ['id'],
        orderBy: 'id',
        deleteWhen: 'gone',
        internalColumns: ['gone'],
      });
      expect(r).toMatchObject({ version: 14, deleted: 1, inserted: 1 });
      const ids = (await readRows(f, 'id')).map((x) => Number(x['id']));
      expect(ids).toHaveLength(41);
      expect(ids.reduce((a, b) => a + b, 0)).toBe(1470 - 0 + 100);
    } finally {
      await f.close();
    }
  });
});

/** Every file gets a DV rather than a rewrite, however small (the shared tables are tiny). */
const DV = { deletionVectors: 'on' as const, rewriteBelowBytes: 0, rewriteDeletedShare: 1 };

describe('MERGE into tables with deletion vectors (README 14, 18, 21), writing deletion vectors', () => {
  it('table-with-dv-large: re-inserts a DV-deleted value, updates live rows twice (a second DV on a file that has one), deletes one; every row checked', async () => {
    const f = await copyOf('table-with-dv-large');
    try {
      const expected = new Map<number, number>();
      for (let v = 0; v < 2000; v++)
        if (![0, 180, 250, 300, 350, 1353, 1800].includes(v)) expected.set(v, 0);
      // value is the key; rev orders versions. Stored rows have no rev column yet: it is added (NULL, the oldest).
      await makeBatch(
        session,
        'b1',
        `SELECT * FROM (VALUES (1800, 1, false), (5, 1, false), (1999, 1, false), (42, 1, true)) t(value, rev, gone)`,
      );
      const r1 = await merge(f, {
        batch: 'b1',
        keyColumns: ['value'],
        orderBy: 'rev',
        deleteWhen: 'gone',
        internalColumns: ['gone'],
        schemaEvolution: 'addColumns',
        ...DV,
      });
      expect(r1).toMatchObject({ inserted: 1, updated: 2, deleted: 1, bytesRewritten: 0 });
      expect(r1.filesWithNewDv).toBe(3);
      expected.set(1800, 1).set(5, 1).set(1999, 1);
      expected.delete(42);
      const afterFirst = await snapshotOf(f);
      // The file holding 5 already had a DV or gets one now; update 5 and its neighbours again.
      const holding5 = afterFirst.files.find(
        (x) => x.deletionVector && x.deletionVector.cardinality >= 1 && x.path.includes('part-'),
      )!;
      expect(holding5).toBeDefined();
      await makeBatch(
        session,
        'b2',
        `SELECT * FROM (VALUES (5, 2, false), (1999, 2, false), (7, 2, false)) t(value, rev, gone)`,
      );
      const r2 = await merge(f, {
        batch: 'b2',
        keyColumns: ['value'],
        orderBy: 'rev',
        deleteWhen: 'gone',
        internalColumns: ['gone'],
        ...DV,
      });
      expect(r2).toMatchObject({ updated: 3, inserted: 0 });
      expected.set(5, 2).set(1999, 2).set(7, 2);
      const rows = await readRows(f, 'value');
      expect(
        rows.map((x) => [Number(x['value']), x['rev'] === null ? 0 : Number(x['rev'])]),
      ).toEqual([...expected].sort((a, b) => a[0] - b[0]));
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
      await makeBatch(
        session,
        'b',
        `SELECT * FROM (VALUES (7::BIGINT), (20::BIGINT), (21::BIGINT)) t(id)`,
      );
      // Key id, orderBy id: 20 and 21 tie with their stored rows (unchanged); 7 was deleted by a DV: inserted again.
      const r = await merge(f, { batch: 'b', keyColumns: ['id'], orderBy: 'id', ...DV });
      expect(r).toMatchObject({ inserted: 1, unchanged: 2, updated: 0 });
      await makeBatch(
        session,
        'd',
        `SELECT * FROM (VALUES (1::BIGINT, true), (49::BIGINT, true)) t(id, gone)`,
      );
      const d = await merge(f, {
        batch: 'd',
        keyColumns: ['id'],
        orderBy: 'id',
        deleteWhen: 'gone',
        internalColumns: ['gone'],
        ...DV,
      });
      expect(d).toMatchObject({ deleted: 2, filesWithNewDv: 1 });
      const s = await snapshotOf(f);
      const original = s.files.find((x) => !x.path.includes('insert') && x.deletionVector)!;
      expect(original.deletionVector!.cardinality).toBe(5); // 0, 7, 14 from Spark, then 1 and 49
      const ids = (await readRows(f, 'id')).map((x) => Number(x['id']));
      const want = Array.from({ length: 50 }, (_, i) => i).filter(
        (i) => ![0, 14, 1, 49].includes(i),
      );
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
        `SELECT part, col1, 'updated-' || col1 AS col2 FROM (VALUES ${before
          .slice(0, 3)
          .map((x) => `(${x['part']}, ${x['col1']})`)
          .join(', ')}) t(part, col1)`,
      );
      const r = await merge(f, { batch: 'b', keyColumns: ['col1'], orderBy: 'col2', ...DV });
      expect(r).toMatchObject({ updated: 3, inserted: 0 });
      const after = await readRows(f, 'col1');
      expect(after).toHaveLength(35);
      expect(
        after.filter((x) => String(x['col2']).startsWith('updated-')).map((x) => Number(x['col1'])),
      ).toEqual(target);
    } finally {
      await f.close();
    }
  });
});

/** The README 20 row for i = 5, every nested type filled (a batch row, by logical names). */
const ROW_5 = `SELECT 5::TINYINT AS ByteType, 5::SMALLINT AS ShortType, 5 AS IntegerType, 5::BIGINT AS LongType, 5.0::FLOAT AS FloatType,
  5.0::DOUBLE AS DoubleType, 5.00::DECIMAL(10,2) AS decimal, false AS BooleanType, '5' AS StringType, '5'::BLOB AS BinaryType,
  DATE '2021-11-18' AS DateType, make_timestamp(5000)::TIMESTAMPTZ AS TimestampType, {'aa': '5', 'ac': {'aca': 5}} AS nested_struct,
  [5, 6] AS array_of_prims, [[5, 6], [7, 8]] AS array_of_arrays, [MAP {5: [2, 3], 6: [4, 5]}] AS array_of_map_of_arrays,
  [{'ab': 5}, {'ab': 5}] AS array_of_structs, {'aa': [5, 6], 'ab': MAP {[5, 6]: {'aca': 7}}} AS struct_of_arrays_maps_of_structs,
  MAP {5: 6::BIGINT, 7: 8::BIGINT} AS map_of_prims, MAP {6: {'ab': 100::BIGINT}} AS map_of_rows,
  MAP {5::BIGINT: [5, NULL, 6], 6::BIGINT: []::INTEGER[]} AS map_of_arrays, MAP {5::BIGINT: MAP {5: 5}, 6::BIGINT: MAP {7: 5}} AS map_of_maps,
  1 AS rev, false AS gone`;
/** ROW_5 read back (JSON forms: BIGINT as text, maps as key/value lists). */
const ROW_5_READ = {
  ...{
    ByteType: 5,
    ShortType: 5,
    IntegerType: 5,
    LongType: '5',
    FloatType: 5,
    DoubleType: 5,
    decimal: '5.00',
    BooleanType: false,
  },
  ...{
    StringType: '5',
    BinaryType: '5',
    DateType: '2021-11-18',
    TimestampType: '1970-01-01 00:00:00.005+00',
  },
  nested_struct: { aa: '5', ac: { aca: 5 } },
  array_of_prims: [5, 6],
  array_of_arrays: [
    [5, 6],
    [7, 8],
  ],
  array_of_map_of_arrays: [
    [
      { key: 5, value: [2, 3] },
      { key: 6, value: [4, 5] },
    ],
  ],
  array_of_structs: [{ ab: 5 }, { ab: 5 }],
  struct_of_arrays_maps_of_structs: { aa: [5, 6], ab: [{ key: [5, 6], value: { aca: 7 } }] },
  map_of_prims: [
    { key: 5, value: '6' },
    { key: 7, value: '8' },
  ],
  map_of_rows: [{ key: 6, value: { ab: '100' } }],
  map_of_arrays: [
    { key: '5', value: [5, null, 6] },
    { key: '6', value: [] },
  ],
  map_of_maps: [
    { key: '5', value: [{ key: 5, value: 5 }] },
    { key: '6', value: [{ key: 7, value: 5 }] },
  ],
  rev: 1,
};

describe('MERGE into column-mapped tables (README 13, 19, 20): insert, update, delete and a new column, read back row by row', () => {
  it('column-mapping-name: spaces in names, a physical partition key; the new column gets id 3', async () => {
    const f = await copyOf('column-mapping-name');
    try {
      // rev is new: stored rows have it NULL (the oldest), so rev 1 updates and deletes them.
      await makeBatch(
        session,
        'b',
        `SELECT * FROM (VALUES ('BMS', 'X', 1, false), ('BMS', 'Nathan Bennett', 1, false), ('BME', 'Timothy Lamb', 1, true)) t("Company Very Short", "Super Name", rev, gone)`,
      );
      const r = await merge(f, {
        batch: 'b',
        keyColumns: ['Super Name'],
        orderBy: 'rev',
        deleteWhen: 'gone',
        internalColumns: ['gone'],
        schemaEvolution: 'addColumns',
      });
      expect(r).toMatchObject({ version: 1, inserted: 1, updated: 1, deleted: 1 });
      expect(await readRows(f, '"Super Name"')).toEqual([
        { 'Company Very Short': 'BMS', 'Super Name': 'Anthony Johnson', rev: null },
        { 'Company Very Short': 'BMS', 'Super Name': 'Mr. Daniel Ferguson MD', rev: null },
        { 'Company Very Short': 'BMS', 'Super Name': 'Nathan Bennett', rev: 1 },
        { 'Company Very Short': 'BMS', 'Super Name': 'Stephanie Mcgrath', rev: null },
        { 'Company Very Short': 'BMS', 'Super Name': 'X', rev: 1 },
      ]);
      const s = await snapshotOf(f);
      expect(s.metadata.configuration['delta.columnMapping.maxColumnId']).toBe('3');
      expect(s.schema.fields[2]).toMatchObject({
        name: 'rev',
        metadata: { 'delta.columnMapping.id': 3 },
      });
      expect(
        s.files.every(
          (x) => Object.keys(x.partitionValues)[0] === 'col-173b4db9-b5ad-427f-9e75-516aae37fbbb',
        ),
      ).toBe(true);
    } finally {
      await f.close();
    }
  });

  it('dv-with-columnmapping: deletion vectors on a mapped, partitioned table; a DV-deleted key comes back', async () => {
    const f = await copyOf('dv-with-columnmapping');
    try {
      const before = await readRows(f, 'col1');
      expect(before).toHaveLength(35);
      // col1 26 was deleted by a DV in partition 6: inserted again. 27 is updated, 29 deleted.
      const partOf = (col1: number) => before.find((x) => x['col1'] === col1)!['part'];
      await makeBatch(
        session,
        'b',
        `SELECT * FROM (VALUES (6, 26, 'back', 1, false), (${partOf(27)}, 27, 'updated', 1, false), (${partOf(29)}, 29, NULL, 1, true)) t(part, col1, col2, rev, gone)`,
      );
      const r = await merge(f, {
        batch: 'b',
        keyColumns: ['col1'],
        orderBy: 'rev',
        deleteWhen: 'gone',
        internalColumns: ['gone'],
        schemaEvolution: 'addColumns',
        ...DV,
      });
      expect(r).toMatchObject({ inserted: 1, updated: 1, deleted: 1 });
      expect(r.filesWithNewDv).toBe(2);
      const expected: Row[] = before
        .filter((x) => x['col1'] !== 29)
        .map((x): Row =>
          x['col1'] === 27 ? { ...x, col2: 'updated', rev: 1 } : { ...x, rev: null },
        )
        .concat([{ part: 6, col1: 26, col2: 'back', rev: 1 }])
        .sort((a, b) => Number(a['col1']) - Number(b['col1']));
      expect(await readRows(f, 'col1')).toEqual(expected);
      const s = await snapshotOf(f);
      expect(s.metadata.configuration['delta.columnMapping.maxColumnId']).toBe('4');
    } finally {
      await f.close();
    }
  });

  it('table-with-columnmapping-mode-id: nested structs, lists and maps written by physical name and field id', async () => {
    const f = await copyOf('table-with-columnmapping-mode-id');
    try {
      const before = await readRows(f, 'IntegerType NULLS LAST');
      await withTableScan(session, scanSource(f.storage), await snapshotOf(f), (relation) =>
        session.run(
          `CREATE OR REPLACE TABLE b AS SELECT *, 1 AS rev, IntegerType = 2 AS gone FROM (${relation}) WHERE IntegerType IN (1, 2)`,
        ),
      );
      await session.run(
        `UPDATE b SET StringType = 'one', nested_struct = {'aa': 'uno', 'ac': {'aca': 11}}, map_of_rows = MAP {2: {'ab': 99::BIGINT}} WHERE IntegerType = 1`,
      );
      await session.run(`INSERT INTO b BY NAME ${ROW_5}`);
      const r = await merge(f, {
        batch: 'b',
        keyColumns: ['IntegerType'],
        orderBy: 'rev',
        deleteWhen: 'gone',
        internalColumns: ['gone'],
        schemaEvolution: 'addColumns',
      });
      expect(r).toMatchObject({ inserted: 1, updated: 1, deleted: 1 });
      const after = await readRows(f, 'IntegerType NULLS LAST');
      const one = before.find((x) => x['IntegerType'] === 1)!;
      expect(after).toEqual([
        { ...before[0], rev: null },
        {
          ...one,
          StringType: 'one',
          nested_struct: { aa: 'uno', ac: { aca: 11 } },
          map_of_rows: [{ key: 2, value: { ab: '99' } }],
          rev: 1,
        },
        { ...before[3], rev: null },
        { ...before[4], rev: null },
        ROW_5_READ,
        { ...before[5], rev: null },
      ]);
    } finally {
      await f.close();
    }
  });
});

describe('tables tidemark cannot write', () => {
  // Row tracking and DVs are honoured; the pre-standard writer feature `liquid` is unknown: writing only is refused.
  it('liquid-clustering-rowtracking is refused naming liquid, and nothing is written', async () => {
    const f = await copyOf('liquid-clustering-rowtracking');
    try {
      const before = await readdir(f.dir, { recursive: true });
      await makeBatch(session, 'b', `SELECT 1 AS id`);
      const err = await merge(f, { batch: 'b', keyColumns: ['id'], orderBy: 'id' }).catch(
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(UnsupportedFeatureError);
      expect((err as UnsupportedFeatureError).feature).toBe('liquid');
      expect((err as Error).message).toContain("'liquid', which tidemark can read but not write");
      expect(await readdir(f.dir, { recursive: true })).toEqual(before);
    } finally {
      await f.close();
    }
  });
});
