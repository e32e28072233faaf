/**
 * Fault injection on reads: a GetObject body that breaks is resumed from the bytes received
 * (Range) on condition that the object is unchanged (If-Match); an object replaced mid-read is
 * never spliced. Listing pages are retried with their own continuation token.
 */
import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StorageError } from '../../src/errors.js';
import { S3Storage } from '../../src/storage/s3.js';
import { startFaultProxy } from '../helpers/fault-proxy.js';
import { FAST_RETRIES, startProxiedS3 } from './fault-setup.js';
import type { ProxiedS3 } from './fault-setup.js';

let env: ProxiedS3;
let tmp: string;
beforeAll(async () => {
  env = await startProxiedS3();
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'tidemark-resume-'));
});
afterAll(async () => {
  await env?.stop();
  await fsp.rm(tmp, { recursive: true, force: true });
});

const OLD = randomBytes(100_000);
const NEW = randomBytes(120_000);

/** The proxy log entries for one key's object path (not listings). */
function requestsFor(storage: S3Storage, key: string) {
  return env.proxy.log.filter((r) =>
    r.path.startsWith(`/${storage.bucket}/${storage.prefix}${key}`),
  );
}

async function setup(
  key: string,
  body: Uint8Array,
): Promise<{ storage: S3Storage; direct: S3Storage; etag: string }> {
  const storage = env.storage();
  const direct = env.direct(storage.prefix);
  await direct.write(key, body);
  return { storage, direct, etag: (await direct.head(key))!.etag };
}

