/**
 * Stats of a directly written file taken from its COPY's RETURN_STATS (../../src/engine/copy-stats.ts)
 * against the stats query over the rows (the staged writer's): the same add.stats text, byte for
 * byte, for every type the stats tests cover; where the Parquet writer's figures would differ
 * (NaN, arrays, maps, long strings, ENUMs, BC and five-digit years) the file is read back instead.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statsJson } from '../../src/delta/stats.js';
import { writeDataFiles } from '../../src/engine/data-files.js';
import { DuckSession } from '../../src/engine/duckdb.js';
import { str } from '../../src/engine/sql.js';
import { duckSchemaToDelta } from '../../src/engine/type-map-write.js';
import { describeColumns } from './write-helpers.js';

let session: DuckSession;
let dir: string;
let written = 0;
beforeAll(async () => {
  session = await DuckSession.open({ threads: 2 });
  dir = await mkdtemp(path.join(tmpdir(), 'tidemark-copy-stats-'));
});
afterAll(async () => {
  session.close();
  await rm(dir, { recursive: true, force: true });
});

const LONG_A = 'a'.repeat(40);
const LONG_Z = 'z'.repeat(32) + 'é' + 'z'.repeat(8);
/** 255 UTF-8 bytes: the longest string the writer keeps whole in its statistics. */
const LONGEST_KEPT = 'é'.repeat(127) + 'x';
const EMOJI_AT_CUT = 'q'.repeat(31) + '😀' + 'r'.repeat(5);

/** Relations whose stats come from the COPY (no read-back). */
const FROM_COPY: Record<string, string> = {
  'integers of every width, extremes and beyond 2^53': `SELECT * FROM (VALUES
      ((-128)::TINYINT, (-32768)::SMALLINT, (-2147483648)::INTEGER, (-9223372036854775807 - 1)::BIGINT),
      (127::TINYINT, 32767::SMALLINT, 2147483647::INTEGER, 9223372036854775807::BIGINT),
      (NULL, 0::SMALLINT, NULL, 9007199254740993::BIGINT)) t(ti, si, i, b)`,
  'floats and doubles: fractions, signed zero, extremes, infinity': `SELECT * FROM (VALUES
      (0.1::FLOAT, 0.1::DOUBLE, (1.0 / 3)::DOUBLE, -0.0::DOUBLE, 'inf'::DOUBLE),
      (1.5e-7::FLOAT, 1e300::DOUBLE, -2.25::DOUBLE, 0.0::DOUBLE, 1.0::DOUBLE),
      (3.4e38::FLOAT, -1e-300::DOUBLE, NULL, NULL, '-inf'::DOUBLE)) t(f, d, third, z, inf)`,
  'decimals, small and 38 digits': `SELECT * FROM (VALUES
      (1.50::DECIMAL(10,2), -9999999999999999999999999999.9999999999::DECIMAL(38,10), -5.000::DECIMAL(5,3)),
      (99999999.99::DECIMAL(10,2), 12345678901234567890.1234567890::DECIMAL(38,10), NULL),
      (NULL, 0::DECIMAL(38,10), 0.5::DECIMAL(5,3))) t(d2, d38, d53)`,
  'dates, timestamps and wall clocks, microseconds floored': `SELECT * FROM (VALUES
      (DATE '0001-01-01', TIMESTAMPTZ '2020-02-01 08:09:10.123999+00', TIMESTAMP '2020-02-01 08:09:10.5', TIMESTAMPTZ '0012-03-04 05:06:07+00'),
      (DATE '9999-12-31', TIMESTAMPTZ '1969-12-31 23:59:59.999999+00', TIMESTAMP '1900-01-01 00:00:00', TIMESTAMPTZ '2020-01-01 00:00:00.5+00'),
      (NULL, NULL, NULL, NULL)) t(dt, ts, ntz, ts2)`,
  'strings: empty, cut, multi-byte, a surrogate pair at the cut, 255 bytes': `SELECT * FROM (VALUES
      ('', ${str(LONG_A)}, ${str(LONG_Z)}, ${str(EMOJI_AT_CUT)}, ${str(LONGEST_KEPT)}),
      ('b', 'a', ${str(LONG_A)}, 'q', 'é'),
      (NULL, ${str('\u{10FFFF}'.repeat(40))}, 'é', NULL, NULL)) t(e, la, lz, emoji, kept)`,
  'structs nest (null structs and null fields), bool and binary get only nullCount': `SELECT * FROM (VALUES
      ({'a': 1, 'inner': {'x': 'k'}}, true, 'x'::BLOB),
      ({'a': NULL, 'inner': NULL}, NULL, NULL),
      (NULL, false, 'y'::BLOB)) t(st, bo, bin)`,
  'all-null columns of each type': `SELECT NULL::INTEGER AS i, NULL::DOUBLE AS d, NULL::VARCHAR AS s, NULL::DATE AS dt,
      NULL::TIMESTAMPTZ AS ts, NULL::DECIMAL(10,2) AS dec, NULL::BOOLEAN AS bo FROM range(3)`,
  'the benchmark orders': `SELECT range AS order_id, range % 97 AS customer_id, 'status-' || (range % 5) AS status,
      (range * 1.25)::DECIMAL(12,2) AS amount, DATE '2020-01-01' + (range % 1000)::INTEGER AS order_date,
      TIMESTAMPTZ '2024-01-01 00:00:00+00' + to_microseconds(range * 1234567) AS updated_at FROM range(5000)`,
};

