/**
 * Fault injection: a store that fails every request, or accepts connections and never answers,
 * makes each operation fail within a bounded time with a transient StorageError that says
 * "storage unavailable after N attempts" and what was tried; the CLI maps it to exit 4.
 */
import { promises as fsp } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  EXIT_FAILED,
  EXIT_LOST_RACE,
  EXIT_STORAGE_UNAVAILABLE,
  EXIT_USAGE,
  exitCodeFor,
} from '../../src/cli/exit-codes.js';
import { errorInfo } from '../../src/cli/output.js';
import { CommitConflictError, ConfigError, DeltaLogError, StorageError } from '../../src/errors.js';
import type { S3Storage } from '../../src/storage/s3.js';
import type { FaultKind } from '../helpers/fault-proxy.js';
import { scaled } from '../helpers/machine.js';
import { FAST_RETRIES, startProxiedS3 } from './fault-setup.js';
import type { ProxiedS3 } from './fault-setup.js';

let env: ProxiedS3;
let tmp: string;
beforeAll(async () => {
  env = await startProxiedS3();
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'tidemark-unavailable-'));
  await fsp.writeFile(path.join(tmp, 'up.txt'), 'upload me');
});
afterAll(async () => {
  await env?.stop();
  await fsp.rm(tmp, { recursive: true, force: true });
});
beforeEach(() => {
  env.proxy.reset();
  env.proxy.setRandom({ rate: 0 });
});

/** Every kind that fails a request whatever its answer would have held. */
const FAILING: FaultKind[] = [
  'slowDown',
  'error500Before',
  'error500After',
  'resetAfter',
  'silent',
];
const ATTEMPTS = 3;
/** Each attempt waits at most an idle timeout and a backoff; the rest is slack for a loaded machine (both scaled to it). */
const BOUND_MS =
  ATTEMPTS * (FAST_RETRIES.idleTimeoutMs! + FAST_RETRIES.retryMaxDelayMs!) + scaled(1_500);

/** One call of each operation, on keys that exist (set up before the faults start). */
function operations(
  storage: S3Storage,
): Record<string, [key: string, run: () => Promise<unknown>]> {
  return {
    head: ['k.txt', () => storage.head('k.txt')],
    read: ['k.txt', () => storage.read('k.txt')],
    readStream: ['k.txt', async () => (await storage.readStream('k.txt')).toArray()],
    download: ['k.txt', () => storage.download('k.txt', path.join(tmp, 'dl', 'k.txt'))],
    list: ['', () => storage.listAll()],
    write: ['w.txt', () => storage.write('w.txt', 'x')],
    writeIfAbsent: ['n.txt', () => storage.writeIfAbsent('n.txt', 'x')],
    upload: ['u.txt', () => storage.upload('u.txt', path.join(tmp, 'up.txt'))],
    delete: ['k.txt', () => storage.delete(['k.txt'])],
  };
}

