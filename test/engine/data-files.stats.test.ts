import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statsJson } from '../../src/delta/stats.js';
import { writeDataFiles, type WrittenFile } from '../../src/engine/data-files.js';
import { DuckSession } from '../../src/engine/duckdb.js';
import { str } from '../../src/engine/sql.js';
import { duckSchemaToDelta } from '../../src/engine/type-map-write.js';
import { describeColumns } from './write-helpers.js';

let session: DuckSession;
let dir: string;
beforeAll(async () => {
  session = await DuckSession.open({ threads: 2 });
  dir = await mkdtemp(path.join(tmpdir(), 'tidemark-stats-'));
});
afterAll(async () => {
  session.close();
  await rm(dir, { recursive: true, force: true });
});

/** Write `sql` as one unpartitioned file with a schema derived from its DuckDB types. */
async function writeOne(sql: string, numIndexedCols?: number): Promise<WrittenFile> {
  const schema = duckSchemaToDelta(await describeColumns(session, `(${sql})`));
  const files = await writeDataFiles(session, {
    relationSql: sql,
    schema,
    partitionColumns: [],
    localDir: dir,
    ...(numIndexedCols === undefined ? {} : { stats: { numIndexedCols } }),
  });
  expect(files).toHaveLength(1);
  return files[0]!;
}

const LONG_A = 'a'.repeat(40);
const LONG_Z = 'z'.repeat(32) + 'é' + 'z'.repeat(8);

