/**
 * Reads end where the object ends, on a mock S3 (test/helpers/inconsistent-s3.ts) scripted to
 * answer what no real server does on demand: a first answer shorter than the object, a range that
 * starts later than asked, a body without a length that ends cleanly half-way. Each read returns
 * exactly the object's bytes (the length checked first, so a short read says how short), or fails.
 */
import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StorageError } from '../../src/errors.js';
import { S3Storage } from '../../src/storage/s3.js';
import { startInconsistentS3 } from '../helpers/inconsistent-s3.js';
import type { AnswerPlan, GetRequestSeen, InconsistentS3 } from '../helpers/inconsistent-s3.js';
import { FAST_RETRIES } from './fault-setup.js';

const BUCKET = 'mock';
let mock: InconsistentS3;
let storage: S3Storage;
let tmp: string;
beforeAll(async () => {
  mock = await startInconsistentS3(BUCKET);
  storage = new S3Storage({
    bucket: BUCKET,
    endpoint: mock.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: 'mock', secretAccessKey: 'mock' },
    ...FAST_RETRIES,
  });
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'tidemark-inconsistent-'));
});
afterAll(async () => {
  storage?.client.destroy();
  await mock?.stop();
  await fsp.rm(tmp, { recursive: true, force: true });
});

const OBJECT = randomBytes(64 * 1024);

async function drain(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** Answer the first GET(s) with `wrong(...)`, the rest honestly; returns the requests seen. */
function script(
  ...wrong: ((req: GetRequestSeen, size: number, honest: AnswerPlan) => AnswerPlan)[]
): GetRequestSeen[] {
  const seen: GetRequestSeen[] = [];
  mock.setPlanner((req, size, honest) => {
    seen.push(req);
    const plan = wrong[seen.length - 1];
    return plan ? plan(req, size, honest) : honest;
  });
  return seen;
}

/** The three whole-object reads, each returning the bytes it delivered. */
const WHOLE_READS: Record<string, (key: string) => Promise<Buffer>> = {
  read: async (key) => Buffer.from((await storage.read(key))!),
  readStream: async (key) => drain(await storage.readStream(key)),
  download: async (key) => {
    const dest = path.join(tmp, `${key}-${Math.random()}`);
    const info = await storage.download(key, dest);
    const got = await fsp.readFile(dest);
    expect(info.size).toBe(got.length);
    return got;
  },
};

/** A short first answer (three quarters of the object, its length theirs), cut half-way. */
const shortAndCut = (_req: GetRequestSeen, size: number): AnswerPlan => {
  const short = Math.floor((size * 3) / 4);
  return {
    status: 200,
    from: 0,
    to: Math.floor(short / 2),
    contentLength: short,
    ending: 'destroy',
  };
};

describe('mock S3: answers that disagree with the object are faults, never a short read', () => {
  it('mock S3: a first answer shorter than the object, cut and resumed: the resumed total says the object is longer, read and download start over', async () => {
    mock.put('short.bin', OBJECT);
    for (const [name, run] of Object.entries({
      read: WHOLE_READS.read!,
      download: WHOLE_READS.download!,
    })) {
      const seen = script(shortAndCut);
      const got = await run('short.bin');
      expect(got.length, name).toBe(OBJECT.length);
      expect(got.equals(OBJECT), name).toBe(true);
      // The first answer, its resume (which told the real size), and a fresh read from byte 0.
      expect(
        seen.map((r) => [r.start, r.ifMatch !== undefined]),
        name,
      ).toEqual([
        [0, false],
        [24_576, true],
        [0, false],
      ]);
    }
  });

  it('mock S3: readStream of a first answer shorter than the object fails transient once the resumed total disagrees (it handed out bytes)', async () => {
    mock.put('short-stream.bin', OBJECT);
    script(shortAndCut);
    const err = await drain(await storage.readStream('short-stream.bin')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StorageError);
    expect((err as StorageError).kind).toBe('transient');
    expect((err as StorageError).message).toMatch(
      /^\[storage\] S3 object "short-stream\.bin" in s3:\/\/mock\/: the store answered a size of 65536 bytes where the first response said 49152, after 24576 bytes; the read starts over$/,
    );
  });

  it('mock S3: a range answer that starts later than asked (first request) is retried: 900 of 900 bytes, not 800', async () => {
    const body = randomBytes(1000);
    mock.put('late.bin', body);
    const late = (req: GetRequestSeen, size: number): AnswerPlan => ({
      status: 206,
      from: req.start + 100,
      to: size,
      contentRange: { start: req.start + 100, last: size - 1, total: size },
      contentLength: size - req.start - 100,
      ending: 'end',
    });
    const seen = script(late);
    const got = Buffer.from((await storage.read('late.bin', { start: 100, end: 999 }))!);
    expect(got.length).toBe(900);
    expect(got.equals(body.subarray(100))).toBe(true);
    expect(seen.map((r) => r.start)).toEqual([100, 100]);

    script(late);
    const streamed = await drain(await storage.readStream('late.bin', { start: 100 }));
    expect(streamed.length).toBe(900);
    expect(streamed.equals(body.subarray(100))).toBe(true);
  });

  it('mock S3: a resumed answer that starts later than asked is retried in place, so even readStream succeeds', async () => {
    mock.put('late-resume.bin', OBJECT);
    const half = OBJECT.length / 2;
    const seen = script(
      (_req, size) => ({ status: 200, from: 0, to: half, contentLength: size, ending: 'destroy' }),
      (req, size) => ({
        status: 206,
        from: req.start + 100,
        to: size,
        contentRange: { start: req.start + 100, last: size - 1, total: size },
        contentLength: size - req.start - 100,
        ending: 'end',
      }),
    );
    const got = await drain(await storage.readStream('late-resume.bin'));
    expect(got.length).toBe(OBJECT.length);
    expect(got.equals(OBJECT)).toBe(true);
    expect(seen.map((r) => r.start)).toEqual([0, half, half]);
  });

  for (const [name, run] of Object.entries(WHOLE_READS)) {
    it(`mock S3: ${name} of a body without a length that ends cleanly half-way: a HEAD gives the size, the rest is resumed`, async () => {
      mock.put('nolength.bin', OBJECT);
      const heads = mock.counts.head;
      const seen = script((_req, size) => ({ status: 200, from: 0, to: size / 2, ending: 'end' }));
      const got = await run('nolength.bin');
      expect(got.length).toBe(OBJECT.length);
      expect(got.equals(OBJECT)).toBe(true);
      expect(mock.counts.head - heads).toBe(1);
      expect(seen.map((r) => [r.start, r.ifMatch !== undefined])).toEqual([
        [0, false],
        [OBJECT.length / 2, true],
      ]);
    });
  }

  it("mock S3: a body without a length that ends at the object's end is verified by one HEAD and read in one GET", async () => {
    mock.put('chunked.bin', OBJECT);
    const heads = mock.counts.head;
    const seen = script((_req, size) => ({ status: 200, from: 0, to: size, ending: 'end' }));
    const got = Buffer.from((await storage.read('chunked.bin'))!);
    expect(got.equals(OBJECT)).toBe(true);
    expect(seen).toHaveLength(1);
    expect(mock.counts.head - heads).toBe(1);
  });
});
