import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseSchema } from '../../src/delta/schema.js';
import { DuckSession } from '../../src/engine/duckdb.js';
import { loadSourceFiles, type LoadFile } from '../../src/engine/load.js';
import { BadFileError } from '../../src/errors.js';

let dir: string;
let session: DuckSession;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tidemark-bulk-'));
  session = await DuckSession.open({ threads: 2 });
});
afterAll(async () => {
  session.close();
  await rm(dir, { recursive: true, force: true });
});

async function write(name: string, body: string): Promise<LoadFile> {
  await writeFile(join(dir, name), name.endsWith('.gz') ? gzipSync(body) : body);
  const format = name.includes('.ndjson') ? 'ndjson' : name.includes('.json') ? 'json' : 'csv';
  return {
    localPath: join(dir, name),
    key: `s3://landing/${name}`,
    lastModified: new Date('2026-11-01T00:00:00Z'),
    format,
  };
}

/** `n` rows whose `seq` is the row's place in the file, and whose id names file and row. */
function csvRows(f: number, n: number, header = 'id,seq,v'): string {
  const rows = Array.from({ length: n }, (_, i) => {
    const cells: Record<string, string> = {
      id: String(f * 1000 + i),
      seq: String(i + 1),
      v: `"f${f}, row ${i + 1}"`,
    };
    return header
      .split(',')
      .map((c) => cells[c])
      .join(',');
  });
  return `${header}\n${rows.join('\n')}\n`;
}

const LINEAGE_OK = `SELECT count(*) AS n, count(*) FILTER (WHERE _source_row <> seq::BIGINT) AS wrong FROM`;

