/**
 * The storage contract: one suite, run against every driver (contract.test.ts). A driver
 * that passes it can be used by discovery, the Delta layer and the job interchangeably.
 */
import { createHash } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { StorageError, UnsafeKeyError } from '../../src/errors.js';
import { compareKeys } from '../../src/storage/driver-helpers.js';
import type { ListPage, Storage } from '../../src/storage/storage.js';
import { probeConditionalWrite } from '../../src/storage/probe.js';

export interface ContractOptions {
  /**
   * Known bugs of the store behind the driver (s3rver). The tests they affect are skipped
   * for that store, by name, instead of being weakened for every store.
   */
  quirks?: {
    /** The store ignores If-None-Match: * and overwrites (probe.test.ts proves it). */
    ignoresConditionalWrites?: boolean;
    /** StartAfter compares UTF-16 strings instead of UTF-8 bytes (drops keys above U+FFFF). */
    utf16StartAfter?: boolean;
  };
  /** Size of the "large" upload; above the driver's multipart threshold where it has one. */
  largeUploadBytes?: number;
  /**
   * The folder that contains the storage root and nothing else before the test; used to
   * prove that unsafe keys create nothing outside the root (local driver).
   */
  sentinelDir?: (s: Storage) => string | undefined;
  /** The store has folders (local): inspectRoot tells a folder from a file and from nothing. */
  folders?: boolean;
}

const text = (b: Uint8Array | null) => (b === null ? null : Buffer.from(b).toString('utf8'));

async function streamText(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks).toString('utf8');
}

async function writeAll(s: Storage, keys: string[], body = (k: string) => k): Promise<void> {
  await Promise.all(keys.map((k) => s.write(k, body(k))));
}

const keysOf = async (s: Storage, opts = {}) => (await s.listAll(opts)).objects.map((o) => o.key);

async function pagesOf(s: Storage, opts = {}): Promise<ListPage[]> {
  const pages: ListPage[] = [];
  for await (const p of s.list(opts)) pages.push(p);
  return pages;
}

async function expectRejects(p: Promise<unknown>, check: (err: unknown) => void): Promise<void> {
  let caught: unknown;
  await p.then(
    () => undefined,
    (err) => {
      caught = err;
    },
  );
  expect(caught, 'expected a rejection').toBeDefined();
  check(caught);
}

