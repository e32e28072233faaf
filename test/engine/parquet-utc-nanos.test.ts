/**
 * The footer edit behind the UTC-adjusted TIMESTAMP(NANOS) check (src/engine/parquet-utc-nanos.ts):
 * it sets the isAdjustedToUTC flag of every nanosecond timestamp, touches nothing else, and
 * leaves a file DuckDB reads whole, with every other column's values as they were. Real files
 * written by DuckDB, with the footer shapes the walker must skip (strings, decimals, structs,
 * lists, maps, key-value metadata, statistics).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DuckSession } from '../../src/engine/duckdb.js';
import { copyWithNanosUtcFlag } from '../../src/engine/parquet-utc-nanos.js';
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
