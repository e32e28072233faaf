/**
 * Fault injection of wrong GetObject answers (the proxy's ANSWER_FAULT_KINDS) in front of s3rver:
 * a range that starts late, a Content-Range total that is off, a body without a length that ends
 * cleanly half-way, a 206 that ends early. Each read kind returns exactly the object's bytes (the
 * length checked first), after asking again; a stream that already handed out bytes may instead
 * fail with a transient error, never with a short or spliced result.
 */
import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StorageError } from '../../src/errors.js';
import type { S3Storage } from '../../src/storage/s3.js';
import type { FaultKind } from '../helpers/fault-proxy.js';
import { startProxiedS3 } from './fault-setup.js';
import type { ProxiedS3 } from './fault-setup.js';

let env: ProxiedS3;
let tmp: string;
beforeAll(async () => {
  env = await startProxiedS3();
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'tidemark-answers-'));
});
afterAll(async () => {
  await env?.stop();
  await fsp.rm(tmp, { recursive: true, force: true });
});

const OBJECT = randomBytes(64 * 1024);
const RANGE = { start: 1000, end: 40_000 };

async function drain(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

interface ReadKind {
  expected: Buffer;
  run: (s: S3Storage, key: string) => Promise<Buffer>;
  /** Hands bytes out before the read ends: may fail (transient) where the others start over. */
  streams?: boolean;
}

const READS: Record<string, ReadKind> = {
  read: { expected: OBJECT, run: async (s, key) => Buffer.from((await s.read(key))!) },
  'read (range)': {
    expected: OBJECT.subarray(RANGE.start, RANGE.end + 1),
    run: async (s, key) => Buffer.from((await s.read(key, RANGE))!),
  },
  readStream: {
    expected: OBJECT,
    streams: true,
    run: async (s, key) => drain(await s.readStream(key)),
  },
  'readStream (range)': {
    expected: OBJECT.subarray(RANGE.start, RANGE.end + 1),
    streams: true,
    run: async (s, key) => drain(await s.readStream(key, RANGE)),
  },
  download: {
    expected: OBJECT,
    run: async (s, key) => {
      const dest = path.join(await fsp.mkdtemp(path.join(tmp, 'dl-')), 'd.bin');
      const info = await s.download(key, dest);
      const got = await fsp.readFile(dest);
      expect(info.size).toBe(got.length);
      expect(await fsp.readdir(path.dirname(dest))).toEqual(['d.bin']); // no temp file left
      return got;
    },
  },
};

/**
 * The faults each read must survive with its bytes. A whole-object read's first answer cut to
 * three quarters (shortObject) looks like a shorter object: only a checksum can tell.
 */
const KINDS: Record<string, FaultKind[]> = {
  read: ['wrongTotal', 'lateStart', 'noLength'],
  'read (range)': ['shortObject', 'wrongTotal', 'lateStart', 'noLength'],
  readStream: ['wrongTotal', 'lateStart', 'noLength'],
  'readStream (range)': ['shortObject', 'wrongTotal', 'lateStart', 'noLength'],
  download: ['wrongTotal', 'lateStart', 'noLength'],
};

describe.concurrent('wrong GetObject answers (fault injection: proxy in front of s3rver)', () => {
  for (const [name, read] of Object.entries(READS)) {
    for (const kind of KINDS[name]!) {
      for (const which of ['first', 'resumed'] as const) {
        it(`fault injection: ${name} with ${kind} on the ${which} answer returns the object's exact bytes`, async () => {
          const storage = env.storage();
          await env.direct(storage.prefix).write('o.bin', OBJECT);
          const match = { method: 'GET', path: `${storage.prefix}o.bin` };
          if (which === 'resumed') env.proxy.faultNext('cutBody', match);
          const rule = env.proxy.faultNext(kind, match);
          const got = await read.run(storage, 'o.bin').catch((err: unknown) => err);
          expect(rule.hits).toBe(1);
          if (got instanceof Error && read.streams) {
            // The stream had handed out bytes of an answer whose size a later one contradicted.
            expect(got).toBeInstanceOf(StorageError);
            expect((got as StorageError).kind).toBe('transient');
            expect((got as StorageError).context['startOver']).toBe(true);
            return;
          }
          if (got instanceof Error) throw got;
          expect((got as Buffer).length).toBe(read.expected.length);
          expect((got as Buffer).equals(read.expected)).toBe(true);
        });
      }
    }
  }
});
