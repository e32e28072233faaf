import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeDataFiles } from '../../src/engine/data-files.js';
import { parseDuckType, renderDuckType } from '../../src/engine/duck-type.js';
import { DuckSession } from '../../src/engine/duckdb.js';
import { str } from '../../src/engine/sql.js';
import { deltaTypeToDuckForWrite, duckSchemaToDelta } from '../../src/engine/type-map-write.js';
import { describeColumns, readBackSql, symmetricDifference } from './write-helpers.js';

let session: DuckSession;
let dir: string;
beforeAll(async () => {
  session = await DuckSession.open({ threads: 2 });
  dir = await mkdtemp(path.join(tmpdir(), 'tidemark-datafiles-'));
  await session.run(`
    CREATE TABLE src (
      i INTEGER, b BIGINT, dbl DOUBLE, d10 DECIMAL(10,2), d38 DECIMAL(38,10), s VARCHAR, bo BOOLEAN,
      dt DATE, tstz TIMESTAMPTZ, ts TIMESTAMP, bin BLOB, lst INTEGER[], st STRUCT(a INTEGER, "b c" VARCHAR),
      mp MAP(VARCHAR, DOUBLE), nested STRUCT("at" TIMESTAMP, tags VARCHAR[])[]
    )`);
  await session.run(`
    INSERT INTO src VALUES
      (1, 9007199254740993, 1.5, 12.34, 12345678901234567890.1234567890, 'plain', true,
       DATE '2020-02-29', TIMESTAMPTZ '2021-09-08 11:11:11.123456+00', TIMESTAMP '2021-09-08 11:11:11.654321',
       '\\x00\\xFFab'::BLOB, [1, NULL, 3], {'a': 1, 'b c': 'x'}, MAP {'k': 1.25, 'n': NULL},
       [{'at': TIMESTAMP '2000-01-01 00:00:00', 'tags': ['t1']}]),
      (-2147483648, -9223372036854775808, -0.0, -99999999.99, -9999999999999999999999999999.9999999999,
       'unicode é€😀 "dq" ''sq'' \\ back', false, DATE '1969-12-31', TIMESTAMPTZ '1969-12-31 23:59:59.999999+00',
       TIMESTAMP '1900-01-01 00:00:00', ''::BLOB, [], {'a': NULL, 'b c': NULL}, MAP {}, []),
      (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
      (2147483647, 9223372036854775807, 1e308, 0.00, 0, '', true, DATE '9999-12-31',
       TIMESTAMPTZ '2262-04-11 23:47:16+00', TIMESTAMP '2262-04-11 23:47:16', 'x'::BLOB, [NULL],
       {'a': 0, 'b c': ''}, MAP {'': NULL}, [NULL])`);
});
afterAll(async () => {
  session.close();
  await rm(dir, { recursive: true, force: true });
});

/** The source as Delta sees it: the naive TIMESTAMP column read as a UTC instant. */
const SOURCE_AS_UTC = `SELECT * REPLACE (timezone('UTC', ts) AS ts,
  list_transform(nested, x -> CASE WHEN x IS NOT NULL THEN {'at': timezone('UTC', x['at']), 'tags': x['tags']} END) AS nested)
  FROM src`;

