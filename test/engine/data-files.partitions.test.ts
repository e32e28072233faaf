import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addFileFor } from '../../src/delta/file-actions.js';
import { writeDataFiles } from '../../src/engine/data-files.js';
import { DuckSession } from '../../src/engine/duckdb.js';
import { str } from '../../src/engine/sql.js';
import { duckSchemaToDelta } from '../../src/engine/type-map-write.js';
import { SchemaError } from '../../src/errors.js';
import { describeColumns, readBackSql, symmetricDifference } from './write-helpers.js';

let session: DuckSession;
let dir: string;
beforeAll(async () => {
  session = await DuckSession.open({ threads: 2 });
  dir = await mkdtemp(path.join(tmpdir(), 'tidemark-partitions-'));
});
afterAll(async () => {
  session.close();
  await rm(dir, { recursive: true, force: true });
});

const FILE_NAME = /^part-\d{5}-[0-9a-f-]{36}-c000\.zstd\.parquet$/;

/** A map key for a partition value that keeps null apart from the string "null". */
const key = (v: string | null | undefined) => (v === null || v === undefined ? '<null>' : v);

/** The folder part of each file's key, by the value of one partition column. */
function foldersBy(
  files: { relativePath: string; partitionValues: Record<string, string | null> }[],
  col: string,
) {
  return Object.fromEntries(
    files.map((f) => {
      const parts = f.relativePath.split('/');
      expect(parts.at(-1)).toMatch(FILE_NAME);
      return [key(f.partitionValues[col]), parts.slice(0, -1).join('/')];
    }),
  );
}

