import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseSchema } from '../../src/delta/schema.js';
import { dedupeLatest } from '../../src/engine/dedupe.js';
import { DuckSession } from '../../src/engine/duckdb.js';
import { fileSelectSql, loadSourceFiles, type LoadFile } from '../../src/engine/load.js';
import { BadFileError } from '../../src/errors.js';

let dir: string;
let session: DuckSession;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tidemark-plist-'));
  session = await DuckSession.open({ threads: 2 });
});
afterAll(async () => {
  session.close();
  await rm(dir, { recursive: true, force: true });
});

function file(name: string, modified: string): LoadFile {
  return {
    localPath: join(dir, name),
    key: `s3://landing/${name}`,
    lastModified: new Date(modified),
    format: 'parquet',
  };
}

async function parquet(name: string, select: string): Promise<void> {
  await session.run(`COPY (${select}) TO '${join(dir, name)}' (FORMAT parquet)`);
}

const LINEAGE =
  'id::INT AS id, _source_file, _source_modified::VARCHAR AS m, _source_row::INT AS r, typeof(_source_row) AS rt';

describe('loading many Parquet files', () => {
  it('gives every row the lineage of reading its file alone', async () => {
    await parquet('p1.parquet', 'SELECT range AS id, range % 3 AS v FROM range(5)');
    await parquet('p2.parquet', 'SELECT range + 10 AS id, range % 3 AS v FROM range(3)');
    await parquet('p3.parquet', 'SELECT 20 AS id, 1 AS v');
    const files = [
      file('p1.parquet', '2026-11-01T00:00:00Z'),
      file('p2.parquet', '2026-11-02T00:00:00Z'),
      file('p3.parquet', '2026-11-03T00:00:00Z'),
    ];
    const { rows } = await loadSourceFiles(session, files, { table: 'many' });
    expect(rows).toBe(9);
    await session.run(
      `CREATE OR REPLACE TEMP TABLE alone AS ${files.map((f) => fileSelectSql(f)).join(' UNION ALL BY NAME ')}`,
    );
    const got = await session.allJson(`SELECT ${LINEAGE} FROM many ORDER BY id`);
    expect(got).toEqual(await session.allJson(`SELECT ${LINEAGE} FROM alone ORDER BY id`));
    expect(got[5]).toEqual({
      id: 10,
      _source_file: 's3://landing/p2.parquet',
      m: '2026-11-02 00:00:00+00',
      r: 1,
      rt: 'BIGINT',
    });
    expect((await session.allJson('DESCRIBE many')).map((r) => r['column_name'])).toEqual([
      'id',
      'v',
      '_source_file',
      '_source_modified',
      '_source_row',
    ]);
  });

  it('the file tie-break of the dedupe orders _source_file (an ENUM) by its UTF-8 text, whatever the list order', async () => {
    // UTF-16 (JS) order puts U+1F600 before U+FF5E; UTF-8 byte order (DuckDB's VARCHAR order) after it.
    const names = ['t\u{1F600}.parquet', 't\uFF5E.parquet', 'tb.parquet', 'ta.parquet'];
    for (const n of names)
      await parquet(n, `SELECT 1 AS id, ${JSON.stringify(n).replaceAll('"', "'")} AS v, 5 AS ts`);
    const same = '2026-11-01T00:00:00Z';
    for (const [i, order] of [names, [...names].reverse()].entries()) {
      await loadSourceFiles(
        session,
        order.map((n) => file(n, same)),
        { table: `tie${i}` },
      );
      expect(
        (await session.one(`SELECT typeof(_source_file) AS t FROM tie${i} LIMIT 1`))?.['t'],
      ).toMatch(/^ENUM\(/);
      const byEnum = await session.allJson(
        `SELECT _source_file::VARCHAR AS f FROM tie${i} ORDER BY _source_file`,
      );
      const byText = await session.allJson(
        `SELECT _source_file::VARCHAR AS f FROM tie${i} ORDER BY _source_file::VARCHAR`,
      );
      expect(byEnum).toEqual(byText);
      await dedupeLatest(session, {
        input: `tie${i}`,
        output: `tie${i}_d`,
        keyColumns: ['id'],
        orderBy: 'ts',
      });
      expect(await session.allJson(`SELECT v FROM tie${i}_d`)).toEqual([
        { v: 't\u{1F600}.parquet' },
      ]);
    }
  });

  it('reads files whose names have glob characters, or a column named filename, literally', async () => {
    await parquet('g[1].parquet', "SELECT 1 AS id, 'x' AS filename");
    await parquet('g1.parquet', "SELECT 99 AS id, 'decoy' AS filename");
    await parquet('g?.parquet', "SELECT 2 AS id, 'y' AS filename");
    const files = [
      file('g[1].parquet', '2026-11-01T00:00:00Z'),
      file('g?.parquet', '2026-11-01T00:00:00Z'),
    ];
    await loadSourceFiles(session, files, { table: 'globby' });
    expect(
      await session.allJson('SELECT id::INT AS id, filename, _source_file FROM globby ORDER BY id'),
    ).toEqual([
      { id: 1, filename: 'x', _source_file: 's3://landing/g[1].parquet' },
      { id: 2, filename: 'y', _source_file: 's3://landing/g?.parquet' },
    ]);
  });

  it('combines files with different columns by name, as reading them one by one would', async () => {
    await parquet('u1.parquet', "SELECT 1 AS id, 'a' AS s");
    await parquet('u2.parquet', 'SELECT 2 AS id, 7 AS extra');
    await parquet('u3.parquet', "SELECT 'three' AS id");
    const files = ['u1', 'u2', 'u3'].map((n) => file(`${n}.parquet`, '2026-11-01T00:00:00Z'));
    await loadSourceFiles(session, files, { table: 'unioned' });
    expect(
      await session.allJson(
        'SELECT id::VARCHAR AS id, s, extra::INT AS extra, _source_row::INT AS r FROM unioned ORDER BY id',
      ),
    ).toEqual([
      { id: '1', s: 'a', extra: null, r: 1 },
      { id: '2', s: null, extra: 7, r: 1 },
      { id: 'three', s: null, extra: null, r: 1 },
    ]);
  });

  it('checks every file of a column new to the table into the type the files combine into', async () => {
    // Read as one, BIGINT beside DOUBLE is DOUBLE: 9007199254740993 would be stored as ...992.
    await parquet('m1.parquet', 'SELECT 1 AS id, 9007199254740992::BIGINT AS v, 1::INT AS w');
    await parquet('m2.parquet', 'SELECT 2 AS id, 1.5::DOUBLE AS v, 5000000000::BIGINT AS w');
    await parquet('m3.parquet', 'SELECT 3 AS id, 9007199254740993::BIGINT AS v, 2::INT AS w');
    const fits = ['m1', 'm2'].map((n) => file(`${n}.parquet`, '2026-11-01T00:00:00Z'));
    await loadSourceFiles(session, fits, { table: 'combined' });
    expect(
      await session.allJson(
        'SELECT id::INT AS id, v::VARCHAR AS v, typeof(v) AS vt, w::VARCHAR AS w, typeof(w) AS wt FROM combined ORDER BY id',
      ),
    ).toEqual([
      { id: 1, v: '9007199254740992.0', vt: 'DOUBLE', w: '1', wt: 'BIGINT' },
      { id: 2, v: '1.5', vt: 'DOUBLE', w: '5000000000', wt: 'BIGINT' },
    ]);
    const err = await loadSourceFiles(
      session,
      ['m2', 'm3'].map((n) => file(`${n}.parquet`, '2026-11-01T00:00:00Z')),
      { table: 'combined2' },
    ).catch((e) => e);
    expect(err).toBeInstanceOf(BadFileError);
    expect(err.context.key).toBe('s3://landing/m3.parquet');
    expect(err.message).toMatch(/value "9007199254740993" of column "v".*row 1/);
  });

  it('combines naive timestamps of different units into a wall clock, as each alone would be', async () => {
    await parquet('w1.parquet', "SELECT 1 AS id, TIMESTAMP_MS '2026-01-01 11:00:00.5' AS t");
    await parquet('w2.parquet', "SELECT 2 AS id, TIMESTAMP_NS '2026-01-01 10:00:00.123456' AS t");
    const files = ['w1', 'w2'].map((n) => file(`${n}.parquet`, '2026-11-01T00:00:00Z'));
    await loadSourceFiles(session, files, { table: 'wall' });
    expect(
      await session.allJson('SELECT t::VARCHAR AS t, typeof(t) AS tt FROM wall ORDER BY id'),
    ).toEqual([
      { t: '2026-01-01 11:00:00.5', tt: 'TIMESTAMP' },
      { t: '2026-01-01 10:00:00.123456', tt: 'TIMESTAMP' },
    ]);
  });

  it('checks a struct field and a list element of a new column the same way', async () => {
    await parquet('n1.parquet', "SELECT 1 AS id, {'a': 9007199254740993::BIGINT} AS s");
    await parquet('n2.parquet', "SELECT 2 AS id, {'a': 1.5::DOUBLE, 'b': 'x'} AS s");
    await parquet('n3.parquet', 'SELECT 3 AS id, [9007199254740993::BIGINT] AS l');
    await parquet('n4.parquet', 'SELECT 4 AS id, [1.5::DOUBLE] AS l');
    for (const [bad, other, column] of [
      ['n1', 'n2', 's.a'],
      ['n3', 'n4', 'l'],
    ] as const) {
      const err = await loadSourceFiles(
        session,
        [other, bad].map((n) => file(`${n}.parquet`, '2026-11-01T00:00:00Z')),
        { table: `nested_${bad}` },
      ).catch((e) => e);
      expect(err).toBeInstanceOf(BadFileError);
      expect(err.context.key).toBe(`s3://landing/${bad}.parquet`);
      expect(err.message).toContain(`of column "${column}`);
    }
  });

  it('reads files of different physical types in the table types, and names the file of a value that does not fit', async () => {
    const schema = parseSchema(
      JSON.stringify({
        type: 'struct',
        fields: [
          { name: 'id', type: 'long', nullable: true, metadata: {} },
          { name: 'amount', type: 'decimal(10,2)', nullable: true, metadata: {} },
        ],
      }),
    );
    await parquet('t1.parquet', 'SELECT 1::INT AS id, 1.5::DOUBLE AS amount');
    await parquet('t2.parquet', 'SELECT 2::INT AS id, 2.25::DOUBLE AS amount');
    await parquet('t3.parquet', "SELECT 3::BIGINT AS id, '3.10' AS amount");
    const files = ['t1', 't2', 't3'].map((n) => file(`${n}.parquet`, '2026-11-01T00:00:00Z'));
    await loadSourceFiles(session, files, { table: 'typed', schema });
    expect(
      await session.allJson(
        'SELECT id::INT AS id, amount::VARCHAR AS amount, typeof(amount) AS t, _source_file FROM typed ORDER BY id',
      ),
    ).toEqual([
      { id: 1, amount: '1.50', t: 'DECIMAL(10,2)', _source_file: 's3://landing/t1.parquet' },
      { id: 2, amount: '2.25', t: 'DECIMAL(10,2)', _source_file: 's3://landing/t2.parquet' },
      { id: 3, amount: '3.10', t: 'DECIMAL(10,2)', _source_file: 's3://landing/t3.parquet' },
    ]);
    await parquet(
      't4.parquet',
      'SELECT range::INT AS id, CASE WHEN range = 2 THEN 1e12 ELSE 1 END::DOUBLE AS amount FROM range(4)',
    );
    const err = await loadSourceFiles(
      session,
      [files[0]!, file('t4.parquet', '2026-11-01T00:00:00Z')],
      { table: 'typed2', schema },
    ).catch((e) => e);
    expect(err).toBeInstanceOf(BadFileError);
    expect(err.context.key).toBe('s3://landing/t4.parquet');
    expect(err.message).toMatch(/row 3/);
    expect(err.message).toMatch(/amount/);
  });
});
