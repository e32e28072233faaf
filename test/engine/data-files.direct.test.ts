/**
 * The direct writer (one COPY to one file, stats read back from it) against the staged one (a
 * staging table, one COPY per file, stats aggregated over the staged rows): same rows, same
 * order, same stats; files never above targetFileRows.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeDirect } from '../../src/engine/data-files-direct.js';
import { statsJson } from '../../src/delta/stats.js';
import { writeDataFiles } from '../../src/engine/data-files.js';
import { DuckSession } from '../../src/engine/duckdb.js';
import { statsLeaves } from '../../src/engine/file-stats.js';
import { ident, str } from '../../src/engine/sql.js';
import { duckSchemaToDelta } from '../../src/engine/type-map-write.js';
import { describeColumns } from './write-helpers.js';

let session: DuckSession;
let dir: string;
beforeAll(async () => {
  session = await DuckSession.open({ threads: 2 });
  dir = await mkdtemp(path.join(tmpdir(), 'tidemark-direct-'));
});
afterAll(async () => {
  session.close();
  await rm(dir, { recursive: true, force: true });
});

describe('direct writes', () => {
  it('write a sorted relation that fits one file by one COPY, in relation order, leaving only that file', async () => {
    const rows = 400_003;
    const schema = duckSchemaToDelta([
      { name: 'n', type: 'BIGINT' },
      { name: 's', type: 'VARCHAR' },
    ]);
    const relationSql = `SELECT (i * 7919) % ${rows} AS n, 'v' || ((i * 7919) % ${rows}) AS s FROM range(${rows}) t(i) ORDER BY n`;
    for (const bound of [{}, { targetFileRows: 500_000, rowsAtMost: rows }]) {
      const localDir = path.join(dir, `one-${Object.keys(bound).length}`);
      const files = await writeDataFiles(session, {
        relationSql,
        schema,
        partitionColumns: [],
        localDir,
        ...bound,
      });
      expect(files).toHaveLength(1);
      const [f] = files;
      expect(f!.stats).toMatchObject({
        numRecords: rows,
        minValues: { n: 0, s: 'v0' },
        maxValues: { n: rows - 1, s: 'v99999' },
        nullCount: { n: 0, s: 0 },
      });
      const misplaced = await session.one(
        `SELECT count(*) AS n FROM read_parquet(${str(f!.localPath)}, file_row_number = true) WHERE n <> file_row_number OR s <> 'v' || n`,
      );
      expect(misplaced).toEqual({ n: 0n });
      expect(await readdir(localDir)).toEqual([f!.relativePath]);
      expect(f!.relativePath).toMatch(/^part-00000-[0-9a-f-]{36}-c000\.zstd\.parquet$/);
    }
  });

  it('split exactly (staged) when the bound on the rows exceeds targetFileRows', async () => {
    const schema = duckSchemaToDelta([{ name: 'n', type: 'BIGINT' }]);
    const files = await writeDataFiles(session, {
      relationSql: 'SELECT range AS n FROM range(1000) ORDER BY n',
      schema,
      partitionColumns: [],
      localDir: path.join(dir, 'split'),
      targetFileRows: 400,
      rowsAtMost: 1000,
    });
    expect(
      files.map((f) => [f.stats.numRecords, f.stats.minValues!['n'], f.stats.maxValues!['n']]),
    ).toEqual([
      [400, 0, 399],
      [400, 400, 799],
      [200, 800, 999],
    ]);
  });

  it('give the same stats as the staged writer for every type, nested and null', async () => {
    const relation = `SELECT * FROM (VALUES
        (1, 9007199254740993::BIGINT, 1.5::DOUBLE, 1.50::DECIMAL(10,2), DATE '2020-01-01', TIMESTAMPTZ '2020-02-01 08:09:10.123999+00',
         TIMESTAMP '2020-02-01 08:09:10.5', ${str('x'.repeat(40) + 'é')}, true, '\\x01'::BLOB, [1, NULL], {'a': 1, 'b': 'q'}, MAP {'k': 2}, 3::TINYINT),
        (3, NULL, -2.25, 99999999.99, DATE '2021-12-31', TIMESTAMPTZ '1969-12-31 23:59:59.999999+00',
         NULL, 'a', false, NULL, NULL, {'a': NULL, 'b': 'r'}, NULL, -3::TINYINT),
        (NULL, -1, 'NaN'::DOUBLE, NULL, NULL, NULL, TIMESTAMP '1900-01-01 00:00:00', NULL, NULL, ''::BLOB, [], NULL, MAP {}, NULL)
      ) t(i, b, dbl, dec, dt, ts, ntz, s, bo, bin, lst, st, mp, ti)`;
    const schema = duckSchemaToDelta(await describeColumns(session, `(${relation})`));
    const direct = await writeDataFiles(session, {
      relationSql: relation,
      schema,
      partitionColumns: [],
      localDir: path.join(dir, 'direct'),
    });
    // A row group size forces the staged path; it does not change any stat.
    const staged = await writeDataFiles(session, {
      relationSql: relation,
      schema,
      partitionColumns: [],
      localDir: path.join(dir, 'staged'),
      rowGroupSize: 1024,
    });
    expect(direct).toHaveLength(1);
    expect(staged).toHaveLength(1);
    expect(statsJson(direct[0]!.stats)).toBe(statsJson(staged[0]!.stats));
    expect(direct[0]!.stats.numRecords).toBe(3);
  });

  it('write nothing for an empty relation', async () => {
    const schema = duckSchemaToDelta([{ name: 'n', type: 'BIGINT' }]);
    const localDir = path.join(dir, 'empty');
    for (const bound of [{}, { targetFileRows: 10, rowsAtMost: 0 }]) {
      const files = await writeDataFiles(session, {
        relationSql: 'SELECT 1::BIGINT AS n WHERE false',
        schema,
        partitionColumns: [],
        localDir,
        ...bound,
      });
      expect(files).toEqual([]);
    }
    expect(await readdir(localDir)).toEqual([]);
  });

  it('give up (null, files removed) when a file would exceed targetFileRows, so the caller writes staged', async () => {
    const localDir = path.join(dir, 'over');
    const leaves = statsLeaves([{ name: 'n', type: 'long', sql: ident('n') }]);
    const written = await writeDirect(session, {
      from: '(SELECT range AS n FROM range(100))',
      select: ['n AS n'],
      leaves,
      localDir,
      codec: 'zstd',
      targetFileRows: 10, // a caller's wrong bound: the relation has 100 rows
      runCopy: (sql) => session.allJson(sql),
    });
    expect(written).toBeNull();
    expect(await readdir(localDir)).toEqual([]);
  });

  it('report a value that does not cast as the writer error, leaving no files', async () => {
    const schema = duckSchemaToDelta([{ name: 'n', type: 'BIGINT' }]);
    const localDir = path.join(dir, 'bad');
    const failing = writeDataFiles(session, {
      relationSql: `SELECT CAST('x' || i AS BIGINT) AS n FROM range(10) t(i)`,
      schema,
      partitionColumns: [],
      localDir,
    });
    await expect(failing).rejects.toThrow(/reading and casting the rows to write failed/);
    expect(await readdir(localDir)).toEqual([]);
  });
});
