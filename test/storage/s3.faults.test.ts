/**
 * Fault injection: each fault kind of the proxy, alone and deterministically, on each kind of
 * S3Storage operation, against the real embedded S3 server, and on moto's S3 server in the
 * interop run (TIDEMARK_MOTO_ENDPOINT). Every operation must succeed with exact contents, after
 * retrying where the fault broke the exchange.
 */
import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { S3Storage } from '../../src/storage/s3.js';
import type { RequestCounts } from '../../src/storage/storage.js';
import { FAULT_KINDS } from '../helpers/fault-proxy.js';
import type { FaultKind, FaultMatch } from '../helpers/fault-proxy.js';
import { scaled } from '../helpers/machine.js';
import { MOTO_ENDPOINT } from '../helpers/moto.js';
import { startProxiedMoto, startProxiedS3 } from './fault-setup.js';
import type { ProxiedS3, ProxiedStore } from './fault-setup.js';

let env: ProxiedS3;
let tmp: string;
beforeAll(async () => {
  env = await startProxiedS3();
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'tidemark-faults-'));
});
afterAll(async () => {
  await env?.stop();
  await fsp.rm(tmp, { recursive: true, force: true });
});

const OBJECT = randomBytes(64 * 1024);
const BIG = randomBytes(5 * 1024 * 1024 + 100); // two parts of 5 MiB

