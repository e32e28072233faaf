/**
 * Fault injection on the commit point: a put-if-absent of `_delta_log/N.json` whose answer was
 * lost after the store acted. The commit loop reads version N back and recognises its own
 * commit by commitInfo.txnId: committed once, at N, never again at N+1, and never reported as
 * a lost race or as TableAlreadyExists.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { EXIT_STORAGE_UNAVAILABLE, exitCodeFor } from '../../src/cli/exit-codes.js';
import { commitWithRetry } from '../../src/delta/commit.js';
import { commitKey } from '../../src/delta/log-files.js';
import { StorageError } from '../../src/errors.js';
import { LocalStorage } from '../../src/storage/local.js';
import type { Storage } from '../../src/storage/storage.js';
import { MOTO_ENDPOINT } from '../helpers/moto.js';
import { startProxiedMoto, startProxiedS3 } from '../storage/fault-setup.js';
import type { ProxiedStore } from '../storage/fault-setup.js';
import {
  addPaths,
  appendRequest,
  commitInfoOf,
  createRequest,
  readCommit,
  replayPaths,
} from './commit-helpers.js';

type Outcome = 'landed, answered false' | 'landed, then failed' | 'failed, nothing written';

/**
 * `inner` whose first put-if-absent of a commit file goes wrong the given way; later calls
 * pass through. (A real store cannot be made to do this on demand: fault injection.)
 */
function losingAnswers(inner: Storage, outcome: Outcome): Storage & { calls: number } {
  const wrapper = Object.create(inner) as Storage & { calls: number };
  wrapper.calls = 0;
  wrapper.writeIfAbsent = async (key, body, opts) => {
    if (wrapper.calls++ > 0 || !key.startsWith('_delta_log/'))
      return inner.writeIfAbsent(key, body, opts);
    const lost = new StorageError(
      `[storage] S3 storage unavailable after 6 attempts: writeIfAbsent ${JSON.stringify(key)}`,
      {
        kind: 'transient',
        context: { key, attempts: 6, ambiguous: true },
      },
    );
    if (outcome === 'failed, nothing written') throw lost;
    const created = await inner.writeIfAbsent(key, body, opts);
    if (outcome === 'landed, then failed') throw lost;
    return created && false; // a retry found the key taken: by our own first attempt
  };
  return wrapper;
}

describe('commitWithRetry when the answer to the commit write is lost (fault injection: storage wrapper)', () => {
  let dir: string;
  let table: LocalStorage;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'tidemark-commit-lost-'));
    table = new LocalStorage(dir);
    await commitWithRetry(table, createRequest());
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  for (const outcome of ['landed, answered false', 'landed, then failed'] as const) {
    it(`fault injection: a commit that ${outcome.replace(',', ' and')} is recognised as our own by txnId`, async () => {
      const storage = losingAnswers(table, outcome);
      expect(await commitWithRetry(storage, appendRequest(0, ['p=a/ours.parquet']))).toEqual({
        version: 1,
        attempts: 1,
      });
      expect(storage.calls).toBe(1);
      expect(addPaths((await readCommit(table, 1))!)).toEqual(['p=a/ours.parquet']);
      expect(await readCommit(table, 2)).toBeNull(); // not committed twice
    });
  }

  it('fault injection: a table creation whose answer was lost is our own, not TableAlreadyExists', async () => {
    const fresh = new LocalStorage(path.join(dir, 'fresh'));
    const result = await commitWithRetry(
      losingAnswers(fresh, 'landed, answered false'),
      createRequest(),
    );
    expect(result).toEqual({ version: 0, attempts: 1 });
    expect(commitInfoOf((await readCommit(fresh, 0))!)['operation']).toBe('CREATE TABLE');
  });

  it('fault injection: a transient failure with nothing at version N stands: nothing committed, exit 4', async () => {
    const err = await commitWithRetry(
      losingAnswers(table, 'failed, nothing written'),
      appendRequest(0, ['p=a/ours.parquet']),
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StorageError);
    expect(exitCodeFor(err)).toBe(EXIT_STORAGE_UNAVAILABLE);
    expect(await readCommit(table, 1)).toBeNull();
  });

  it("fault injection: a lost answer where another writer's commit holds version N is a lost race, retried at N+1", async () => {
    await commitWithRetry(table, appendRequest(0, ['p=a/theirs.parquet']));
    const storage = losingAnswers(table, 'failed, nothing written'); // our write of 1 could not land: 1 was taken
    expect(await commitWithRetry(storage, appendRequest(0, ['p=a/ours.parquet']))).toEqual({
      version: 2,
      attempts: 2,
    });
    expect(addPaths((await readCommit(table, 1))!)).toEqual(['p=a/theirs.parquet']);
    expect(addPaths((await readCommit(table, 2))!)).toEqual(['p=a/ours.parquet']);
  });
});