async function failure(run: () => Promise<unknown>): Promise<{ err: StorageError; ms: number }> {
  const started = Date.now();
  const err = await run().then(
    () => {
      throw new Error('expected the operation to fail');
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StorageError);
  return { err: err as StorageError, ms: Date.now() - started };
}

describe('a store that fails everything (fault injection: proxy in front of s3rver)', () => {
  it('fault injection: at 100 % faults each operation gives up in bounded time with "storage unavailable after N attempts"', async () => {
    const storage = env.storage({ maxAttempts: ATTEMPTS });
    await env.direct(storage.prefix).write('k.txt', 'here');
    env.proxy.setRandom({ rate: 1, kinds: FAILING, seed: 7 });
    for (const [op, [key, run]] of Object.entries(operations(storage))) {
      const { err, ms } = await failure(run);
      expect(ms, op).toBeLessThan(BOUND_MS);
      expect(err.kind, op).toBe('transient');
      const where = `${storage.uri} (endpoint ${env.proxy.endpoint})`;
      expect(
        err.message.startsWith(
          `[storage] S3 storage unavailable after ${ATTEMPTS} attempts: ${op} "${key}" on ${where}: `,
        ),
        err.message,
      ).toBe(true);
      expect(err.message).toMatch(/\(faults: .+\)$/);
      expect(err.context).toMatchObject({
        key,
        uri: storage.uri,
        attempts: ATTEMPTS,
        endpoint: env.proxy.endpoint,
      });
      expect(String(err.context['op'])).toMatch(new RegExp(`^${op}`));
      expect(exitCodeFor(err)).toBe(EXIT_STORAGE_UNAVAILABLE);
    }
    expect(env.proxy.byMethod['GET']).toBeGreaterThan(0);
  });

  it('fault injection: a server that accepts connections and never answers fails each request within the idle timeout', async () => {
    const silent = net.createServer(() => undefined); // accepts, reads nothing, answers nothing
    const sockets = new Set<net.Socket>();
    silent.on('connection', (s) => sockets.add(s));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const endpoint = `http://127.0.0.1:${(silent.address() as net.AddressInfo).port}`;
      const storage = env.storage({ endpoint, maxAttempts: ATTEMPTS });
      // All operations at once: each waits out its own idle timeouts.
      const ops = Object.entries(operations(storage));
      const results = await Promise.all(ops.map(([, [, run]]) => failure(run)));
      ops.forEach(([op, [key]], i) => {
        const { err, ms } = results[i]!;
        expect(ms, op).toBeLessThan(BOUND_MS);
        expect(err.kind).toBe('transient');
        expect(err.message).toContain(
          `S3 storage unavailable after ${ATTEMPTS} attempts: ${op} "${key}"`,
        );
        expect(err.message).toContain(`(faults: TimeoutError ×${ATTEMPTS})`);
      });
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });

  it('fault injection: the retry budget is shared with children; once spent, each request fails at its first fault', async () => {
    const storage = env.storage({ maxAttempts: 5, retryBudget: 12 }); // two retries' worth
    env.proxy.setRandom({ rate: 1, kinds: ['error500Before'] });
    const first = await failure(() => storage.head('a'));
    expect(first.err.context).toMatchObject({ attempts: 3, budgetSpent: true });
    expect(first.err.message).toContain('after 3 attempts');
    expect(first.err.message).toContain('the retry budget of this storage is spent');
    const second = await failure(() => storage.child('sub').read('b'));
    expect(second.err.context).toMatchObject({ attempts: 1, budgetSpent: true, key: 'b' });
    expect(env.proxy.byMethod).toEqual({ HEAD: 3, GET: 1 });
  });

  it('fault injection: a put-if-absent that may have landed says so when it gives up', async () => {
    const storage = env.storage({ maxAttempts: ATTEMPTS });
    env.proxy.faultNext('resetAfter', { method: 'PUT', path: `${storage.prefix}v.json` });
    env.proxy.faultNext('error500Before', {
      method: 'PUT',
      path: `${storage.prefix}v.json`,
      times: ATTEMPTS,
    });
    const { err } = await failure(() => storage.writeIfAbsent('v.json', '{"v":1}'));
    expect(err.context).toMatchObject({ ambiguous: true, attempts: ATTEMPTS, op: 'writeIfAbsent' });
    // The reset, or an idle timeout if s3rver was slower to store than the test's idle timeout.
    expect(err.message).toMatch(
      /\(faults: (ECONNRESET|TimeoutError), HTTP 500 InternalError ×2\)$/,
    );
    // It did land: the caller must read the key to know (the Delta commit does).
    expect(Buffer.from((await env.direct(storage.prefix).read('v.json'))!).toString()).toBe(
      '{"v":1}',
    );
  });

  it('fault injection: a multipart upload whose part keeps failing retries that part alone, then is aborted and leaves no object', async () => {
    const storage = env.storage({ maxAttempts: ATTEMPTS, idleTimeoutMs: scaled(1_000) });
    const big = path.join(tmp, 'big.bin');
    await fsp.writeFile(big, Buffer.alloc(5 * 1024 * 1024 + 10, 1));
    env.proxy.faultNext('error500Before', {
      method: 'PUT',
      path: new RegExp(`${storage.prefix}big\\.bin\\?partNumber=2`),
      times: ATTEMPTS,
    });
    const { err } = await failure(() => storage.upload('big.bin', big));
    expect(err.message).toContain(
      `S3 storage unavailable after ${ATTEMPTS} attempts: upload "big.bin"`,
    );
    // One multipart upload: part 2 sent ATTEMPTS times, then the upload aborted, not started over
    // (s3rver does not implement AbortMultipartUpload and answers 405, which does not hide the
    // fault; S3 answers 204).
    const aborts = env.proxy.log.filter(
      (r) => r.method === 'DELETE' && r.path.includes(`${storage.prefix}big.bin?uploadId=`),
    );
    expect(aborts).toHaveLength(1);
    expect(
      env.proxy.log.filter(
        (r) => r.method === 'POST' && r.path.includes(`${storage.prefix}big.bin?uploads`),
      ),
    ).toHaveLength(1);
    expect(await env.direct(storage.prefix).head('big.bin')).toBeNull();
    // CreateMultipartUpload (a POST), part 1, part 2 ATTEMPTS times; then the abort.
    expect(storage.requestCounts()).toMatchObject({ put: 2 + ATTEMPTS, delete: 1 });
  });
});

describe('exit code 4 and retryable (the transient-failure contract)', () => {
  const unavailable = new StorageError(
    '[storage] S3 storage unavailable after 6 attempts: read "k" on s3://b/: ECONNRESET',
    {
      kind: 'transient',
      context: { key: 'k', uri: 's3://b/', attempts: 6, op: 'read' },
    },
  );

  it('maps a transient storage error to exit 4 and retryable: true', () => {
    expect(exitCodeFor(unavailable)).toBe(EXIT_STORAGE_UNAVAILABLE);
    expect(errorInfo(unavailable)).toMatchObject({
      type: 'StorageError',
      retryable: true,
      context: { attempts: 6 },
    });
  });

  it('walks the cause chain: a transient fault wrapped by a log or engine error is still exit 4', () => {
    const wrapped = new DeltaLogError('[job] tombstone file t of job j is missing or unreadable', {
      cause: unavailable,
    });
    expect(exitCodeFor(wrapped)).toBe(EXIT_STORAGE_UNAVAILABLE);
    expect(errorInfo(wrapped).retryable).toBe(true);
    expect(exitCodeFor(new Error('plain', { cause: wrapped }))).toBe(EXIT_STORAGE_UNAVAILABLE);
  });

  it('keeps usage, conflict and terminal failures as they were', () => {
    expect(exitCodeFor(new ConfigError('bad endpoint', {}, unavailable))).toBe(EXIT_USAGE);
    const conflict = new CommitConflictError('ConcurrentAppend', 'lost', {});
    expect(exitCodeFor(conflict)).toBe(EXIT_LOST_RACE);
    expect(errorInfo(conflict).retryable).toBe(false);
    const denied = new StorageError('[storage] S3 read failed: AccessDenied', { kind: 'terminal' });
    expect(exitCodeFor(denied)).toBe(EXIT_FAILED);
    expect(errorInfo(new Error('boom')).retryable).toBe(false);
  });
});