async function drain(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

interface Ctx {
  storage: S3Storage;
  direct: S3Storage;
  /** The storage's prefix, as it appears in request paths. */
  prefix: string;
}

interface OpCase {
  /** The request kind the fault hits (RequestCounts key). */
  counts: keyof RequestCounts;
  /** Does the faulted answer have a body? (cutBody and silentMidBody break only those.) */
  bodied: boolean;
  /** Put what the operation needs in place, straight on s3rver. */
  setup?: (c: Ctx) => Promise<void>;
  match: (c: Ctx) => FaultMatch;
  /** A second request to fault the same way (multipart: part and completion in one upload). */
  also?: (c: Ctx) => FaultMatch;
  /** Run the operation and check its result exactly. */
  run: (c: Ctx) => Promise<void>;
  /**
   * Multipart cases run one at a time with a longer idle timeout: s3rver takes a while to store
   * a 5 MiB part, and eight uploads at once would time out on their own.
   */
  heavy?: boolean;
}

const HEAVY = { idleTimeoutMs: scaled(1_000) };

const objectPath = (c: Ctx, key: string) =>
  new RegExp(`^/[^/]+/${c.prefix}${key.replace('.', '\\.')}(\\?|$)`);

const OPS: Record<string, OpCase> = {
  head: {
    counts: 'head',
    bodied: false,
    setup: (c) => c.direct.write('h.bin', OBJECT),
    match: (c) => ({ method: 'HEAD', path: objectPath(c, 'h.bin') }),
    run: async (c) =>
      expect(await c.storage.head('h.bin')).toMatchObject({ key: 'h.bin', size: OBJECT.length }),
  },
  read: {
    counts: 'get',
    bodied: true,
    setup: (c) => c.direct.write('r.bin', OBJECT),
    match: (c) => ({ method: 'GET', path: objectPath(c, 'r.bin') }),
    run: async (c) =>
      expect(Buffer.from((await c.storage.read('r.bin'))!).equals(OBJECT)).toBe(true),
  },
  'read (range)': {
    counts: 'get',
    bodied: true,
    setup: (c) => c.direct.write('r.bin', OBJECT),
    match: (c) => ({ method: 'GET', path: objectPath(c, 'r.bin') }),
    run: async (c) => {
      const got = await c.storage.read('r.bin', { start: 1000, end: 150_000 });
      expect(Buffer.from(got!).equals(OBJECT.subarray(1000, 150_001))).toBe(true);
    },
  },
  readStream: {
    counts: 'get',
    bodied: true,
    setup: (c) => c.direct.write('s.bin', OBJECT),
    match: (c) => ({ method: 'GET', path: objectPath(c, 's.bin') }),
    run: async (c) => {
      const got = await drain(await c.storage.readStream('s.bin'));
      // The length first: a short read names how short it was.
      expect(got.length).toBe(OBJECT.length);
      expect(got.equals(OBJECT)).toBe(true);
    },
  },
  download: {
    counts: 'get',
    bodied: true,
    setup: (c) => c.direct.write('d.bin', OBJECT),
    match: (c) => ({ method: 'GET', path: objectPath(c, 'd.bin') }),
    run: async (c) => {
      const dir = await fsp.mkdtemp(path.join(tmp, 'dl-'));
      const info = await c.storage.download('d.bin', path.join(dir, 'd.bin'));
      expect(info).toMatchObject({ key: 'd.bin', size: OBJECT.length });
      expect((await fsp.readFile(path.join(dir, 'd.bin'))).equals(OBJECT)).toBe(true);
      expect(await fsp.readdir(dir)).toEqual(['d.bin']); // no temp file left
    },
  },
  'list (second page)': {
    counts: 'list',
    bodied: true,
    setup: (c) =>
      Promise.all(['a', 'b', 'c', 'd', 'e'].map((k) => c.direct.write(`l/${k}`, k))).then(
        () => undefined,
      ),
    match: (c) => ({
      method: 'GET',
      path: new RegExp(`continuation-token=.*prefix=${encodeURIComponent(c.prefix)}l`),
    }),
    run: async (c) => {
      const keys = (await c.storage.listAll({ prefix: 'l/', pageSize: 2 })).objects.map(
        (o) => o.key,
      );
      expect(keys).toEqual(['l/a', 'l/b', 'l/c', 'l/d', 'l/e']);
    },
  },
  write: {
    counts: 'put',
    bodied: false,
    match: (c) => ({ method: 'PUT', path: objectPath(c, 'w.bin') }),
    run: async (c) => {
      await c.storage.write('w.bin', OBJECT);
      expect(Buffer.from((await c.direct.read('w.bin'))!).equals(OBJECT)).toBe(true);
    },
  },
  'writeIfAbsent (new key)': {
    counts: 'put',
    bodied: false,
    match: (c) => ({ method: 'PUT', path: objectPath(c, 'wia.json') }),
    run: async (c) => {
      expect(await c.storage.writeIfAbsent('wia.json', '{"ours":true}')).toBe(true);
      expect(Buffer.from((await c.direct.read('wia.json'))!).toString()).toBe('{"ours":true}');
    },
  },
  'writeIfAbsent (taken key)': {
    counts: 'put',
    bodied: false,
    setup: (c) => c.direct.write('wia.json', '{"theirs":true}'),
    match: (c) => ({ method: 'PUT', path: objectPath(c, 'wia.json') }),
    run: async (c) => {
      expect(await c.storage.writeIfAbsent('wia.json', '{"ours":true}')).toBe(false);
      expect(Buffer.from((await c.direct.read('wia.json'))!).toString()).toBe('{"theirs":true}');
    },
  },
  'upload (single PUT)': {
    counts: 'put',
    bodied: false,
    match: (c) => ({ method: 'PUT', path: objectPath(c, 'u.bin') }),
    run: async (c) => {
      await c.storage.upload('u.bin', path.join(tmp, 'small.bin'));
      expect(Buffer.from((await c.direct.read('u.bin'))!).equals(OBJECT)).toBe(true);
    },
  },
  'upload (multipart: part 2 and the completion)': {
    counts: 'put',
    bodied: true,
    heavy: true,
    match: (c) => ({ method: 'PUT', path: new RegExp(`/${c.prefix}big\\.bin\\?partNumber=2`) }),
    also: (c) => ({ method: 'POST', path: new RegExp(`/${c.prefix}big\\.bin\\?uploadId=`) }),
    run: async (c) => {
      await c.storage.upload('big.bin', path.join(tmp, 'big.bin'));
      expect(Buffer.from((await c.direct.read('big.bin'))!).equals(BIG)).toBe(true);
    },
  },
  delete: {
    counts: 'delete',
    bodied: true,
    setup: (c) =>
      Promise.all(['x/1', 'x/2', 'y'].map((k) => c.direct.write(k, k))).then(() => undefined),
    match: (c) => ({ method: 'POST', path: '?delete', body: `${c.prefix}x/1` }),
    run: async (c) => {
      await c.storage.delete(['x/1', 'x/2', 'missing']);
      expect((await c.direct.listAll()).objects.map((o) => o.key)).toEqual(['y']);
    },
  },
};

/** Kinds after which the request must have been sent again. */
function mustRetry(kind: FaultKind, op: OpCase): boolean {
  if (kind === 'slow') return false;
  if (kind === 'cutBody' || kind === 'silentMidBody') return op.bodied;
  return true;
}

beforeAll(async () => {
  await fsp.writeFile(path.join(tmp, 'big.bin'), BIG);
  await fsp.writeFile(path.join(tmp, 'small.bin'), OBJECT);
});

/** One test per operation and fault kind; light operations run concurrently (each on its own prefix). */
function matrix(ops: [string, OpCase][], store: () => ProxiedStore = () => env, on = ''): void {
  for (const [name, op] of ops) {
    describe(`fault injection on ${name}${on}`, () => {
      for (const kind of FAULT_KINDS) {
        it(`fault injection: ${name} survives ${kind}${on}`, async () => {
          const at = store();
          const storage = at.storage(op.heavy ? HEAVY : {});
          const c: Ctx = { storage, direct: at.direct(storage.prefix), prefix: storage.prefix };
          await op.setup?.(c);
          const rules = [op.match(c), ...(op.also ? [op.also(c)] : [])].map((m) =>
            at.proxy.faultNext(kind, m),
          );
          await op.run(c);
          for (const rule of rules) expect(rule.hits).toBe(1);
          const sent = storage.requestCounts()[op.counts];
          if (mustRetry(kind, op)) expect(sent).toBeGreaterThanOrEqual(2);
          else expect(sent).toBeGreaterThanOrEqual(1);
        });
      }
    });
  }
}

describe.concurrent(
  'S3Storage under single faults (fault injection: proxy in front of s3rver)',
  () => {
    matrix(Object.entries(OPS).filter(([, op]) => !op.heavy));
  },
);

describe('S3Storage uploads under single faults, one at a time (fault injection: proxy in front of s3rver)', () => {
  matrix(Object.entries(OPS).filter(([, op]) => op.heavy));
});

if (MOTO_ENDPOINT) {
  const endpoint = MOTO_ENDPOINT;
  describe('S3Storage under single faults on moto (fault injection: proxy in front of moto), one at a time', () => {
    let moto: ProxiedStore;
    beforeAll(async () => {
      moto = await startProxiedMoto(endpoint);
    });
    afterAll(async () => {
      await moto?.stop();
    });
    matrix(Object.entries(OPS), () => moto, ' (moto)');
  });
}