/** Register the contract tests for one driver. `makeStorage` returns a fresh, empty storage. */
export function storageContract(
  name: string,
  makeStorage: () => Promise<Storage>,
  opts: ContractOptions = {},
): void {
  const quirks = opts.quirks ?? {};
  const tmpDirs: string[] = [];
  const localTmp = async () => {
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'tidemark-contract-'));
    tmpDirs.push(dir);
    return dir;
  };

  describe(`storage contract: ${name}`, () => {
    afterAll(async () => {
      await Promise.all(tmpDirs.map((d) => fsp.rm(d, { recursive: true, force: true })));
    });

    it('writes, reads and heads an object; missing keys give null', async () => {
      const s = await makeStorage();
      const before = Date.now();
      await s.write('a/b.txt', 'hello');
      expect(text(await s.read('a/b.txt'))).toBe('hello');
      const info = await s.head('a/b.txt');
      expect(info).toMatchObject({ key: 'a/b.txt', size: 5 });
      expect(info!.etag).toMatch(/^[^"]+$/);
      expect(Math.abs(info!.lastModified.getTime() - before)).toBeLessThan(60_000);
      expect(await s.head('a/missing.txt')).toBeNull();
      expect(await s.read('a/missing.txt')).toBeNull();
      expect(await s.read('nope/at/all')).toBeNull();
      expect(await s.head('a')).toBeNull(); // a "folder" is not an object
    });

    it('round-trips binary bodies and replaces content, changing the etag', async () => {
      const s = await makeStorage();
      const bytes = new Uint8Array([0, 1, 2, 255, 254, 0, 10, 13]);
      await s.write('bin', bytes);
      expect(Buffer.from((await s.read('bin'))!)).toEqual(Buffer.from(bytes));
      const first = await s.head('bin');
      expect((await s.head('bin'))!.etag).toBe(first!.etag); // stable while unchanged
      await s.write('bin', 'now text, longer');
      const second = await s.head('bin');
      expect(text(await s.read('bin'))).toBe('now text, longer');
      expect(second!.etag).not.toBe(first!.etag);
      const listed = (await s.listAll()).objects.find((o) => o.key === 'bin');
      expect(listed).toMatchObject({ size: second!.size, etag: second!.etag });
    });

    it('reads byte ranges (end inclusive, clipped to the object)', async () => {
      const s = await makeStorage();
      await s.write('r', '0123456789');
      expect(text(await s.read('r', { start: 2, end: 5 }))).toBe('2345');
      expect(text(await s.read('r', { start: 7 }))).toBe('789');
      expect(text(await s.read('r', { start: 0, end: 0 }))).toBe('0');
      expect(text(await s.read('r', { start: 9, end: 9 }))).toBe('9');
      expect(text(await s.read('r', { start: 8, end: 100 }))).toBe('89');
      expect(text(await s.read('r', { start: 10 }))).toBe('');
      expect(await s.read('missing', { start: 0, end: 1 })).toBeNull();
      await expectRejects(s.read('r', { start: 5, end: 2 }), (err) =>
        expect(err).toBeInstanceOf(StorageError),
      );
    });

    it('streams objects and ranges; a missing key throws StorageError with notFound', async () => {
      const s = await makeStorage();
      await s.write('s/data.csv', 'id,name\n1,é\n');
      expect(await streamText(await s.readStream('s/data.csv'))).toBe('id,name\n1,é\n');
      expect(await streamText(await s.readStream('s/data.csv', { start: 3, end: 6 }))).toBe('name');
      expect(await streamText(await s.readStream('s/data.csv', { start: 0, end: 0 }))).toBe('i');
      expect(await streamText(await s.readStream('s/data.csv', { start: 100 }))).toBe('');
      await expectRejects(s.readStream('s/missing.csv'), (err) => {
        expect(err).toBeInstanceOf(StorageError);
        expect((err as StorageError).context).toMatchObject({
          key: 's/missing.csv',
          notFound: true,
        });
      });
    });

    it('downloads to a nested local path, creating folders; missing keys throw notFound', async () => {
      const s = await makeStorage();
      await s.write('d/file.bin', 'payload');
      const dir = await localTmp();
      const dest = path.join(dir, 'x', 'y z', 'file.bin');
      const info = await s.download('d/file.bin', dest);
      expect(info).toMatchObject({ key: 'd/file.bin', size: 7 });
      expect(await fsp.readFile(dest, 'utf8')).toBe('payload');
      expect((await fsp.readdir(path.dirname(dest))).sort()).toEqual(['file.bin']); // no temp left
      const missingDest = path.join(dir, 'missing', 'f');
      await expectRejects(s.download('d/missing.bin', missingDest), (err) => {
        expect((err as StorageError).context).toMatchObject({ notFound: true });
      });
      await expect(fsp.stat(missingDest)).rejects.toThrow();
    });

    it('lists an empty storage as one empty page', async () => {
      const s = await makeStorage();
      const pages = await pagesOf(s, { delimiter: '/' });
      expect(pages).toHaveLength(1);
      expect(pages[0]).toMatchObject({ objects: [], commonPrefixes: [] });
    });

    it('lists keys under a string prefix, not only at folder boundaries', async () => {
      const s = await makeStorage();
      await writeAll(s, [
        'logs/2024-01.csv',
        'logs/2024-02.csv',
        'logs/2025-01.csv',
        'logsx/a',
        'other/b',
      ]);
      expect(await keysOf(s, { prefix: 'logs/2024' })).toEqual([
        'logs/2024-01.csv',
        'logs/2024-02.csv',
      ]);
      expect(await keysOf(s, { prefix: 'logs' })).toEqual([
        'logs/2024-01.csv',
        'logs/2024-02.csv',
        'logs/2025-01.csv',
        'logsx/a',
      ]);
      expect(await keysOf(s, { prefix: 'logs/' })).toHaveLength(3);
      expect(await keysOf(s, { prefix: 'nothing/' })).toEqual([]);
      expect(await keysOf(s)).toHaveLength(5);
    });

    it('groups keys into common prefixes with a delimiter', async () => {
      const s = await makeStorage();
      await writeAll(s, [
        'dt=2026-11-01/a.parquet',
        'dt=2026-11-01/b.parquet',
        'dt=2026-11-02/c.parquet',
        '_SUCCESS',
        'top.csv',
      ]);
      const top = await s.listAll({ delimiter: '/' });
      expect(top.objects.map((o) => o.key)).toEqual(['_SUCCESS', 'top.csv']);
      expect(top.commonPrefixes).toEqual(['dt=2026-11-01/', 'dt=2026-11-02/']);
      const day = await s.listAll({ prefix: 'dt=2026-11-01/', delimiter: '/' });
      expect(day.objects.map((o) => o.key)).toEqual([
        'dt=2026-11-01/a.parquet',
        'dt=2026-11-01/b.parquet',
      ]);
      expect(day.commonPrefixes).toEqual([]);
      const partial = await s.listAll({ prefix: 'dt=2026-11', delimiter: '/' });
      expect(partial.commonPrefixes).toEqual(['dt=2026-11-01/', 'dt=2026-11-02/']);
    });

    it('lists a folder that holds only deeper folders as a common prefix', async () => {
      const s = await makeStorage();
      await writeAll(s, ['y/2026/11/01/a.csv', 'y/2026/11/02/b.csv', 'y/2026/12/01/c.csv']);
      expect((await s.listAll({ delimiter: '/' })).commonPrefixes).toEqual(['y/']);
      expect((await s.listAll({ prefix: 'y/2026/', delimiter: '/' })).commonPrefixes).toEqual([
        'y/2026/11/',
        'y/2026/12/',
      ]);
    });

    it('starts after a key', async () => {
      const s = await makeStorage();
      await writeAll(s, ['k/1', 'k/2', 'k/3', 'k/4']);
      expect(await keysOf(s, { startAfter: 'k/2' })).toEqual(['k/3', 'k/4']);
      expect(await keysOf(s, { startAfter: 'k/25' })).toEqual(['k/3', 'k/4']);
      expect(await keysOf(s, { startAfter: 'k/4' })).toEqual([]);
      expect(await keysOf(s, { prefix: 'k/', startAfter: 'a' })).toHaveLength(4);
    });

    it('paginates with pageSize 2 over 7 keys, without gaps or repeats', async () => {
      const s = await makeStorage();
      const keys = ['p/a', 'p/b', 'p/c', 'p/d/1', 'p/d/2', 'p/e', 'p/f'];
      await writeAll(s, keys);
      const pages = await pagesOf(s, { pageSize: 2 });
      expect(pages.map((p) => p.objects.length)).toEqual([2, 2, 2, 1]);
      expect(pages.flatMap((p) => p.objects.map((o) => o.key))).toEqual(keys);
      const after = await pagesOf(s, { pageSize: 2, startAfter: 'p/b' });
      expect(after.flatMap((p) => p.objects.map((o) => o.key))).toEqual(keys.slice(2));
      // With a delimiter, the folder appears once even when it spans a page boundary.
      const grouped = await pagesOf(s, { prefix: 'p/', delimiter: '/', pageSize: 2 });
      expect(grouped.flatMap((p) => p.commonPrefixes)).toEqual(['p/d/']);
      expect(grouped.flatMap((p) => p.objects.map((o) => o.key))).toEqual([
        'p/a',
        'p/b',
        'p/c',
        'p/e',
        'p/f',
      ]);
    });

    it('sorts keys by UTF-8 bytes, like S3 (not by UTF-16 code units)', async () => {
      const s = await makeStorage();
      // Byte order: Z < a < ~ < é < 日 < ～ (U+FF5E) < 😀 (U+1F600). UTF-16 order puts 😀 before ～.
      const expected = ['u/Z', 'u/a', 'u/~', 'u/é', 'u/日本', 'u/～', 'u/😀'];
      await writeAll(s, [...expected].reverse());
      const listed = await keysOf(s);
      expect(listed).toEqual(expected);
      expect([...listed].sort(compareKeys)).toEqual(listed);
      expect([...listed].sort()).not.toEqual(listed); // the case that tells the orders apart
      if (!quirks.utf16StartAfter)
        expect(await keysOf(s, { startAfter: 'u/～' })).toEqual(['u/😀']);
    });

    it('round-trips keys with spaces, unicode, %, +, =, quotes', async () => {
      const s = await makeStorage();
      const keys = [
        'sp ace/file name.csv',
        'uni/é/日本.txt',
        'pct/100%.csv',
        'pct/a%20b',
        'plus/a+b.csv',
        `quote/it's "q".csv`,
        'eq/k=v/x.csv',
      ];
      await writeAll(s, keys);
      for (const k of keys) {
        expect(text(await s.read(k)), k).toBe(k);
        expect((await s.head(k))?.key).toBe(k);
      }
      expect(await keysOf(s)).toEqual([...keys].sort(compareKeys));
      expect(text(await s.read('pct/a b'))).toBeNull(); // `%20` is not decoded
      await s.delete(keys);
      expect(await keysOf(s)).toEqual([]);
    });

    it('refuses keys that could escape the root (or keeps them inside it)', async () => {
      const s = await makeStorage();
      const sentinel = opts.sentinelDir?.(s);
      const before = sentinel ? await fsp.readdir(sentinel) : [];
      const unsafe = [
        'a/../b',
        '../escape.txt',
        'a/../../escape.txt',
        '..',
        '/abs.txt',
        './x',
        'a/./b',
        'x\0y',
      ];
      for (const key of unsafe) {
        const outcome = await s.write(key, 'x').then(
          () => 'written',
          (err: unknown) => err,
        );
        if (outcome === 'written') {
          // Allowed only as a literal key inside the root.
          expect(text(await s.read(key)), key).toBe('x');
          expect(await keysOf(s), key).toContain(key);
        } else {
          expect(outcome, key).toBeInstanceOf(UnsafeKeyError);
        }
      }
      await expectRejects(s.read('../escape.txt'), (err) =>
        expect(err).toBeInstanceOf(UnsafeKeyError),
      );
      if (sentinel) expect(await fsp.readdir(sentinel)).toEqual(before);
    });

    it('writeIfAbsent creates once, then refuses without overwriting', async () => {
      const s = await makeStorage();
      expect(await s.writeIfAbsent('log/00001.json', 'first')).toBe(true);
      if (quirks.ignoresConditionalWrites) return; // s3rver: see probe.test.ts
      expect(await s.writeIfAbsent('log/00001.json', 'second')).toBe(false);
      expect(text(await s.read('log/00001.json'))).toBe('first');
      expect(await keysOf(s)).toEqual(['log/00001.json']); // no temp files left
    });

    it(
      quirks.ignoresConditionalWrites
        ? 'a store that ignores conditional writes is caught by the probe, so no table commits to it unless told it is the only writer'
        : 'writeIfAbsent lets exactly one of 8 racing writers win',
      async () => {
        const s = await makeStorage();
        if (quirks.ignoresConditionalWrites) {
          expect(await probeConditionalWrite(s)).toBe(false);
          return;
        }
        const results = await Promise.all(
          Array.from({ length: 8 }, (_, i) => s.writeIfAbsent('race', `writer ${i}`)),
        );
        expect(results.filter(Boolean)).toHaveLength(1);
        expect(text(await s.read('race'))).toBe(`writer ${results.indexOf(true)}`);
      },
    );

    it('uploads small and large files byte-exact', async () => {
      const s = await makeStorage();
      const dir = await localTmp();
      const small = path.join(dir, 'small.txt');
      await fsp.writeFile(small, 'small file');
      await s.upload('up/small.txt', small, { contentType: 'text/plain' });
      expect(text(await s.read('up/small.txt'))).toBe('small file');

      const size = opts.largeUploadBytes ?? 3 * 1024 * 1024 + 17;
      const big = path.join(dir, 'big.bin');
      const content = Buffer.alloc(size);
      for (let i = 0; i < size; i += 4)
        content.writeUInt32LE((i * 2654435761) >>> 0, Math.min(i, size - 4));
      await fsp.writeFile(big, content);
      await s.upload('up/big.bin', big);
      expect((await s.head('up/big.bin'))!.size).toBe(size);
      const back = await s.read('up/big.bin');
      const digest = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
      expect(digest(back!)).toBe(digest(content));
      const tail = await s.read('up/big.bin', { start: size - 10 });
      expect(Buffer.from(tail!)).toEqual(content.subarray(size - 10));
    });

    it('deletes in a batch, ignoring missing keys', async () => {
      const s = await makeStorage();
      await writeAll(s, ['del/1', 'del/2', 'del/sub/3', 'keep/4', 'keep/5']);
      await s.delete(['del/1', 'del/2', 'del/sub/3', 'del/missing', 'never/was']);
      expect(await keysOf(s)).toEqual(['keep/4', 'keep/5']);
      expect((await s.listAll({ delimiter: '/' })).commonPrefixes).toEqual(['keep/']);
      await s.delete([]);
      await s.delete(['keep/4']);
      expect(await keysOf(s)).toEqual(['keep/5']);
    });

    it('child storages see keys relative to their prefix', async () => {
      const s = await makeStorage();
      const child = s.child('tables/orders');
      await child.write('_delta_log/00000.json', '{}');
      await s.write('tables/orders-archive/x', 'not in the child');
      expect(child.uri.endsWith('tables/orders/')).toBe(true);
      expect(child.uri.startsWith(s.uri)).toBe(true);
      expect(text(await s.read('tables/orders/_delta_log/00000.json'))).toBe('{}');
      expect(await keysOf(child)).toEqual(['_delta_log/00000.json']);
      expect((await child.listAll({ delimiter: '/' })).commonPrefixes).toEqual(['_delta_log/']);
      expect(await keysOf(s.child('tables').child('orders'))).toEqual(['_delta_log/00000.json']);
      expect(await keysOf(s.child('tables/orders/'))).toEqual(['_delta_log/00000.json']);
      expect(() => s.child('../up')).toThrow(UnsafeKeyError);
    });

    it('localPath is a readable file on local drivers, null otherwise', async () => {
      const s = await makeStorage();
      await s.write('lp/x.txt', 'here');
      const p = s.localPath('lp/x.txt');
      if (p !== null) {
        expect(path.isAbsolute(p)).toBe(true);
        expect(await fsp.readFile(p, 'utf8')).toBe('here');
      }
    });

    if (!opts.folders) {
      it('has no inspectRoot: a store without folders cannot tell an empty prefix from a missing one', async () => {
        expect((await makeStorage()).inspectRoot).toBeUndefined();
      });
    } else {
      it('inspectRoot tells a folder from a file and from nothing', async () => {
        const s = await makeStorage();
        expect(await s.inspectRoot!()).toBe('folder');
        expect(await s.child('nothing-here').inspectRoot!()).toBe('missing');
        await s.write('ir/file', 'x');
        expect(await s.child('ir').inspectRoot!()).toBe('folder');
        expect(await s.child('ir/file').inspectRoot!()).toBe('file');
        expect(await s.child('ir/file/below').inspectRoot!()).toBe('missing'); // a parent is a file
      });
    }

    it("reports the store's clock as serverTime on every page", async () => {
      const s = await makeStorage();
      await writeAll(s, ['t/1', 't/2', 't/3']);
      const pages = await pagesOf(s, { pageSize: 2 });
      expect(pages).toHaveLength(2);
      for (const p of pages) {
        expect(p.serverTime).toBeInstanceOf(Date);
        // HTTP dates have second precision; the store runs on this machine.
        expect(Math.abs(p.serverTime.getTime() - Date.now())).toBeLessThan(30_000);
      }
      const all = await s.listAll({ pageSize: 2 });
      expect(all.objects).toHaveLength(3);
      expect(all.serverTime).toBeInstanceOf(Date);
    });
  });
}