/** On a real S3 implementation: s3rver (the proxy answers its conditional PUTs), and moto when the run has one (its own). */
function onS3(storeName: string, start: () => Promise<ProxiedStore>): void {
  describe(`commitWithRetry on S3 when the commit PUT lands and its answer is lost (fault injection: proxy in front of ${storeName})`, () => {
    let env: ProxiedStore;
    beforeAll(async () => {
      env = await start();
    });
    afterAll(async () => {
      await env?.stop();
    });

    async function tableOnS3(): Promise<Storage & { prefix: string }> {
      const storage = env.storage({ maxAttempts: 3 });
      await commitWithRetry(storage, createRequest());
      return storage;
    }
    const commitPath = (storage: { prefix: string }, v: number) =>
      `/${env.bucket}/${storage.prefix}${commitKey(v)}`;

    for (const kind of ['resetAfter', 'error500After'] as const) {
      it(`fault injection: ${kind} on the commit PUT commits once, at version 1`, async () => {
        const storage = await tableOnS3();
        env.proxy.faultNext(kind, { method: 'PUT', path: commitPath(storage, 1) });
        expect(await commitWithRetry(storage, appendRequest(0, ['p=a/ours.parquet']))).toEqual({
          version: 1,
          attempts: 1,
        });
        const v1 = env.proxy.log.filter((r) => r.path.startsWith(commitPath(storage, 1)));
        // The lost PUT, the retry refused (412: the key exists), the read that finds our own bytes.
        expect(v1.map((r) => [r.method, r.fault, r.status])).toEqual([
          ['PUT', kind, kind === 'resetAfter' ? undefined : 500],
          ['PUT', undefined, 412],
          ['GET', undefined, 200],
        ]);
        expect(await replayPaths(storage)).toEqual({
          version: 1,
          live: new Set(['p=a/ours.parquet']),
        });
      });
    }

    it('fault injection: a commit PUT that landed before the storage gave up is still recognised by txnId', async () => {
      const storage = await tableOnS3();
      env.proxy.faultNext('resetAfter', { method: 'PUT', path: commitPath(storage, 1) });
      env.proxy.faultNext('slowDown', { method: 'PUT', path: commitPath(storage, 1), times: 2 }); // the storage gives up after 3
      expect(await commitWithRetry(storage, appendRequest(0, ['p=a/ours.parquet']))).toEqual({
        version: 1,
        attempts: 1,
      });
      expect(await replayPaths(storage)).toEqual({
        version: 1,
        live: new Set(['p=a/ours.parquet']),
      });
    });

    it('8 writers racing for the next version: each commits once, at its own version (real put-if-absent)', async () => {
      const storage = await tableOnS3();
      const writers = Array.from({ length: 8 }, (_, i) =>
        commitWithRetry(
          env.storage({ maxAttempts: 3 }, storage.prefix),
          appendRequest(0, [`p=a/w${i}.parquet`]),
        ),
      );
      const results = await Promise.all(writers);
      // The store let each commit key be written once (a second 200 would be the store's fault).
      const written = env.proxy.log
        .filter((r) => r.method === 'PUT' && r.status === 200 && r.path.includes('/_delta_log/'))
        .map((r) => r.path.split('?')[0]!);
      expect(written.length, 'commit PUTs answered 200').toBe(new Set(written).size);
      expect(results.map((r) => r.version).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
      expect(results.some((r) => r.attempts > 1)).toBe(true); // some lost the race and retried
      expect(await replayPaths(storage)).toEqual({
        version: 8,
        live: new Set(Array.from({ length: 8 }, (_, i) => `p=a/w${i}.parquet`)),
      });
    });
  });
}

onS3('s3rver', () => startProxiedS3());
if (MOTO_ENDPOINT) {
  const endpoint = MOTO_ENDPOINT;
  onS3('moto', () => startProxiedMoto(endpoint));
}