describe('per-file stats', () => {
  it('numRecords, min, max and nullCount for numeric, decimal, date, timestamp and string columns', async () => {
    const file = await writeOne(`SELECT * FROM (VALUES
        (1, 10::BIGINT, 1.5::DOUBLE, 1.50::DECIMAL(10,2), DATE '2020-01-01', TIMESTAMPTZ '2020-02-01 08:09:10.123999+00', 'b'),
        (3, NULL, -2.25, 99999999.99, DATE '2021-12-31', TIMESTAMPTZ '2020-02-01 08:09:10.999999+00', 'a'),
        (NULL, 9007199254740993, NULL, NULL, NULL, NULL, NULL)
      ) t(i, b, dbl, dec, dt, ts, s)`);
    expect(file.stats).toMatchObject({
      numRecords: 3,
      minValues: {
        i: 1,
        b: 10,
        dbl: -2.25,
        dt: '2020-01-01',
        ts: '2020-02-01T08:09:10.123Z',
        s: 'a',
      },
      maxValues: { i: 3, dbl: 1.5, dt: '2021-12-31', ts: '2020-02-01T08:09:10.999Z', s: 'b' },
      nullCount: { i: 1, b: 1, dbl: 1, dec: 1, dt: 1, ts: 1, s: 1 },
    });
    // Longs beyond 2^53 and decimals keep every digit in the JSON text.
    const json = statsJson(file.stats);
    expect(json).toContain('"b":9007199254740993');
    expect(json).toContain('"dec":1.50');
    expect(json).toContain('"dec":99999999.99');
    expect(json.startsWith('{"numRecords":3,"minValues":')).toBe(true);
  });

  it('an ENUM column (as the load makes _source_file) is written as UTF-8 strings with text-order min/max, not ENUM order', async () => {
    const file = await writeOne(
      `SELECT CAST(v AS ENUM('zebra', 'apple', 'mango')) AS f FROM (VALUES ('zebra'), ('apple'), ('mango')) t(v)`,
    );
    expect(file.stats).toMatchObject({
      numRecords: 3,
      minValues: { f: 'apple' },
      maxValues: { f: 'zebra' },
      nullCount: { f: 0 },
    });
    const col = await session.one(
      `SELECT type, converted_type FROM parquet_schema(${str(file.localPath)}) WHERE name = 'f'`,
    );
    expect(col).toEqual({ type: 'BYTE_ARRAY', converted_type: 'UTF8' });
    const rows = await session.all(`SELECT f FROM read_parquet(${str(file.localPath)}) ORDER BY f`);
    expect(rows.map((r) => r['f'])).toEqual(['apple', 'mango', 'zebra']);
  });

  it('a floored timestamp max is at most 999 µs below the true max and never above it', async () => {
    const file = await writeOne(`SELECT TIMESTAMPTZ '2020-02-01 08:09:10.999999+00' AS ts`);
    expect((file.stats.maxValues as Record<string, unknown>)['ts']).toBe(
      '2020-02-01T08:09:10.999Z',
    );
  });

  it('decimal(38,10) extremes are exact in statsJson', async () => {
    const file = await writeOne(`SELECT * FROM (VALUES
        (-9999999999999999999999999999.9999999999::DECIMAL(38,10)), (0::DECIMAL(38,10)), (12345678901234567890.1234567890)) t(d)`);
    const parsed = statsJson(file.stats);
    expect(parsed).toContain('"minValues":{"d":-9999999999999999999999999999.9999999999}');
    expect(parsed).toContain('"maxValues":{"d":12345678901234567890.1234567890}');
  });

  it('structs nest; bool, binary, list and map get only nullCount', async () => {
    const file = await writeOne(`SELECT * FROM (VALUES
        ({'a': 1, 'inner': {'x': 'k'}}, true, 'x'::BLOB, [1, 2], MAP {'k': 1}),
        ({'a': NULL, 'inner': NULL}, NULL, NULL, NULL, NULL),
        (NULL, false, 'y'::BLOB, [], MAP {})
      ) t(st, bo, bin, lst, mp)`);
    expect(file.stats).toEqual({
      numRecords: 3,
      minValues: { st: { a: 1, inner: { x: 'k' } } },
      maxValues: { st: { a: 1, inner: { x: 'k' } } },
      nullCount: { st: { a: 2, inner: { x: 2 } }, bo: 1, bin: 1, lst: 1, mp: 1 },
    });
  });

  it('an all-null column has a nullCount but no min/max; NaN and infinity are left out', async () => {
    const file = await writeOne(
      `SELECT * FROM (VALUES (NULL::INTEGER, 'nan'::DOUBLE, 1.0::DOUBLE), (NULL, 1.0, 'inf'::DOUBLE)) t(n, x, y)`,
    );
    expect(file.stats).toEqual({
      numRecords: 2,
      minValues: { x: 1, y: 1 },
      maxValues: {},
      nullCount: { n: 2, x: 0, y: 0 },
    });
  });

  it('strings: min cut to 32 characters; a cut max gets U+007F (or U+10FFFF after a non-ASCII character)', async () => {
    const a = await writeOne(`SELECT * FROM (VALUES (${str(LONG_A)}), ('b')) t(s)`);
    expect(a.stats.minValues).toEqual({ s: 'a'.repeat(32) });
    const z = await writeOne(`SELECT * FROM (VALUES (${str(LONG_Z)}), (${str(LONG_A)})) t(s)`);
    const max = (z.stats.maxValues as Record<string, string>)['s']!;
    expect(max).toBe('z'.repeat(32) + '\u{10FFFF}');
    // The bound holds in DuckDB's (UTF-8 byte) order, which is Spark's too.
    const cmp = await session.one(
      `SELECT ${str(max)} >= ${str(LONG_Z)} AS ok, ${str('a'.repeat(32) + '\u007F')} >= ${str(LONG_A)} AS ok2`,
    );
    expect(cmp).toEqual({ ok: true, ok2: true });
    const az = await writeOne(`SELECT ${str(LONG_A)} AS s`);
    expect(az.stats.maxValues).toEqual({ s: 'a'.repeat(32) + '\u007F' });
  });

  it('only the first numIndexedCols leaf columns get stats (a struct counts its leaves)', async () => {
    const file = await writeOne(`SELECT 1 AS a, {'x': 2, 'y': 3} AS st, 4 AS b`, 2);
    expect(file.stats).toEqual({
      numRecords: 1,
      minValues: { a: 1, st: { x: 2 } },
      maxValues: { a: 1, st: { x: 2 } },
      nullCount: { a: 0, st: { x: 0 } },
    });
    const none = await writeOne(`SELECT 1 AS a`, 0);
    expect(none.stats).toEqual({ numRecords: 1, minValues: {}, maxValues: {}, nullCount: {} });
  });
});