describe('writeDataFiles round trip: DuckDB reads back exactly the source rows', () => {
  it('unpartitioned: every supported type, including nulls, equal by EXCEPT ALL both ways', async () => {
    const schema = duckSchemaToDelta(await describeColumns(session, 'src'));
    const files = await writeDataFiles(session, {
      relationSql: 'src',
      schema,
      partitionColumns: [],
      localDir: dir,
    });
    expect(files).toHaveLength(1);
    expect(files[0]!.partitionValues).toEqual({});
    expect(files[0]!.relativePath).toMatch(/^part-00000-[0-9a-f-]{36}-c000\.zstd\.parquet$/);
    expect(files[0]!.stats.numRecords).toBe(4);
    expect(await symmetricDifference(session, SOURCE_AS_UTC, readBackSql(files, schema, []))).toBe(
      0,
    );
  });

  it('files hold exactly the physical types of the Delta schema', async () => {
    const schema = duckSchemaToDelta(await describeColumns(session, 'src'));
    const [file] = await writeDataFiles(session, {
      relationSql: 'src',
      schema,
      partitionColumns: [],
      localDir: dir,
    });
    const written = await describeColumns(session, `read_parquet(${str(file!.localPath)})`);
    expect(written.map((c) => c.name)).toEqual(schema.fields.map((f) => f.name));
    const canonical = (t: string) => renderDuckType(parseDuckType(t));
    expect(written.map((c) => canonical(c.type))).toEqual(
      schema.fields.map((f) => deltaTypeToDuckForWrite(f.type)),
    );
  });

  it('timestamps (TIMESTAMPTZ and naive TIMESTAMP sources, also nested) are INT64 micros with isAdjustedToUTC=true', async () => {
    const schema = duckSchemaToDelta(await describeColumns(session, 'src'));
    const [file] = await writeDataFiles(session, {
      relationSql: 'src',
      schema,
      partitionColumns: [],
      localDir: dir,
    });
    const rows = await session.all(
      `SELECT name, type, logical_type FROM parquet_schema(${str(file!.localPath)}) WHERE name IN ('tstz', 'ts', 'at')`,
    );
    expect(rows.map((r) => r['name']).sort()).toEqual(['at', 'ts', 'tstz']);
    for (const r of rows) {
      expect(r['type']).toBe('INT64');
      expect(String(r['logical_type'])).toContain('isAdjustedToUTC=1');
      expect(String(r['logical_type'])).toContain('MICROS=MicroSeconds()');
    }
  });

  it('a naive TIMESTAMP is stored as the UTC instant with the same digits, read in any session zone', async () => {
    const schema = duckSchemaToDelta(await describeColumns(session, 'src'));
    const [file] = await writeDataFiles(session, {
      relationSql: 'SELECT ts FROM src WHERE i = 1',
      schema: { type: 'struct', fields: schema.fields.filter((f) => f.name === 'ts') },
      partitionColumns: [],
      localDir: dir,
    });
    await session.run(`SET TimeZone = 'America/Los_Angeles'`);
    try {
      const row = await session.one(
        `SELECT epoch_us(ts) AS us FROM read_parquet(${str(file!.localPath)})`,
      );
      expect(row!['us']).toBe(1631099471654321n); // 2021-09-08T11:11:11.654321Z
    } finally {
      await session.run(`SET TimeZone = 'UTC'`);
    }
  });

  it('converted DuckDB types (HUGEINT, unsigned, UUID, ENUM, JSON, TIMESTAMP_NS) land as their Delta types', async () => {
    await session.run(`CREATE OR REPLACE TABLE odd AS SELECT
      12345678901234567890123456789::HUGEINT AS h, 255::UTINYINT AS ut, 4294967295::UINTEGER AS ui,
      18446744073709551615::UBIGINT AS ub, '6b1b2b86-8a1d-4c5b-9e48-9b8e4f2d6f10'::UUID AS u,
      'b'::ENUM('a', 'b') AS e, '[1,2]'::JSON AS j, TIMESTAMP_NS '2020-01-01 00:00:00.123456789' AS tns`);
    const schema = duckSchemaToDelta(await describeColumns(session, 'odd'));
    const [file] = await writeDataFiles(session, {
      relationSql: 'odd',
      schema,
      partitionColumns: [],
      localDir: dir,
    });
    const types = await describeColumns(session, `read_parquet(${str(file!.localPath)})`);
    expect(types.map((c) => c.type)).toEqual([
      'DECIMAL(38,0)',
      'SMALLINT',
      'BIGINT',
      'DECIMAL(20,0)',
      'VARCHAR',
      'VARCHAR',
      'VARCHAR',
      'TIMESTAMP WITH TIME ZONE',
    ]);
    const row = await session.one(
      `SELECT CAST(h AS VARCHAR) h, ut, ui, CAST(ub AS VARCHAR) ub, u, e, j, epoch_us(tns) tns FROM read_parquet(${str(file!.localPath)})`,
    );
    expect(row).toEqual({
      h: '12345678901234567890123456789',
      ut: 255,
      ui: 4294967295n,
      ub: '18446744073709551615',
      u: '6b1b2b86-8a1d-4c5b-9e48-9b8e4f2d6f10',
      e: 'b',
      j: '[1,2]',
      tns: 1577836800123456n,
    });
  });
});

