/**
 * The footer edit behind the UTC-adjusted TIMESTAMP(NANOS) check (src/engine/parquet-utc-nanos.ts):
 * it sets the isAdjustedToUTC flag of every nanosecond timestamp, touches nothing else, and
 * leaves a file DuckDB reads whole, with every other column's values as they were. Real files
 * written by DuckDB, with the footer shapes the walker must skip (strings, decimals, structs,
 * lists, maps, key-value metadata, statistics). And the footer edit behind the INT96 check: every
 * INT96 typed FIXED_LEN_BYTE_ARRAY(12), on files pyarrow and Spark wrote.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DuckSession } from '../../src/engine/duckdb.js';
import {
  copyWithInt96AsBytes,
  copyWithNanosUtcFlag,
  int96EpochNsSql,
  int96PartsSql,
} from '../../src/engine/parquet-utc-nanos.js';
import { sharedTable } from '../helpers/shared-tables.js';
import { str } from '../../src/engine/sql.js';

let session: DuckSession;
let dir: string;
beforeAll(async () => {
  session = await DuckSession.open({ threads: 1 });
  dir = await mkdtemp(path.join(os.tmpdir(), 'tidemark-utc-ns-'));
});
afterAll(async () => {
  await session.close();
  await rm(dir, { recursive: true, force: true });
});

const WIDE = `SELECT i AS id, 'név ' || i AS name, (i * 1.25)::DECIMAL(18,3) AS amount,
  TIMESTAMP_NS '2026-01-01 00:00:00.123456789' AS "at",
  {'n': i, 'inner_at': TIMESTAMP_NS '2000-01-01 00:00:00.000000001'} AS s,
  [i, i + 1] AS li, MAP {'k': i} AS m, TIMESTAMP '2026-01-01 00:00:00.5' AS micros
  FROM range(3000) t(i)`;

async function written(select: string, name: string): Promise<string> {
  const file = path.join(dir, name);
  await session.run(
    `COPY (${select}) TO ${str(file)} (FORMAT parquet, KV_METADATA {who: 'tidemark test'})`,
  );
  return file;
}

async function flags(file: string): Promise<Record<string, string>> {
  const rows = await session.all(
    `SELECT name, logical_type FROM parquet_schema(${str(file)}) WHERE logical_type LIKE 'TimestampType%'`,
  );
  return Object.fromEntries(
    rows.map((r) => [
      String(r['name']),
      /isAdjustedToUTC=(\d)/.exec(String(r['logical_type']))![1]!,
    ]),
  );
}

describe('copyWithNanosUtcFlag', () => {
  it('sets the flag of every TIMESTAMP(NANOS), top-level and nested, and no other byte', async () => {
    const naive = await written(WIDE, 'naive.parquet');
    const utc = path.join(dir, 'utc.parquet');
    await copyWithNanosUtcFlag(naive, utc, true);
    expect(await flags(naive)).toEqual({ at: '0', inner_at: '0', micros: '0' });
    expect(await flags(utc)).toEqual({ at: '1', inner_at: '1', micros: '0' });
    const [a, b] = [await readFile(naive), await readFile(utc)];
    expect(b.length).toBe(a.length);
    expect([...a].filter((x, i) => x !== b[i]).length).toBe(2);
    const back = path.join(dir, 'back.parquet');
    await copyWithNanosUtcFlag(utc, back, false);
    expect(Buffer.compare(await readFile(back), a)).toBe(0);
  });

  it('leaves a file DuckDB reads whole: the same rows, the nanosecond column as the same instants', async () => {
    const naive = await written(WIDE, 'rows.parquet');
    const utc = path.join(dir, 'rows-utc.parquet');
    await copyWithNanosUtcFlag(naive, utc, true);
    const same = await session.one(
      `SELECT count(*) AS n FROM (SELECT id, name, amount, epoch_us("at") AS at_us, s.n, li, m, micros FROM read_parquet(${str(naive)}) ` +
        `EXCEPT SELECT id, name, amount, epoch_us("at") AS at_us, s.n, li, m, micros FROM read_parquet(${str(utc)}))`,
    );
    expect(Number(same?.['n'])).toBe(0);
    const types = await session.all(`DESCRIBE SELECT "at" FROM read_parquet(${str(utc)})`);
    expect(types.map((r) => r['column_type'])).toEqual(['TIMESTAMP WITH TIME ZONE']);
  });

  it('copies a file without nanosecond timestamps byte for byte', async () => {
    const plain = await written(
      `SELECT 1 AS id, TIMESTAMP '2026-01-01' AS micros`,
      'plain.parquet',
    );
    const copy = path.join(dir, 'plain-copy.parquet');
    await copyWithNanosUtcFlag(plain, copy, true);
    expect(Buffer.compare(await readFile(copy), await readFile(plain))).toBe(0);
  });
});

const WIDE96 = fileURLToPath(new URL('../../fixtures/parquet/int96-wide.parquet', import.meta.url));
const BASE_NS = 1767225600n * 10n ** 9n;

async function physical(file: string): Promise<Record<string, string>> {
  const rows = await session.all(
    `SELECT name, type, type_length FROM parquet_schema(${str(file)}) WHERE type IS NOT NULL`,
  );
  return Object.fromEntries(
    rows.map((r) => [
      String(r['name']),
      `${String(r['type'])}${r['type_length'] ? `(${String(r['type_length'])})` : ''}`,
    ]),
  );
}

describe('copyWithInt96AsBytes', () => {
  it('types every INT96 (top-level and nested) FIXED_LEN_BYTE_ARRAY(12) and changes only the footer', async () => {
    const copy = path.join(dir, 'wide96.parquet');
    await copyWithInt96AsBytes(WIDE96, copy);
    const before = await physical(WIDE96);
    expect(before).toMatchObject({ at: 'INT96', inner_at: 'INT96', early: 'INT96' });
    expect(await physical(copy)).toEqual({
      ...before,
      at: 'FIXED_LEN_BYTE_ARRAY(12)',
      inner_at: 'FIXED_LEN_BYTE_ARRAY(12)',
      early: 'FIXED_LEN_BYTE_ARRAY(12)',
    });
    const chunkTypes = await session.all(
      `SELECT DISTINCT path_in_schema AS p, type FROM parquet_metadata(${str(copy)}) WHERE type LIKE 'FIXED%' ORDER BY p`,
    );
    expect(chunkTypes.map((r) => r['p'])).toEqual(['at', 'early', 's, inner_at']);
    const [a, b] = [await readFile(WIDE96), await readFile(copy)];
    const dataEnd = a.length - 8 - a.readUInt32LE(a.length - 8);
    // Each INT96 SchemaElement gains its type_length (two bytes); the data is untouched.
    expect(b.length).toBe(a.length + 6);
    expect(Buffer.compare(a.subarray(0, dataEnd), b.subarray(0, dataEnd))).toBe(0);
  });

  it('reads the same rows, and each INT96 value with every nanosecond, before 1970 too', async () => {
    const copy = path.join(dir, 'wide96-rows.parquet');
    await copyWithInt96AsBytes(WIDE96, copy);
    const same = await session.one(
      `SELECT count(*) AS n FROM (SELECT id, name, s.n, li FROM read_parquet(${str(WIDE96)}) ` +
        `EXCEPT SELECT id, name, s.n, li FROM read_parquet(${str(copy)}))`,
    );
    expect(Number(same?.['n'])).toBe(0);
    const epochNs = async (column: string) =>
      new Map(
        (
          await session.all(
            `SELECT id, CAST(${int96EpochNsSql()} AS VARCHAR) AS ns FROM (${int96PartsSql(copy, column, ['id'])})`,
          )
        ).map((r) => [Number(r['id']), r['ns']]),
      );
    const [at, early] = [await epochNs('at'), await epochNs('early')];
    expect(at.size).toBe(100);
    for (let id = 0; id < 100; id++) {
      const i = BigInt(id);
      // As fixtures/parquet/README.md says pyarrow wrote them.
      expect(at.get(id)).toBe(i % 7n === 0n ? null : String(BASE_NS + i * 1_000_001n));
      expect(early.get(id)).toBe(String(BASE_NS - i * 400n * 86400n * 10n ** 9n));
    }
  });

  it("reads Spark's INT96 (parquet-mr's footer) as DuckDB does, in microseconds", async () => {
    const spark = path.join(
      sharedTable('partition-timestamp-int96'),
      'part=2020-01-01 08%3A09%3A10.001/part-00000-bd889aef-417c-4493-b5f7-a9884ba4b247.c000.snappy.parquet',
    );
    const copy = path.join(dir, 'spark96.parquet');
    await copyWithInt96AsBytes(spark, copy);
    const row = await session.one(
      `SELECT epoch_us(a.time) AS us, CAST(${int96EpochNsSql()} AS VARCHAR) AS ns ` +
        `FROM read_parquet(${str(spark)}) a POSITIONAL JOIN (${int96PartsSql(copy, 'time')}) b`,
    );
    expect(row?.['ns']).toBe(`${String(row?.['us'])}000`);
  });

  it('copies a file without INT96 byte for byte', async () => {
    const plain = await written(
      `SELECT 1 AS id, TIMESTAMP '2026-01-01' AS micros`,
      'plain96.parquet',
    );
    const copy = path.join(dir, 'plain96-copy.parquet');
    await copyWithInt96AsBytes(plain, copy);
    expect(Buffer.compare(await readFile(copy), await readFile(plain))).toBe(0);
  });
});
