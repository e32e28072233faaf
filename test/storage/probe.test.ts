/**
 * The conditional-write probe: local folders honour put-if-absent; s3rver 3.7.1 ignores
 * If-None-Match: * and overwrites, and the probe must catch that.
 */
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConditionalWriteUnsupportedError } from '../../src/errors.js';
import { LocalStorage } from '../../src/storage/local.js';
import { assertSafeCommits, probeConditionalWrite } from '../../src/storage/probe.js';
import { countingStorage } from '../helpers/counting-storage.js';
import { startS3rver } from '../helpers/s3rver.js';
import type { S3rverHandle } from '../helpers/s3rver.js';

let s3: S3rverHandle;
let tmp: string;

beforeAll(async () => {
  s3 = await startS3rver();
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'tidemark-probe-'));
});
afterAll(async () => {
  await s3?.stop();
  await fsp.rm(tmp, { recursive: true, force: true });
});

describe('probeConditionalWrite', () => {
  it('reports true on a local folder, with four calls, and leaves nothing behind', async () => {
    const local = LocalStorage.at(path.join(tmp, 'honours'));
    const counted = countingStorage(local);
    expect(await probeConditionalWrite(counted)).toBe(true);
    expect(counted.counts).toMatchObject({ writeIfAbsent: 2, read: 1, delete: 1 });
    expect((await local.listAll()).objects).toEqual([]);
    expect(await fsp.readdir(local.root)).toEqual([]); // `_tidemark/` removed too
  });

  it('reports FALSE on s3rver, which ignores If-None-Match: * and overwrites', async () => {
    const storage = s3.makeStorage();
    // The raw behaviour the probe detects: the second conditional write "succeeds".
    expect(await storage.writeIfAbsent('k', 'first')).toBe(true);
    expect(await storage.writeIfAbsent('k', 'second')).toBe(true);
    expect(Buffer.from((await storage.read('k'))!).toString()).toBe('second');
    await storage.delete(['k']);

    expect(await probeConditionalWrite(storage)).toBe(false);
    expect((await storage.listAll()).objects).toEqual([]); // probe key cleaned up
  });
});

describe('assertSafeCommits', () => {
  it('passes on a local folder', async () => {
    await expect(
      assertSafeCommits(LocalStorage.at(path.join(tmp, 'safe')), { singleWriter: false }),
    ).resolves.toBeUndefined();
  });

  it('refuses s3rver with ConditionalWriteUnsupportedError that says how to override', async () => {
    const storage = s3.makeStorage();
    const err = await assertSafeCommits(storage, { singleWriter: false }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConditionalWriteUnsupportedError);
    const e = err as ConditionalWriteUnsupportedError;
    expect(e.message).toContain('If-None-Match');
    expect(e.message).toContain('storage.singleWriter: true');
    expect(e.message).toContain(storage.uri);
    expect(e.context.uri).toBe(storage.uri);
    expect(e.kind).toBe('usage');
  });

  it('allows s3rver when declared the only writer, without probing', async () => {
    const counted = countingStorage(s3.makeStorage());
    await expect(assertSafeCommits(counted, { singleWriter: true })).resolves.toBeUndefined();
    expect(counted.total()).toBe(0);
  });
});