describe('partitioned writes', () => {
  it('string values with special characters, null and "" give Spark folders, encoded log paths and exact values', async () => {
    await session.run(`CREATE OR REPLACE TABLE special AS SELECT * FROM (VALUES
      (1, 'a/b'), (2, 'x=y'), (3, '100%'), (4, 'with space'), (5, 'é€😀'), (6, '12:30'), (7, NULL), (8, ''), (9, 'a/b'),
      (10, 'null')) t(id, part)`);
    const schema = duckSchemaToDelta(await describeColumns(session, 'special'));
    const files = await writeDataFiles(session, {
      relationSql: 'special',
      schema,
      partitionColumns: ['part'],
      localDir: dir,
    });
    expect(foldersBy(files, 'part')).toEqual({
      'a/b': 'part=a%2Fb',
      'x=y': 'part=x%3Dy',
      '100%': 'part=100%25',
      'with space': 'part=with space',
      'é€😀': 'part=é€😀',
      '12:30': 'part=12%3A30',
      '<null>': 'part=__HIVE_DEFAULT_PARTITION__',
      null: 'part=null',
    });
    const byValue = Object.fromEntries(files.map((f) => [key(f.partitionValues['part']), f]));
    expect(byValue['a/b']!.stats.numRecords).toBe(2);
    expect(byValue['null']!.partitionValues).toEqual({ part: 'null' });
    expect(byValue['null']!.stats.numRecords).toBe(1);
    expect(byValue['<null>']!.partitionValues).toEqual({ part: null });
    expect(byValue['<null>']!.stats.numRecords).toBe(2); // NULL and '' (Delta reads '' as null)
    expect(byValue['100%']!.logPath).toMatch(/^part=100%2525\//);
    expect(byValue['with space']!.logPath).toMatch(/^part=with%20space\//);
    expect(byValue['é€😀']!.logPath).toMatch(/^part=%C3%A9%E2%82%AC%F0%9F%98%80\//);
    for (const f of files) expect(decodeURIComponent(f.logPath)).toBe(f.relativePath);
    // Files are in order of each partition's first row.
    expect(files.map((f) => f.partitionValues['part'])).toEqual([
      'a/b',
      'x=y',
      '100%',
      'with space',
      'é€😀',
      '12:30',
      null,
      'null',
    ]);
    const expected = `SELECT id, NULLIF(part, '') AS part FROM special`;
    expect(await symmetricDifference(session, expected, readBackSql(files, schema, ['part']))).toBe(
      0,
    );
  });

  it('partition columns are not stored in the data files and get no stats', async () => {
    const schema = duckSchemaToDelta([
      { name: 'id', type: 'INTEGER' },
      { name: 'p', type: 'VARCHAR' },
    ]);
    const [file] = await writeDataFiles(session, {
      relationSql: `SELECT 1 AS id, 'v' AS p`,
      schema,
      partitionColumns: ['p'],
      localDir: dir,
    });
    expect(
      (await describeColumns(session, `read_parquet(${str(file!.localPath)})`)).map((c) => c.name),
    ).toEqual(['id']);
    expect(file!.stats.nullCount).toEqual({ id: 0 });
  });

  it('date and timestamp partitions: yyyy-MM-dd and ISO-8601 UTC with microseconds; a naive TIMESTAMP is UTC', async () => {
    await session.run(`CREATE OR REPLACE TABLE dated AS SELECT * FROM (VALUES
      (1, DATE '2020-01-01', TIMESTAMPTZ '2021-09-08 13:11:11+02', TIMESTAMP '2021-09-08 11:11:11.5'),
      (2, DATE '2020-01-01', TIMESTAMPTZ '2021-09-08 11:11:11+00', TIMESTAMP '2021-09-08 11:11:11.5'),
      (3, NULL, NULL, NULL)) t(id, dt, ts, naive)`);
    const schema = duckSchemaToDelta(await describeColumns(session, 'dated'));
    const files = await writeDataFiles(session, {
      relationSql: 'dated',
      schema,
      partitionColumns: ['dt', 'ts', 'naive'],
      localDir: dir,
    });
    expect(files.map((f) => f.partitionValues)).toEqual([
      { dt: '2020-01-01', ts: '2021-09-08T11:11:11.000000Z', naive: '2021-09-08T11:11:11.500000Z' },
      { dt: null, ts: null, naive: null },
    ]);
    expect(files[0]!.stats.numRecords).toBe(2);
    expect(files[0]!.relativePath.split('/').slice(0, 3)).toEqual([
      'dt=2020-01-01',
      'ts=2021-09-08T11%3A11%3A11.000000Z',
      'naive=2021-09-08T11%3A11%3A11.500000Z',
    ]);
    expect(
      files[0]!.logPath.startsWith('dt=2020-01-01/ts=2021-09-08T11%253A11%253A11.000000Z/naive='),
    ).toBe(true);
    expect(files[1]!.relativePath).toMatch(
      /^dt=__HIVE_DEFAULT_PARTITION__\/ts=__HIVE_DEFAULT_PARTITION__\/naive=__HIVE_DEFAULT_PARTITION__\/part-/,
    );
    const expected = `SELECT id, dt, ts, timezone('UTC', naive) AS naive FROM dated`;
    expect(
      await symmetricDifference(
        session,
        expected,
        readBackSql(files, schema, ['dt', 'ts', 'naive']),
      ),
    ).toBe(0);
  });

  it('integer, decimal, boolean and double partition values use Delta’s string forms', async () => {
    const schema = duckSchemaToDelta([
      { name: 'id', type: 'INTEGER' },
      { name: 'n', type: 'BIGINT' },
      { name: 'd', type: 'DECIMAL(12,5)' },
      { name: 'b', type: 'BOOLEAN' },
      { name: 'x', type: 'DOUBLE' },
    ]);
    const [file] = await writeDataFiles(session, {
      relationSql: `SELECT 1 AS id, -42 AS n, 234 AS d, true AS b, 1 AS x`,
      schema,
      partitionColumns: ['n', 'd', 'b', 'x'],
      localDir: dir,
    });
    expect(file!.partitionValues).toEqual({ n: '-42', d: '234.00000', b: 'true', x: '1.0' });
    expect(file!.relativePath).toMatch(/^n=-42\/d=234\.00000\/b=true\/x=1\.0\/part-/);
  });

  it('keeps each partition in relation order across many row groups and parallel file writes', async () => {
    const rows = 300_007;
    await session.run(`CREATE OR REPLACE TABLE scattered AS
      SELECT i AS seq, (i * 7919) % ${rows} AS n, CAST(((i * 7919) % ${rows}) % 3 AS VARCHAR) AS p FROM range(${rows}) t(i)`);
    const schema = duckSchemaToDelta(await describeColumns(session, 'scattered'));
    const files = await writeDataFiles(session, {
      relationSql: 'SELECT n, p FROM scattered ORDER BY seq',
      schema,
      partitionColumns: ['p'],
      localDir: dir,
      targetFileRows: 30_000,
    });
    const partitions = files.map((f) => f.partitionValues['p']);
    expect(partitions).toEqual(['0', '0', '0', '0', '2', '2', '2', '2', '1', '1', '1', '1']);
    // Concatenated per partition, the files hold the partition's rows in source (seq) order.
    const fileList = (p: string) =>
      files.filter((f) => f.partitionValues['p'] === p).map((f) => str(f.localPath));
    for (const p of ['0', '1', '2']) {
      const misplaced = await session.one(`
        WITH written AS (SELECT n, row_number() OVER () AS pos FROM read_parquet([${fileList(p).join(', ')}])),
             wanted AS (SELECT n, row_number() OVER (ORDER BY seq) AS pos FROM scattered WHERE p = ${str(p)})
        SELECT count(*) AS n FROM written FULL JOIN wanted USING (pos) WHERE written.n IS DISTINCT FROM wanted.n`);
      expect(misplaced).toEqual({ n: 0n });
    }
  });

  it('splits big partitions by targetFileRows, each file keeping the relation order', async () => {
    await session.run(`CREATE OR REPLACE TABLE interleaved AS
      SELECT i AS seq, CASE WHEN i % 3 = 0 THEN 'a' ELSE 'b' END AS p FROM range(12) t(i)`);
    const schema = duckSchemaToDelta(await describeColumns(session, 'interleaved'));
    const files = await writeDataFiles(session, {
      relationSql: 'interleaved',
      schema,
      partitionColumns: ['p'],
      localDir: dir,
      targetFileRows: 3,
    });
    const contents: [string | null | undefined, unknown[]][] = [];
    for (const f of files) {
      const rows = await session.all(`SELECT seq FROM read_parquet(${str(f.localPath)})`);
      contents.push([f.partitionValues['p'], rows.map((r) => Number(r['seq']))]);
    }
    expect(contents).toEqual([
      ['a', [0, 3, 6]],
      ['a', [9]],
      ['b', [1, 2, 4]],
      ['b', [5, 7, 8]],
      ['b', [10, 11]],
    ]);
    expect(files.map((f) => f.stats.minValues)).toEqual([
      { seq: 0 },
      { seq: 9 },
      { seq: 1 },
      { seq: 5 },
      { seq: 10 },
    ]);
  });

  it('addFileFor builds the add action with the encoded path and stats JSON', async () => {
    const schema = duckSchemaToDelta([
      { name: 'id', type: 'INTEGER' },
      { name: 'p', type: 'VARCHAR' },
    ]);
    const [file] = await writeDataFiles(session, {
      relationSql: `SELECT 5 AS id, 'a b' AS p`,
      schema,
      partitionColumns: ['p'],
      localDir: dir,
    });
    const add = addFileFor(file!, { modificationTime: 1700000000000 });
    expect(add).toEqual({
      path: file!.logPath,
      partitionValues: { p: 'a b' },
      size: file!.size,
      modificationTime: 1700000000000,
      dataChange: true,
      stats: '{"numRecords":1,"minValues":{"id":5},"maxValues":{"id":5},"nullCount":{"id":0}}',
    });
    expect(add.path.startsWith('p=a%20b/part-')).toBe(true);
  });

  it('refuses an unknown partition column, an all-partition schema and a binary partition column, naming them', async () => {
    const schema = duckSchemaToDelta([
      { name: 'id', type: 'INTEGER' },
      { name: 'blob', type: 'BLOB' },
    ]);
    const base = { relationSql: `SELECT 1 AS id, 'x'::BLOB AS blob`, schema, localDir: dir };
    await expect(writeDataFiles(session, { ...base, partitionColumns: ['nope'] })).rejects.toThrow(
      /"nope"/,
    );
    await expect(
      writeDataFiles(session, { ...base, partitionColumns: ['id', 'blob'] }),
    ).rejects.toThrow(SchemaError);
    await expect(writeDataFiles(session, { ...base, partitionColumns: ['blob'] })).rejects.toThrow(
      /"blob"/,
    );
  });
});
