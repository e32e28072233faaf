/**
 * The storage contract against both drivers: LocalStorage on a temp folder and S3Storage
 * on s3rver (127.0.0.1, random port, started once for this file), and on moto's S3 server when
 * the run has one (the interop run starts it: test/helpers/moto.ts). Then local-only checks.
 */
import { randomUUID } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StorageError, UnsafeKeyError } from '../../src/errors.js';
import { LocalStorage } from '../../src/storage/local.js';
import { connectMoto, MOTO_ENDPOINT } from '../helpers/moto.js';
import type { MotoHandle } from '../helpers/moto.js';
import { startS3rver } from '../helpers/s3rver.js';
import type { S3rverHandle } from '../helpers/s3rver.js';
import { storageContract } from './contract.js';

const tmpRoots: string[] = [];

/** A LocalStorage at `<fresh temp dir>/root`; the temp dir is the sentinel for escapes. */
async function makeLocal(): Promise<LocalStorage> {
  const sentinel = await fsp.mkdtemp(path.join(os.tmpdir(), 'tidemark-local-'));
  tmpRoots.push(sentinel);
  await fsp.mkdir(path.join(sentinel, 'root'));
  return LocalStorage.at(path.join(sentinel, 'root'));
}

afterAll(async () => {
  await Promise.all(tmpRoots.map((d) => fsp.rm(d, { recursive: true, force: true })));
});

storageContract('LocalStorage', makeLocal, {
  folders: true,
  sentinelDir: (s) => path.dirname((s as LocalStorage).root),
});

let s3: S3rverHandle;
beforeAll(async () => {
  s3 = await startS3rver();
});
afterAll(async () => {
  await s3?.stop();
});

storageContract(
  'S3Storage on s3rver',
  async () => s3.makeStorage(`c-${randomUUID()}/`, { partSize: 5 * 1024 * 1024 }),
  {
    // 11 MiB with 5 MiB parts: a three-part multipart upload (s3.test.ts checks it is multipart).
    largeUploadBytes: 11 * 1024 * 1024 + 123,
    quirks: { ignoresConditionalWrites: true, utf16StartAfter: true },
  },
);

if (MOTO_ENDPOINT) {
  const endpoint = MOTO_ENDPOINT;
  let moto: MotoHandle;
  beforeAll(async () => {
    moto = await connectMoto(endpoint);
  });
  afterAll(() => moto?.stop());
  storageContract(
    'S3Storage on moto',
    async () => moto.makeStorage(`c-${randomUUID()}/`, { partSize: 5 * 1024 * 1024 }),
    {
      largeUploadBytes: 11 * 1024 * 1024 + 123,
    },
  );
}

describe('LocalStorage specifics', () => {
  it('stores each key as the file of the same name under the root', async () => {
    const s = await makeLocal();
    await s.write(`it's 100% "é"/a b+c=d.csv`, 'x');
    const file = path.join(s.root, `it's 100% "é"`, 'a b+c=d.csv');
    expect(s.localPath(`it's 100% "é"/a b+c=d.csv`)).toBe(file);
    expect(await fsp.readFile(file, 'utf8')).toBe('x');
    expect(s.uri).toBe(`file://${s.root.split('/').map(encodeURIComponent).join('/')}/`);
  });

  it('refuses NUL, empty and dot-segment tricks with UnsafeKeyError', async () => {
    const s = await makeLocal();
    for (const key of ['x\0', '', 'a//b', 'a/', '../x', 'a/./b']) {
      expect(() => s.localPath(key), JSON.stringify(key)).toThrow(UnsafeKeyError);
      await expect(s.write(key, 'x')).rejects.toBeInstanceOf(UnsafeKeyError);
    }
    await expect(s.delete(['ok', '../x'])).rejects.toBeInstanceOf(UnsafeKeyError);
    await expect(s.listAll({ prefix: '../' })).rejects.toBeInstanceOf(UnsafeKeyError);
  });

  // Outside Windows a backslash is a character of a file name: such files were left out of
  // listings, so a job skipped them without a word.
  it.skipIf(path.sep === '\\')(
    'keeps a backslash as part of the name, in keys and listings',
    async () => {
      const s = await makeLocal();
      await fsp.mkdir(path.join(s.root, 'f\\g'));
      await fsp.writeFile(path.join(s.root, 'f\\g', 'd\\e.csv'), 'x');
      await fsp.writeFile(path.join(s.root, '..\\x'), 'y');
      expect((await s.listAll()).objects.map((o) => o.key)).toEqual(['..\\x', 'f\\g/d\\e.csv']);
      expect(s.localPath('f\\g/d\\e.csv')).toBe(path.join(s.root, 'f\\g', 'd\\e.csv'));
      expect(await fsp.readFile(s.localPath('..\\x'), 'utf8')).toBe('y');
    },
  );

  it('lists nothing for empty folders and skips only its own temp files', async () => {
    const s = await makeLocal();
    await fsp.mkdir(path.join(s.root, 'empty', 'deeper'), { recursive: true });
    await s.write('d/real.csv', 'x');
    await fsp.writeFile(path.join(s.root, 'd', `.tmp-${randomUUID()}`), 'in flight');
    await fsp.writeFile(path.join(s.root, 'd', '.tmp-notes'), 'a user file');
    const all = await s.listAll();
    expect(all.objects.map((o) => o.key)).toEqual(['d/.tmp-notes', 'd/real.csv']);
    expect((await s.listAll({ delimiter: '/' })).commonPrefixes).toEqual(['d/']);
  });

  it('delete removes folders left empty, up to but not including the root', async () => {
    const s = await makeLocal();
    await s.write('a/b/c/one', '1');
    await s.write('a/two', '2');
    await s.delete(['a/b/c/one']);
    expect(await fsp.readdir(path.join(s.root, 'a'))).toEqual(['two']);
    await s.delete(['a/two']);
    expect(await fsp.readdir(s.root)).toEqual([]);
  });

  it('writes atomically: the final name only ever holds complete content', async () => {
    const s = await makeLocal();
    const big = 'x'.repeat(2 * 1024 * 1024);
    await s.write('f', 'small');
    const reads: (string | null)[] = [];
    const writer = s.write('f', big);
    while (reads.length < 50) {
      const b = await s.read('f');
      reads.push(b === null ? null : Buffer.from(b).toString());
      if (reads.at(-1) === big) break;
    }
    await writer;
    for (const r of reads) expect(r === 'small' || r === big).toBe(true);
    expect((await fsp.readdir(s.root)).sort()).toEqual(['f']);
  });

  it('explains a key whose parent is a file (a folder cannot hold both a and a/x)', async () => {
    const s = await makeLocal();
    await s.write('a', 'file');
    const err = await s.write('a/x', 'nested').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StorageError);
    expect((err as StorageError).context.key).toBe('a/x');
  });

  it('etag is a size+mtime digest: it changes when a file is replaced in place', async () => {
    const s = await makeLocal();
    await s.write('e', 'same');
    const a = await s.head('e');
    const file = s.localPath('e');
    await fsp.utimes(file, new Date(2001, 0, 1), new Date(2001, 0, 1));
    const b = await s.head('e');
    expect(b!.etag).not.toBe(a!.etag);
    expect(b!.lastModified.getFullYear()).toBe(2001);
  });

  it('child of an empty prefix is the same root', async () => {
    const s = await makeLocal();
    expect(s.child('').root).toBe(s.root);
    expect(s.child('x').root).toBe(path.join(s.root, 'x'));
  });
});
