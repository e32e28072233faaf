/**
 * The embedded s3rver's patches (scripts/lib/embedded-s3.ts): it answers a PUT only once the
 * object's file is written in full, so a read right after the PUT sees the whole object, as on S3
 * (the disk is made slow on purpose, a mock of fs.write, the only way to widen the window at will);
 * and a Range on an empty object is unsatisfiable (416), not an answer that never ends.
 */
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startS3rver } from './s3rver.js';
import type { S3rverHandle } from './s3rver.js';

const fs = createRequire(import.meta.url)('node:fs') as typeof import('node:fs');
const originalWrite = fs.write;
const originalWritev = fs.writev;

const LARGE = 64 * 1024;
const bytesOf = (data: unknown): number =>
  Array.isArray(data)
    ? data.reduce((n: number, b: Uint8Array) => n + b.byteLength, 0)
    : ((data as Uint8Array | undefined)?.byteLength ?? 0);

/** Large writes (an object's body, not its small metadata files) land `ms` later. */
function slowDisk(ms: number): void {
  const delayed =
    (original: (...a: unknown[]) => void) =>
    (...args: unknown[]) => {
      if (bytesOf(args[1]) < LARGE) return original(...args);
      setTimeout(() => original(...args), ms);
    };
  fs.write = delayed(originalWrite as (...a: unknown[]) => void) as typeof fs.write;
  fs.writev = delayed(originalWritev as (...a: unknown[]) => void) as typeof fs.writev;
}

let s3: S3rverHandle;
beforeAll(async () => {
  s3 = await startS3rver();
});
afterEach(() => {
  fs.write = originalWrite;
  fs.writev = originalWritev;
});
afterAll(async () => {
  await s3?.stop();
});

describe('embedded s3rver', () => {
  it('answers a PUT after its write (mock: a slow disk): HEAD and GET right after it see the whole object', async () => {
    const storage = s3.makeStorage();
    slowDisk(30);
    for (let i = 0; i < 4; i++) {
      const body = randomBytes(256 * 1024 + i);
      await storage.write(`o${i}.bin`, body);
      const info = await storage.head(`o${i}.bin`);
      expect(info?.size, `object ${i}`).toBe(body.length);
      const got = await storage.read(`o${i}.bin`);
      expect(got?.length, `object ${i}`).toBe(body.length);
      expect(Buffer.from(got!).equals(body), `object ${i}`).toBe(true);
    }
  });

  it('refuses a range of an empty object as unsatisfiable, so it reads as empty at once', async () => {
    const storage = s3.makeStorage();
    await storage.write('empty', '');
    expect((await storage.read('empty', { start: 0, end: 0 }))?.length).toBe(0);
    expect((await storage.read('empty', { start: 0 }))?.length).toBe(0);
    expect((await storage.read('empty'))?.length).toBe(0);
    expect(storage.requestCounts().get).toBe(3);
  });
});
