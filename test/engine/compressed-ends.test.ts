/**
 * Compressed source files must be whole: real gzip (zlib) and zstd (written by DuckDB) files, cut
 * off as a writer or a copy that stopped part-way leaves them. DuckDB's readers load the rows
 * before the cut with no error; the load refuses the file, naming it. Whole files of several
 * gzip members or zstd frames (and a skippable frame) load every row.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { constants, deflateRawSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DuckSession } from '../../src/engine/duckdb.js';
import { loadSourceFiles, type LoadFile } from '../../src/engine/load.js';
import { resolveFormat } from '../../src/engine/source-format.js';
import { BadFileError } from '../../src/errors.js';

let dir: string;
let session: DuckSession;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tidemark-compressed-'));
  session = await DuckSession.open({ threads: 2 });
});
afterAll(async () => {
  session.close();
  await rm(dir, { recursive: true, force: true });
});

const CSV = 'id,v\n' + Array.from({ length: 20_000 }, (_, i) => `${i},${i * 7}\n`).join('');

async function land(name: string, body: string | Buffer): Promise<LoadFile> {
  await writeFile(join(dir, name), body);
  return {
    localPath: join(dir, name),
    key: `s3://landing/${name}`,
    lastModified: new Date('2026-11-01T00:00:00Z'),
    format: resolveFormat(name),
  };
}

async function rowCount(files: LoadFile[]): Promise<number> {
  return (await loadSourceFiles(session, files, { table: 'c_t' })).rows;
}

async function refusal(files: LoadFile[]): Promise<BadFileError> {
  const err = await loadSourceFiles(session, files, { table: 'c_bad' }).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(BadFileError);
  return err as BadFileError;
}

/** A gzip stream flushed but never finished: no last block, no CRC and length. */
function unfinishedGzip(text: string): Buffer {
  const header = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]);
  return Buffer.concat([
    header,
    deflateRawSync(Buffer.from(text), { finishFlush: constants.Z_SYNC_FLUSH }),
  ]);
}

/** `text` as a zstd file written by DuckDB. */
async function zstd(text: string): Promise<Buffer> {
  const plain = join(dir, `plain-${Math.random()}.csv`);
  await writeFile(plain, text);
  const out = join(dir, `out-${Math.random()}.zst`);
  await session.run(
    `COPY (SELECT * FROM read_csv('${plain}', header = false, columns = {'l': 'VARCHAR'}, delim = chr(1), quote = '', escape = '')) TO '${out}' (FORMAT csv, HEADER false, QUOTE '', COMPRESSION zstd)`,
  );
  return readFile(out);
}

describe('a gzip file', () => {
  it('cut off before its end is refused naming it (DuckDB read its 3 rows)', async () => {
    const f = await land('cut.csv.gz', unfinishedGzip('id,v\n1,2\n3,4\n5,6\n'));
    const err = await refusal([f]);
    expect(err.context).toMatchObject({ key: 's3://landing/cut.csv.gz' });
    expect(err.message).toBe(
      '[load] cannot read s3://landing/cut.csv.gz: its gzip data ends before its end marker (zlib: unexpected end of file); ' +
        'a file cut off while it was written or copied: load it again once it is whole',
    );
  });

  it('cut off, among whole files of the batch, and larger than one read, is the one named', async () => {
    const whole = await land('whole.csv.gz', gzipSync(CSV));
    // Random text: a gzip file past the size read in one call, inflated as a stream.
    const big = gzipSync(`id,v\n1,${randomBytes(5 * 2 ** 20).toString('base64')}\n`);
    const cut = await land('big-cut.csv.gz', big.subarray(0, big.length - 8));
    expect(big.length).toBeGreaterThan(4 * 2 ** 20);
    const err = await refusal([whole, cut]);
    expect(err.context).toMatchObject({ key: 's3://landing/big-cut.csv.gz' });
    expect(err.message).toContain('its gzip data ends before its end marker');
  });

  it('with bytes after its end that are no gzip member is refused as damaged', async () => {
    const f = await land(
      'junk.csv.gz',
      Buffer.concat([gzipSync('id,v\n1,2\n'), Buffer.from('junk')]),
    );
    expect((await refusal([f])).message).toContain(
      'its gzip data is damaged (zlib: incorrect header check)',
    );
  });

  it('of NDJSON, cut off, is refused the same way', async () => {
    const f = await land('cut.ndjson.gz', unfinishedGzip('{"id":1}\n{"id":2}\n'));
    expect((await refusal([f])).message).toContain('its gzip data ends before its end marker');
  });

  it('whole, of two members, loads every row', async () => {
    const f = await land(
      'members.csv.gz',
      Buffer.concat([gzipSync('id,v\n1,2\n'), gzipSync('3,4\n')]),
    );
    expect(await rowCount([f])).toBe(2);
  });
});

describe('a zstd file', () => {
  it('cut off is refused naming it (DuckDB read the rows before the cut)', async () => {
    const data = await zstd(CSV);
    const f = await land('cut.csv.zst', data.subarray(0, Math.floor(data.length / 2)));
    const err = await refusal([f]);
    expect(err.context).toMatchObject({ key: 's3://landing/cut.csv.zst' });
    expect(err.message).toMatch(/its zstd data ends at byte \d+, inside a frame/);
  });

  it('whole, of two frames and a skippable frame, loads every row; bytes past the last frame are refused', async () => {
    const skippable = Buffer.from([0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 1, 2, 3]);
    const parts = [await zstd(CSV), skippable, await zstd('20000,1\n20001,2\n')];
    const f = await land('frames.csv.zst', Buffer.concat(parts));
    expect(await rowCount([f])).toBe(20_002);
    const g = await land('trailing.csv.zst', Buffer.concat([parts[0]!, Buffer.from('junk')]));
    expect((await refusal([g])).message).toContain('holds bytes that are no zstd frame');
  });
});
