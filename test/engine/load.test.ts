import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DuckSession } from '../../src/engine/duckdb.js';
import { dedupeLatest } from '../../src/engine/dedupe.js';
import { loadFiles, type LoadFile } from '../../src/engine/load.js';
import { formatFromName, resolveFormat } from '../../src/engine/source-format.js';
import { BadFileError } from '../../src/errors.js';

let dir: string;
let session: DuckSession;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tidemark-load-'));
  session = await DuckSession.open({ threads: 2 });
});
afterAll(async () => {
  session.close();
  await rm(dir, { recursive: true, force: true });
});

function file(name: string, modified = '2026-11-01T00:00:00Z'): LoadFile {
  return {
    localPath: join(dir, name),
    key: `landing/${name}`,
    lastModified: new Date(modified),
    format: resolveFormat(name),
  };
}

describe('source formats', () => {
  it('comes from the file name, after a compression suffix', () => {
    expect(formatFromName('a/b/orders.csv.gz')).toBe('csv');
    expect(formatFromName('x.ndjson.zst')).toBe('ndjson');
    expect(formatFromName('x.jsonl')).toBe('ndjson');
    expect(formatFromName('x.parquet')).toBe('parquet');
    expect(formatFromName('x.txt')).toBeNull();
    expect(() => resolveFormat('landing/x.txt')).toThrow(/landing\/x\.txt: cannot tell the format/);
  });
});

describe('loadFiles', () => {
  it('reads parquet, csv, gzip csv, tsv and ndjson into one table with lineage', async () => {
    await session.run(
      `COPY (SELECT 1 AS id, 'a' AS s) TO '${join(dir, 'one.parquet')}' (FORMAT parquet)`,
    );
    await writeFile(join(dir, 'two.csv'), 'id,s\n2,b\n3,c\n');
    await writeFile(join(dir, 'three.csv.gz'), gzipSync('id,s,extra\n4,d,x\n'));
    await writeFile(join(dir, 'four.tsv'), 'id\ts\n5\te\n');
    await writeFile(join(dir, 'five.ndjson'), '{"id":6,"s":"f"}\n{"id":7,"s":"g"}\n');
    const files = ['one.parquet', 'two.csv', 'three.csv.gz', 'four.tsv', 'five.ndjson'].map((n) =>
      file(n),
    );
    const rows = await loadFiles(session, files, { table: 'loaded' });
    expect(rows).toBe(7);
    const out = await session.allJson(
      `SELECT id::INT AS id, s, extra, _source_file, _source_row::INT AS r FROM loaded ORDER BY id`,
    );
    expect(out.map((r) => [r['id'], r['s'], r['extra'], r['_source_file'], r['r']])).toEqual([
      [1, 'a', null, 'landing/one.parquet', 1],
      [2, 'b', null, 'landing/two.csv', 1],
      [3, 'c', null, 'landing/two.csv', 2],
      [4, 'd', 'x', 'landing/three.csv.gz', 1],
      [5, 'e', null, 'landing/four.tsv', 1],
      [6, 'f', null, 'landing/five.ndjson', 1],
      [7, 'g', null, 'landing/five.ndjson', 2],
    ]);
  });

  it('names the corrupt file, not the bulk statement', async () => {
    await session.run(`COPY (SELECT 1 AS id) TO '${join(dir, 'good.parquet')}' (FORMAT parquet)`);
    await writeFile(join(dir, 'corrupt.parquet'), 'PAR1 this is not parquet');
    const err = await loadFiles(session, [file('good.parquet'), file('corrupt.parquet')], {
      table: 'bad',
    }).catch((e) => e);
    expect(err).toBeInstanceOf(BadFileError);
    expect(err.context.key).toBe('landing/corrupt.parquet');
    expect(err.message).toContain('landing/corrupt.parquet');
    expect(err.message).not.toContain(dir);
  });

  it('names the JSON file whose nested field has no Delta type, not a file of its group without it', async () => {
    // Read together, both files' `s` is STRUCT(x, t TIME); read alone, neither is that type.
    await writeFile(join(dir, 'no-time.ndjson'), '{"s":{"x":1}}\n');
    await writeFile(join(dir, 'nested-time.ndjson'), '{"s":{"t":"12:00:00"}}\n');
    const err = await loadFiles(session, [file('no-time.ndjson'), file('nested-time.ndjson')], {
      table: 'nested_time',
    }).catch((e) => e);
    expect(err).toBeInstanceOf(BadFileError);
    expect(err.context).toMatchObject({ key: 'landing/nested-time.ndjson', column: 's.t' });
  });

  it('rejects ragged CSV rows naming the file', async () => {
    await writeFile(join(dir, 'ragged.csv'), 'a,b\n1,2\n3,4,5\n');
    const err = await loadFiles(session, [file('ragged.csv')], { table: 'rag' }).catch((e) => e);
    expect(err).toBeInstanceOf(BadFileError);
    expect(err.context.key).toBe('landing/ragged.csv');
  });
});

describe('dedupeLatest', () => {
  it('keeps the latest row per key, ties broken by file time, name, then row', async () => {
    await writeFile(join(dir, 'd1.csv'), 'id,v,ts\n1,old,1\n2,x,5\n3,first,7\n3,second,7\n');
    await writeFile(join(dir, 'd2.csv'), 'id,v,ts\n1,new,2\n2,later-file-same-ts,5\n');
    const files = [file('d2.csv', '2026-11-02T00:00:00Z'), file('d1.csv', '2026-11-01T00:00:00Z')];
    await loadFiles(session, files, { table: 'dd_in' });
    const n = await dedupeLatest(session, {
      input: 'dd_in',
      output: 'dd_out',
      keyColumns: ['id'],
      orderBy: 'ts',
    });
    expect(n).toBe(3);
    const out = await session.allJson('SELECT id::INT AS id, v FROM dd_out ORDER BY id');
    expect(out).toEqual([
      { id: 1, v: 'new' },
      { id: 2, v: 'later-file-same-ts' },
      { id: 3, v: 'second' },
    ]);
  });

  it('gives the same result whatever the file order', async () => {
    await writeFile(join(dir, 'o1.csv'), 'id,v,ts\n1,a,1\n');
    await writeFile(join(dir, 'o2.csv'), 'id,v,ts\n1,b,1\n');
    const a = [file('o1.csv'), file('o2.csv')];
    await loadFiles(session, a, { table: 'ord1' });
    await loadFiles(session, [...a].reverse(), { table: 'ord2' });
    await dedupeLatest(session, {
      input: 'ord1',
      output: 'ord1_d',
      keyColumns: ['id'],
      orderBy: 'ts',
    });
    await dedupeLatest(session, {
      input: 'ord2',
      output: 'ord2_d',
      keyColumns: ['id'],
      orderBy: 'ts',
    });
    expect(await session.allJson('SELECT v FROM ord1_d')).toEqual([{ v: 'b' }]);
    expect(await session.allJson('SELECT v FROM ord2_d')).toEqual([{ v: 'b' }]);
  });

  it('fails on a null key naming file and row', async () => {
    await writeFile(join(dir, 'nullkey.csv'), 'id,v,ts\n1,a,1\n,b,2\n');
    await loadFiles(session, [file('nullkey.csv')], { table: 'nk' });
    const err = await dedupeLatest(session, {
      input: 'nk',
      output: 'nk_d',
      keyColumns: ['id'],
      orderBy: 'ts',
    }).catch((e) => e);
    expect(err).toBeInstanceOf(BadFileError);
    expect(err.message).toBe('[load] landing/nullkey.csv row 2: key column "id" is null');
  });
});