describe('writeDataFiles options and inputs', () => {
  it('an empty relation writes no file', async () => {
    const schema = duckSchemaToDelta(await describeColumns(session, 'src'));
    const files = await writeDataFiles(session, {
      relationSql: 'SELECT * FROM src WHERE false',
      schema,
      partitionColumns: [],
      localDir: dir,
    });
    expect(files).toEqual([]);
  });

  it('matches columns by name ignoring case, ignores extra columns, writes missing nullable columns as null', async () => {
    const schema = duckSchemaToDelta([
      { name: 'Id', type: 'BIGINT' },
      { name: 'label', type: 'VARCHAR' },
    ]);
    const [file] = await writeDataFiles(session, {
      relationSql: `SELECT 7 AS id, 'extra' AS unused`,
      schema,
      partitionColumns: [],
      localDir: dir,
    });
    expect(await session.all(`SELECT * FROM read_parquet(${str(file!.localPath)})`)).toEqual([
      { Id: 7n, label: null },
    ]);
  });

  for (const preserve of [true, false]) {
    it(`splits into files of at most targetFileRows rows, keeping the relation order (preserve_insertion_order=${preserve})`, async () => {
      await session.run(
        `CREATE OR REPLACE TABLE seq AS SELECT (100 - i)::BIGINT AS n FROM range(10) t(i) ORDER BY random()`,
      );
      await session.run(`SET preserve_insertion_order = ${preserve}`);
      try {
        const schema = duckSchemaToDelta([{ name: 'n', type: 'BIGINT' }]);
        const sourceOrder = (await session.all('SELECT n FROM seq')).map((r) => r['n']);
        const files = await writeDataFiles(session, {
          relationSql: 'seq',
          schema,
          partitionColumns: [],
          localDir: dir,
          targetFileRows: 4,
        });
        expect(files.map((f) => f.stats.numRecords)).toEqual([4, 4, 2]);
        const written: unknown[] = [];
        for (const f of files)
          written.push(
            ...(await session.all(`SELECT n FROM read_parquet(${str(f.localPath)})`)).map(
              (r) => r['n'],
            ),
          );
        expect(written).toEqual(sourceOrder);
        expect(new Set(files.map((f) => f.relativePath)).size).toBe(3);
      } finally {
        await session.run('SET preserve_insertion_order = true');
      }
    });
  }

  it('a sorted relation gives clustered files: min/max ranges that do not overlap', async () => {
    const schema = duckSchemaToDelta([{ name: 'n', type: 'BIGINT' }]);
    const files = await writeDataFiles(session, {
      relationSql: 'SELECT (i * 7919) % 1000 AS n FROM range(1000) t(i) ORDER BY n',
      schema,
      partitionColumns: [],
      localDir: dir,
      targetFileRows: 250,
    });
    expect(files.map((f) => [f.stats.minValues!['n'], f.stats.maxValues!['n']])).toEqual([
      [0, 249],
      [250, 499],
      [500, 749],
      [750, 999],
    ]);
  });

  it('honours compression and row group size', async () => {
    const schema = duckSchemaToDelta([{ name: 'n', type: 'BIGINT' }]);
    const [file] = await writeDataFiles(session, {
      relationSql: 'SELECT range AS n FROM range(10000)',
      schema,
      partitionColumns: [],
      localDir: dir,
      compression: 'snappy',
      rowGroupSize: 2048,
    });
    expect(file!.relativePath).toMatch(/\.snappy\.parquet$/);
    const meta = await session.all(
      `SELECT DISTINCT row_group_id, compression FROM parquet_metadata(${str(file!.localPath)}) ORDER BY row_group_id`,
    );
    expect(meta).toHaveLength(5); // 10000 rows in groups of 2048
    expect(meta.every((m) => m['compression'] === 'SNAPPY')).toBe(true);
  });

  it('takes a table name (even one starting like a keyword) or a query as the relation', async () => {
    await session.run(`CREATE OR REPLACE TABLE selection AS SELECT 1 AS n`);
    await session.run(`CREATE OR REPLACE TABLE "with space" AS SELECT 2 AS n`);
    const schema = duckSchemaToDelta([{ name: 'n', type: 'INTEGER' }]);
    for (const [relationSql, n] of [
      ['selection', 1],
      ['"with space"', 2],
      ['FROM selection', 1],
      ['VALUES (3)', null],
    ] as const) {
      const [file] = await writeDataFiles(session, {
        relationSql,
        schema,
        partitionColumns: [],
        localDir: dir,
      });
      expect((await session.one(`SELECT n FROM read_parquet(${str(file!.localPath)})`))!['n']).toBe(
        n,
      );
    }
  });

  it('does not store void columns (always null) in the files', async () => {
    const schema = duckSchemaToDelta([{ name: 'n', type: 'INTEGER' }]);
    schema.fields.push({ name: 'nothing', type: 'void', nullable: true, metadata: {} });
    const [file] = await writeDataFiles(session, {
      relationSql: 'SELECT 1 AS n',
      schema,
      partitionColumns: [],
      localDir: dir,
    });
    expect(
      (await describeColumns(session, `read_parquet(${str(file!.localPath)})`)).map((c) => c.name),
    ).toEqual(['n']);
  });

  it('reports the real file size', async () => {
    const schema = duckSchemaToDelta([{ name: 'n', type: 'BIGINT' }]);
    const [file] = await writeDataFiles(session, {
      relationSql: 'SELECT 1 AS n',
      schema,
      partitionColumns: [],
      localDir: dir,
    });
    const row = await session.one(`SELECT size FROM read_blob(${str(file!.localPath)})`);
    expect(file!.size).toBe(Number(row!['size']));
  });

  // 300k rows span several DuckDB row groups, so staging and the file COPYs run on both threads
  // and on parallel connections; every file must still hold its slice of the relation in order.
  it('keeps the relation order across many row groups and files written in parallel', async () => {
    const rows = 300_007;
    const schema = duckSchemaToDelta([{ name: 'n', type: 'BIGINT' }]);
    const files = await writeDataFiles(session, {
      relationSql: `SELECT (i * 7919) % ${rows} AS n FROM range(${rows}) t(i)`,
      schema,
      partitionColumns: [],
      localDir: dir,
      targetFileRows: 40_000,
    });
    expect(files.map((f) => f.stats.numRecords)).toEqual([
      ...Array<number>(7).fill(40_000),
      20_007,
    ]);
    for (const [j, f] of files.entries()) {
      const expected = `((${j * 40_000} + file_row_number) * 7919) % ${rows}`;
      const misplaced = await session.one(
        `SELECT count(*) AS n FROM read_parquet(${str(f.localPath)}, file_row_number = true) WHERE n <> ${expected}`,
      );
      expect(misplaced).toEqual({ n: 0n });
    }
  });

  it('leaves no staging tables behind, after a write and after a failed one', async () => {
    const staging = async () =>
      (await session.one(
        `SELECT count(*) AS n FROM duckdb_tables() WHERE table_name LIKE '__tidemark_write%'`,
      ))!['n'];
    const schema = duckSchemaToDelta([{ name: 'n', type: 'BIGINT' }]);
    await writeDataFiles(session, {
      relationSql: 'SELECT 1 AS n',
      schema,
      partitionColumns: [],
      localDir: dir,
    });
    expect(await staging()).toBe(0n);
    const failing = writeDataFiles(session, {
      relationSql: `SELECT CAST('x' || i AS BIGINT) AS n FROM range(10) t(i)`,
      schema,
      partitionColumns: [],
      localDir: dir,
    });
    await expect(failing).rejects.toThrow(/reading and casting the rows to write failed/);
    expect(await staging()).toBe(0n);
  });
});
