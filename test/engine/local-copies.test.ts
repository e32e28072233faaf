/**
 * Local copies of stored files: read in place on local disk (through an alias when the name holds
 * glob characters), downloaded from S3 (s3rver on loopback) into the spool under plain names,
 * reused from a cache, removed on dispose and after a failure, and a missing file named.
 */
import { mkdtemp, readdir, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeltaLogError } from '../../src/errors.js';
import { localCopies } from '../../src/engine/local-copies.js';
import { needsSafeAlias } from '../../src/engine/sql.js';
import { Spool } from '../../src/spool/spool.js';
import { LocalStorage } from '../../src/storage/local.js';
import { startS3rver, type S3rverHandle } from '../helpers/s3rver.js';

let s3: S3rverHandle;
let root: string;

beforeAll(async () => {
  s3 = await startS3rver();
  root = await mkdtemp(join(tmpdir(), 'tidemark-copies-'));
});

afterAll(async () => {
  await s3.stop();
  await rm(root, { recursive: true, force: true });
});

const missing = (key: string, cause: unknown) =>
  new DeltaLogError(`[test] ${key} is gone`, { context: { key }, cause });

describe('local copies', () => {
  it('reads local files in place, a glob-named one through an alias that keeps its suffixes, and downloads nothing', async () => {
    const dir = await mkdtemp(join(root, 'local-'));
    const keys = ['2025/a.csv', '2025/glob[1]*?.csv.gz'];
    for (const key of keys) {
      await mkdir(dirname(join(dir, key)), { recursive: true });
      await writeFile(join(dir, key), key);
    }
    const spool = await Spool.create('test', root);
    try {
      const copies = await localCopies(new LocalStorage(dir), keys, spool);
      expect(copies.pathOf('2025/a.csv')).toBe(join(dir, '2025/a.csv'));
      const alias = copies.pathOf('2025/glob[1]*?.csv.gz');
      expect(needsSafeAlias(alias)).toBe(false);
      expect(alias.endsWith('.csv.gz')).toBe(true);
      expect(await readFile(alias, 'utf8')).toBe('2025/glob[1]*?.csv.gz');
      expect([...copies.byKey.values()].every((c) => !c.downloaded)).toBe(true);
      expect(await readdir(spool.dir)).toEqual([]);
    } finally {
      await spool.close();
    }
  });

  it('downloads stored objects into one folder of the spool under plain names, and dispose removes it', async () => {
    const storage = s3.makeStorage();
    const keys = ['x\\..\\..\\passwd', '.hidden.csv.gz', 'x/y.parquet', 'x/glob[1]*.parquet'];
    for (const key of keys) await storage.write(key, `body of ${key}`);
    const spool = await Spool.create('test', root);
    try {
      const copies = await localCopies(storage, keys, spool, { folder: 'in', concurrency: 2 });
      const [folder] = await readdir(spool.dir);
      for (const key of keys) {
        const copy = copies.byKey.get(key)!;
        expect(copy.downloaded).toBe(true);
        expect(dirname(copy.path)).toBe(join(spool.dir, folder!));
        expect(needsSafeAlias(copy.path)).toBe(false);
        expect(await readFile(copy.path, 'utf8')).toBe(`body of ${key}`);
        expect(copy.size).toBe(`body of ${key}`.length);
      }
      expect(copies.pathOf('x/y.parquet').endsWith('-y.parquet')).toBe(true);
      // Format and compression suffixes stay; no name starts with a dot.
      expect(copies.pathOf('.hidden.csv.gz')).toMatch(/\/[0-9a-f]{16}-_hidden\.csv\.gz$/);
      await copies.dispose();
      expect(await readdir(spool.dir)).toEqual([]);
    } finally {
      await spool.close();
    }
  });

  it('a cached copy is reused by a later call, also once the object is gone from the store', async () => {
    const storage = s3.makeStorage();
    await storage.write('t/one.parquet', 'one');
    const spool = await Spool.create('test', root);
    try {
      const first = await localCopies(storage, ['t/one.parquet'], spool, {
        cache: 'kept',
        missing,
      });
      expect(first.byKey.get('t/one.parquet')!.downloaded).toBe(true);
      await first.dispose();
      await storage.delete(['t/one.parquet']);
      const again = await localCopies(storage, ['t/one.parquet'], spool, {
        cache: 'kept',
        missing,
      });
      expect(again.byKey.get('t/one.parquet')!.downloaded).toBe(false);
      expect(await readFile(again.pathOf('t/one.parquet'), 'utf8')).toBe('one');
    } finally {
      await spool.close();
    }
  });

  it('a missing file is the caller’s error, on S3 and on local disk, and a failed call leaves no folder behind', async () => {
    const storage = s3.makeStorage();
    await storage.write('t/here.parquet', 'here');
    const spool = await Spool.create('test', root);
    try {
      const err = await localCopies(storage, ['t/here.parquet', 't/gone.parquet'], spool, {
        missing,
      }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DeltaLogError);
      expect((err as DeltaLogError).message).toBe('[test] t/gone.parquet is gone');
      expect(await readdir(spool.dir)).toEqual([]);
      const local = await localCopies(
        new LocalStorage(await mkdtemp(join(root, 'empty-'))),
        ['gone.parquet'],
        spool,
        { missing },
      ).catch((e: unknown) => e);
      expect((local as DeltaLogError).message).toBe('[test] gone.parquet is gone');
    } finally {
      await spool.close();
    }
  });
});
