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

describe('tables tidemark cannot write', () => {
  it.each([
    ['deletion-vectors', 'deletionVectors'],
    ['column-mapping-name', 'columnMapping'],
    ['liquid-clustering-rowtracking', 'deletionVectors'],
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
