import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { commitWithRetry, type RetryInfo } from '../../src/delta/commit.js';
import {
  CommitConflictError,
  CommitRetriesExhaustedError,
  DeltaLogError,
} from '../../src/errors.js';
import { LocalStorage } from '../../src/storage/local.js';
import {
  addAction,
  addPaths,
  appendRequest,
  commitInfoOf,
  createRequest,
  readCommit,
  removeAction,
} from './commit-helpers.js';

let dir: string;
let table: LocalStorage;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'tidemark-commit-'));
  table = new LocalStorage(dir);
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('commitWithRetry', () => {
  it('commits versions 0, 1, 2 as zero-padded JSON files', async () => {
    expect(await commitWithRetry(table, createRequest())).toEqual({ version: 0, attempts: 1 });
    expect(await commitWithRetry(table, appendRequest(0, ['p=a/1.parquet']))).toEqual({
      version: 1,
      attempts: 1,
    });
    expect(await commitWithRetry(table, appendRequest(1, ['p=a/2.parquet']))).toEqual({
      version: 2,
      attempts: 1,
    });
    const names = (await readdir(path.join(dir, '_delta_log'))).sort();
    expect(names).toEqual([
      '00000000000000000000.json',
      '00000000000000000001.json',
      '00000000000000000002.json',
    ]);
  });

  it('writes commitInfo first, with Spark fields and stringified operation parameters', async () => {
    await commitWithRetry(table, createRequest(), { now: () => 1_700_000_000_000 });
    await commitWithRetry(table, appendRequest(0, ['p=a/1.parquet']), {
      now: () => 1_700_000_000_500,
    });
    const create = commitInfoOf((await readCommit(table, 0))!);
    expect(create).toMatchObject({
      timestamp: 1_700_000_000_000,
      operation: 'CREATE TABLE',
      operationParameters: { partitionBy: '["p"]', isManaged: 'false' },
      isolationLevel: 'WriteSerializable',
      isBlindAppend: false,
    });
    expect(create).not.toHaveProperty('readVersion');
    const append = commitInfoOf((await readCommit(table, 1))!);
    expect(append).toMatchObject({
      timestamp: 1_700_000_000_500,
      operation: 'WRITE',
      operationParameters: { mode: 'Append', partitionBy: '[]' },
      readVersion: 0,
      isBlindAppend: true,
      operationMetrics: { numFiles: '1', numOutputRows: '1', numOutputBytes: '100' },
    });
    expect(append['engineInfo']).toMatch(/^tidemark\/\d+\.\d+\.\d+/);
    expect(append['txnId']).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    expect(append['txnId']).not.toBe(create['txnId']);
  });

  it('retries on top of a non-conflicting winner and records the new readVersion', async () => {
    await commitWithRetry(table, createRequest());
    await commitWithRetry(table, appendRequest(0, ['p=a/winner.parquet'])); // the other writer
    const retries: RetryInfo[] = [];
    const result = await commitWithRetry(table, appendRequest(0, ['p=a/ours.parquet']), {
      onRetry: (r) => retries.push(r),
    });
    expect(result).toEqual({ version: 2, attempts: 2 });
    expect(retries).toEqual([{ attempt: 1, lostVersion: 1, nextVersion: 2 }]);
    const ours = (await readCommit(table, 2))!;
    expect(commitInfoOf(ours)['readVersion']).toBe(1);
    expect(addPaths(ours)).toEqual(['p=a/ours.parquet']);
    expect(addPaths((await readCommit(table, 1))!)).toEqual(['p=a/winner.parquet']);
  });

  it('skips several winners at once', async () => {
    await commitWithRetry(table, createRequest());
    for (let v = 1; v <= 4; v++)
      await commitWithRetry(table, appendRequest(v - 1, [`p=a/w${v}.parquet`]));
    expect(await commitWithRetry(table, appendRequest(0, ['p=a/ours.parquet']))).toEqual({
      version: 5,
      attempts: 2,
    });
  });

  it('fails with CommitConflictError when a concurrent merge rewrote the partition this transaction read', async () => {
    await commitWithRetry(table, createRequest());
    await commitWithRetry(table, appendRequest(0, ['p=a/1.parquet']));
    // Winner: a merge rewriting p=a/1.parquet at version 2.
    const rewrite = (name: string) => ({
      actions: [removeAction('p=a/1.parquet'), addAction(`p=a/${name}.parquet`)],
      operation: 'MERGE',
      read: { readVersion: 1, partitions: [{ p: 'a' }], files: ['p=a/1.parquet'], appIds: [] },
      isBlindAppend: false,
    });
    await commitWithRetry(table, rewrite('winner'));
    const err = await commitWithRetry(table, rewrite('loser')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CommitConflictError);
    expect(err).toMatchObject({
      kind: 'conflict',
      conflict: 'ConcurrentAppend',
      context: { version: 2, uri: table.uri },
    });
    expect(await readCommit(table, 3)).toBeNull();
  });

  it('fails with ConcurrentTransaction when the winner wrote a txn for the same appId', async () => {
    await commitWithRetry(table, createRequest());
    const batch = (n: number) =>
      appendRequest(
        0,
        [`p=a/${n}.parquet`],
        [{ txn: { appId: 'job-orders', version: 7, lastUpdated: n } }],
      );
    await commitWithRetry(table, batch(1));
    const err = await commitWithRetry(table, batch(2)).catch((e: unknown) => e);
    expect(err).toMatchObject({
      conflict: 'ConcurrentTransaction',
      context: { version: 1, subject: 'job-orders' },
    });
  });

  it('the loser of a create race gets TableAlreadyExists', async () => {
    const [a, b] = await Promise.allSettled([
      commitWithRetry(table, createRequest()),
      commitWithRetry(table, createRequest()),
    ]);
    const outcomes = [a, b].map((r) =>
      r.status === 'fulfilled' ? 'ok' : (r.reason as CommitConflictError).conflict,
    );
    expect(outcomes.sort()).toEqual(['TableAlreadyExists', 'ok']);
  });

  it('gives up after maxAttempts with CommitRetriesExhaustedError', async () => {
    await commitWithRetry(table, createRequest());
    await commitWithRetry(table, appendRequest(0, ['p=a/w.parquet']));
    const err = await commitWithRetry(table, appendRequest(0, ['p=a/o.parquet']), {
      maxAttempts: 1,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CommitRetriesExhaustedError);
    expect(err).toMatchObject({ kind: 'conflict', context: { attempts: 1, version: 1 } });
  });

  it('refuses requests that break the one-commit rules before writing anything', async () => {
    await commitWithRetry(table, createRequest());
    const dupAdd = appendRequest(0, ['p=a/1.parquet', 'p=a/1.parquet']);
    await expect(commitWithRetry(table, dupAdd)).rejects.toThrow(/two adds of p=a\/1.parquet/);
    const twoTxn = appendRequest(
      0,
      [],
      [{ txn: { appId: 'x', version: 1 } }, { txn: { appId: 'x', version: 2 } }],
    );
    await expect(commitWithRetry(table, twoTxn)).rejects.toThrow(/two txn actions for appId 'x'/);
    const dupRemove = { ...appendRequest(0, []), actions: [removeAction('f'), removeAction('f')] };
    await expect(commitWithRetry(table, dupRemove)).rejects.toBeInstanceOf(DeltaLogError);
    const twoMeta = {
      ...createRequest(),
      actions: [...createRequest().actions, ...createRequest().actions],
    };
    await expect(
      commitWithRetry(table, { ...twoMeta, read: { ...twoMeta.read, readVersion: 0 } }),
    ).rejects.toThrow(/2 metaData actions/);
    const noProtocol = { ...createRequest(), actions: createRequest().actions.slice(1) };
    await expect(
      commitWithRetry(new LocalStorage(path.join(dir, 'other')), noProtocol),
    ).rejects.toThrow(/version 0 must contain both protocol and metaData/);
    expect(await readCommit(table, 1)).toBeNull();
  });

  it('stops when the signal is aborted', async () => {
    const ctrl = new AbortController();
    ctrl.abort();
    await expect(commitWithRetry(table, createRequest(), { signal: ctrl.signal })).rejects.toThrow(
      /abort/i,
    );
    expect(await readCommit(table, 0)).toBeNull();
  });
});