/** Relations the writer's statistics do not describe as the query does: read back. */
const READ_BACK: Record<string, string> = {
  'a double holding NaN': `SELECT * FROM (VALUES ('nan'::DOUBLE), (1.0)) t(x)`,
  'a list': `SELECT * FROM (VALUES ([1, NULL]), (NULL), ([])) t(l)`,
  'a map': `SELECT * FROM (VALUES (MAP {'k': 1}), (NULL)) t(m)`,
  'a string of 256 bytes': `SELECT ${str('x'.repeat(256))} AS s`,
  'a string of 4-byte characters past 255 bytes': `SELECT ${str('😀'.repeat(70))} AS s`,
  'a timestamp before year 1': `SELECT TIMESTAMPTZ '0001-01-01 00:00:00+00' - INTERVAL 1 day AS ts`,
  'a date past year 9999': `SELECT DATE '10000-03-01' AS d`,
  // The writer gives an ENUM column (the load's _source_file) no min/max.
  'an ENUM column': `SELECT CAST(v AS ENUM('zebra', 'apple')) AS en FROM (VALUES ('zebra'), ('apple')) t(v)`,
};

/**
 * The stats JSON of the relation written directly and staged, and how many statements of the
 * direct write read a Parquet file (the session's `all` observed, not replaced).
 */
async function bothWays(
  relation: string,
): Promise<{ direct: string; staged: string; reads: number }> {
  const schema = duckSchemaToDelta(await describeColumns(session, `(${relation})`));
  const opts = {
    relationSql: relation,
    schema,
    partitionColumns: [],
    stats: { numIndexedCols: -1 },
  };
  const all = session.all.bind(session);
  let reads = 0;
  session.all = (sql: string) => {
    if (sql.includes('read_parquet(')) reads += 1;
    return all(sql);
  };
  let direct;
  try {
    direct = await writeDataFiles(session, { ...opts, localDir: path.join(dir, `d${++written}`) });
  } finally {
    session.all = all;
  }
  // A row group size forces the staged path (stats aggregated over the staged rows).
  const staged = await writeDataFiles(session, {
    ...opts,
    localDir: path.join(dir, `s${written}`),
    rowGroupSize: 1024,
  });
  expect(direct).toHaveLength(1);
  expect(staged).toHaveLength(1);
  return { direct: statsJson(direct[0]!.stats), staged: statsJson(staged[0]!.stats), reads };
}

describe('stats from the COPY that wrote the file', () => {
  for (const [what, relation] of Object.entries(FROM_COPY)) {
    it(`${what}: the same add.stats text as the stats query, without reading the file back`, async () => {
      const { direct, staged, reads } = await bothWays(relation);
      expect(direct).toBe(staged);
      expect(reads).toBe(0);
    });
  }

  for (const [what, relation] of Object.entries(READ_BACK)) {
    it(`${what}: the file is read back, and the stats are the query's`, async () => {
      const { direct, staged, reads } = await bothWays(relation);
      expect(direct).toBe(staged);
      expect(reads).toBe(1);
    });
  }
});