async function drain(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

describe('resumable GetObject (fault injection: proxy in front of s3rver)', () => {
  it('fault injection: a body that stops half-way is resumed with Range from the bytes received and If-Match on the ETag', async () => {
    const { storage, etag } = await setup('r.bin', OLD);
    env.proxy.faultNext('silentMidBody', { method: 'GET', path: `${storage.prefix}r.bin` });
    expect(Buffer.from((await storage.read('r.bin'))!).equals(OLD)).toBe(true);
    const [first, resumed, ...more] = requestsFor(storage, 'r.bin');
    expect([first?.fault, first?.range, first?.ifMatch]).toEqual([
      'silentMidBody',
      undefined,
      undefined,
    ]);
    expect([resumed?.fault, resumed?.range, resumed?.ifMatch]).toEqual([
      undefined,
      `bytes=50000-99999`,
      `"${etag}"`,
    ]);
    // On a loaded machine the 300 ms idle timeout can also fire on an honest response; any
    // further attempt must still be a conditional resume, never a fresh unconditioned read.
    for (const extra of more) expect(extra.ifMatch).toBe(`"${etag}"`);
    expect(storage.requestCounts().get).toBe(2 + more.length);
  });

  it('fault injection: a ranged read resumes inside its range and keeps its end', async () => {
    const { storage } = await setup('r.bin', OLD);
    env.proxy.faultNext('silentMidBody', { method: 'GET', path: `${storage.prefix}r.bin` });
    const got = await storage.read('r.bin', { start: 1000, end: 50_000 });
    expect(Buffer.from(got!).equals(OLD.subarray(1000, 50_001))).toBe(true);
    expect(requestsFor(storage, 'r.bin').map((g) => g.range)).toEqual([
      'bytes=1000-50000',
      'bytes=25500-50000',
    ]);
  });

  it('fault injection: a body cut short resumes from at most the bytes the proxy sent', async () => {
    const { storage } = await setup('s.bin', OLD);
    env.proxy.faultNext('cutBody', { method: 'GET', path: `${storage.prefix}s.bin` });
    expect((await drain(await storage.readStream('s.bin'))).equals(OLD)).toBe(true);
    const [, resumed] = requestsFor(storage, 's.bin');
    const from = Number(/^bytes=(\d+)-99999$/.exec(resumed?.range ?? '')?.[1]);
    expect(from).toBeGreaterThanOrEqual(0);
    expect(from).toBeLessThanOrEqual(50_000);
  });

  it('fault injection: read() of an object replaced mid-read starts over on the new version, never splicing', async () => {
    const { storage, direct, etag } = await setup('c.bin', OLD);
    env.proxy.faultNext('silentMidBody', {
      method: 'GET',
      path: `${storage.prefix}c.bin`,
      before: () => direct.write('c.bin', NEW),
    });
    expect(Buffer.from((await storage.read('c.bin'))!).equals(NEW)).toBe(true);
    const gets = requestsFor(storage, 'c.bin');
    expect(gets.map((g) => [g.range, g.ifMatch, g.status])).toEqual([
      [undefined, undefined, 200],
      ['bytes=50000-99999', `"${etag}"`, 412],
      [undefined, undefined, 200],
    ]);
  });

  it('fault injection: download() of an object replaced mid-read starts over and returns the new version', async () => {
    const { storage, direct } = await setup('d.bin', OLD);
    env.proxy.faultNext('cutBody', {
      method: 'GET',
      path: `${storage.prefix}d.bin`,
      before: () => direct.write('d.bin', NEW),
    });
    const dest = path.join(tmp, 'changed', 'd.bin');
    const info = await storage.download('d.bin', dest);
    expect((await fsp.readFile(dest)).equals(NEW)).toBe(true);
    expect(info).toMatchObject({ size: NEW.length, etag: (await direct.head('d.bin'))!.etag });
    expect(await fsp.readdir(path.dirname(dest))).toEqual(['d.bin']);
  });

  it('fault injection: readStream() of an object replaced mid-read fails with a transient "changed" error', async () => {
    const { storage, direct } = await setup('st.bin', OLD);
    env.proxy.faultNext('silentMidBody', {
      method: 'GET',
      path: `${storage.prefix}st.bin`,
      before: () => direct.write('st.bin', NEW),
    });
    const stream = await storage.readStream('st.bin');
    const got: Buffer[] = [];
    const err = await (async () => {
      for await (const c of stream) got.push(c as Buffer);
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StorageError);
    expect((err as StorageError).kind).toBe('transient');
    expect((err as StorageError).message).toMatch(
      /^\[storage\] S3 object "st\.bin" in s3:\/\/.+ changed while it was read \(ETag .+\) after 50000 bytes; the bytes read are not joined to the new version$/,
    );
    expect((err as StorageError).context).toMatchObject({
      key: 'st.bin',
      changed: true,
      position: 50_000,
    });
    expect(Buffer.concat(got).equals(OLD.subarray(0, 50_000))).toBe(true); // old bytes only, none of the new
  });

  it('fault injection: on a store that ignores If-Match, the resumed response ETag is compared instead', async () => {
    const plain = await startFaultProxy({ target: env.s3.endpoint }); // no conditional emulation: s3rver as it is
    try {
      const storage = env.storage({ endpoint: plain.endpoint });
      const direct = env.direct(storage.prefix);
      await direct.write('i.bin', OLD);
      plain.faultNext('silentMidBody', {
        method: 'GET',
        path: `${storage.prefix}i.bin`,
        before: () => direct.write('i.bin', NEW),
      });
      expect(Buffer.from((await storage.read('i.bin'))!).equals(NEW)).toBe(true);
      expect(plain.log.map((r) => [r.range, r.status])).toEqual([
        [undefined, 200],
        ['bytes=50000-99999', 206], // s3rver answered with the new version's bytes: refused, not spliced
        [undefined, 200],
      ]);
    } finally {
      await plain.stop();
    }
  });

  it("a store answering chunked, without Content-Length: the body's end is the object's end, read and downloaded in one request each", async () => {
    const chunked = await startFaultProxy({ target: env.s3.endpoint, chunked: true });
    try {
      const storage = env.storage({ endpoint: chunked.endpoint });
      await env.direct(storage.prefix).write('c.bin', OLD);
      expect(Buffer.from((await storage.read('c.bin'))!).equals(OLD)).toBe(true);
      const local = path.join(tmp, 'c.bin');
      expect(await storage.download('c.bin', local)).toMatchObject({ size: OLD.length });
      expect((await fsp.readFile(local)).equals(OLD)).toBe(true);
      expect(chunked.log.filter((r) => r.method === 'GET').map((r) => [r.range, r.status])).toEqual(
        [
          [undefined, 200],
          [undefined, 200],
        ],
      );
    } finally {
      await chunked.stop();
    }
  });

  it('fault injection: a listing page is retried with its own continuation token', async () => {
    const storage = env.storage();
    const direct = env.direct(storage.prefix);
    await Promise.all(['a', 'b', 'c', 'd', 'e'].map((k) => direct.write(`l/${k}`, k)));
    env.proxy.faultNext('cutBody', {
      method: 'GET',
      path: new RegExp(`continuation-token=.*prefix=${encodeURIComponent(storage.prefix)}l`),
    });
    const pages: string[][] = [];
    for await (const page of storage.list({ prefix: 'l/', pageSize: 2 }))
      pages.push(page.objects.map((o) => o.key));
    expect(pages).toEqual([['l/a', 'l/b'], ['l/c', 'l/d'], ['l/e']]);
    const lists = env.proxy.log.filter((r) =>
      r.path.includes(`prefix=${encodeURIComponent(storage.prefix)}l`),
    );
    const token = (p: string) => new URL(p, 'http://x').searchParams.get('continuation-token');
    expect(lists.map((r) => r.fault)).toEqual([undefined, 'cutBody', undefined, undefined]);
    expect(token(lists[1]!.path)).not.toBeNull();
    expect(token(lists[2]!.path)).toBe(token(lists[1]!.path));
    expect(storage.requestCounts().list).toBe(4);
  });

  it('fault injection: a caller abort ends a read waiting on a silent server at once', async () => {
    const { storage } = await setup('ab.bin', OLD);
    env.proxy.faultNext('silent', { method: 'GET', path: `${storage.prefix}ab.bin`, times: 10 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const started = Date.now();
    const err = await storage
      .download('ab.bin', path.join(tmp, 'ab.bin'), { signal: controller.signal })
      .catch((e: unknown) => e);
    expect((err as Error).name).toBe('AbortError');
    expect(Date.now() - started).toBeLessThan(FAST_RETRIES.idleTimeoutMs!);
  });
});