describe('small text files read in bulk', () => {
  it('CSV files of two headers (columns in another order) and two compressions: every row keeps its values and its place in its file', async () => {
    const files: LoadFile[] = [];
    for (let f = 0; f < 60; f++) {
      const header = f % 3 === 0 ? 'seq,v,id' : 'id,seq,v';
      files.push(
        await write(
          `c${f}.csv${f % 4 === 0 ? '.gz' : ''}`,
          csvRows(f, 1 + ((f * 37) % 90), header),
        ),
      );
    }
    const { rows } = await loadSourceFiles(session, files, { table: 'bulk_csv' });
    const expected = files.reduce((n, _, f) => n + 1 + ((f * 37) % 90), 0);
    expect(rows).toBe(expected);
    expect(await session.one(`${LINEAGE_OK} bulk_csv`)).toEqual({ n: BigInt(expected), wrong: 0n });
    // Values stay with their row: the id names the file, the text names file and row.
    const mixed = await session.one(
      `SELECT count(*) FILTER (WHERE v <> 'f' || (id // 1000)::VARCHAR || ', row ' || seq::VARCHAR OR _source_file <> 's3://landing/c' || (id // 1000)::VARCHAR || '.csv' || CASE WHEN (id // 1000) % 4 = 0 THEN '.gz' ELSE '' END) AS bad FROM bulk_csv`,
    );
    expect(mixed).toEqual({ bad: 0n });
  });

  it('NDJSON files with different keys: each file keeps its own columns, NULL where it lacks one, and its rows their places', async () => {
    const files: LoadFile[] = [];
    for (let f = 0; f < 40; f++) {
      const lines = Array.from({ length: 1 + (f % 7) * 10 }, (_, i) =>
        JSON.stringify({ id: f * 1000 + i, seq: i + 1, ...(f % 2 ? { extra: `x${f}` } : {}) }),
      );
      files.push(await write(`j${f}.ndjson.gz`, `${lines.join('\n')}\n`));
    }
    const { rows } = await loadSourceFiles(session, files, { table: 'bulk_json' });
    expect(await session.one(`${LINEAGE_OK} bulk_json`)).toEqual({ n: BigInt(rows), wrong: 0n });
    expect(
      await session.one(
        `SELECT count(*) FILTER (WHERE (extra IS NULL) <> ((id // 1000) % 2 = 0)) AS bad FROM bulk_json`,
      ),
    ).toEqual({ bad: 0n });
  });

  it("lineage is each file's own: keys with quotes, backslashes, control and non-BMP characters and millisecond times come back exactly", async () => {
    const names = [
      'q"uote\\back.ndjson',
      "o'dd ünï 日本 😀.ndjson",
      'tab\there.ndjson.gz',
      'plain.ndjson',
    ];
    const files: LoadFile[] = [];
    for (const [f, name] of names.entries()) {
      const lines = Array.from({ length: 2 + f }, (_, i) =>
        JSON.stringify({ id: f * 1000 + i, seq: i + 1 }),
      );
      const file = await write(name, `${lines.join('\n')}\n`);
      files.push({
        ...file,
        key: `s3://landing/${name}\u0001\\`,
        lastModified: new Date(Date.UTC(2026, 10, 1, 0, 0, 0, 1) + f * 86_400_123),
      });
    }
    await loadSourceFiles(session, files, { table: 'bulk_lineage' });
    const got = await session.all(
      `SELECT id // 1000 AS f, _source_file AS k, epoch_ms(_source_modified) AS t, count(*) AS n, count(*) FILTER (WHERE _source_row <> seq::BIGINT) AS wrong FROM bulk_lineage GROUP BY ALL ORDER BY f`,
    );
    expect(got).toEqual(
      files.map((file, f) => ({
        f: BigInt(f),
        k: file.key,
        t: BigInt(file.lastModified.getTime()),
        n: BigInt(2 + f),
        wrong: 0n,
      })),
    );
  });

  it('a value that does not fit, in one file of many, is refused naming that file, its row and column', async () => {
    const files: LoadFile[] = [];
    for (let f = 0; f < 50; f++)
      files.push(await write(`m${f}.csv`, f === 37 ? 'id,seq,v\n1,1,a\n2,x2,b\n' : csvRows(f, 5)));
    const schema = parseSchema(
      JSON.stringify({
        type: 'struct',
        fields: ['id', 'seq']
          .map((name) => ({ name, type: 'long', nullable: true, metadata: {} }))
          .concat([{ name: 'v', type: 'string', nullable: true, metadata: {} }]),
      }),
    );
    const err = await loadSourceFiles(session, files, { table: 'misfit', schema }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(BadFileError);
    expect((err as BadFileError).context).toMatchObject({
      key: 's3://landing/m37.csv',
      row: 2,
      column: 'seq',
    });
  });

  it('a ragged row in one file of many is refused naming that file and its line', async () => {
    const files: LoadFile[] = [];
    for (let f = 0; f < 50; f++)
      files.push(await write(`r${f}.csv`, f === 23 ? 'id,seq,v\n1,1,a\n2,2\n' : csvRows(f, 5)));
    const err = await loadSourceFiles(session, files, { table: 'ragged' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BadFileError);
    expect((err as BadFileError).context).toMatchObject({ key: 's3://landing/r23.csv', line: 3 });
    expect((err as Error).message).toContain('line 3: expected 3 fields, found 2');
  });

  it('a malformed JSON file of many is refused naming it', async () => {
    const files: LoadFile[] = [];
    for (let f = 0; f < 30; f++)
      files.push(
        await write(
          `b${f}.ndjson`,
          f === 11 ? '{"id":1,"seq":1}\n{"id": 2, oops\n' : '{"id":1,"seq":1}\n',
        ),
      );
    const err = await loadSourceFiles(session, files, { table: 'badjson' }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(BadFileError);
    expect((err as BadFileError).context).toMatchObject({
      key: 's3://landing/b11.ndjson',
      line: 2,
    });
    expect((err as Error).message).toMatch(/b11\.ndjson: line 2 \(record 2\): malformed JSON/);
  });
});
