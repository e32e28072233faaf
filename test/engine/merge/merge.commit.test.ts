/**
 * What a MERGE writes to the log: one commit with removes, adds and the caller's extra actions
 * (the job's txn), commitInfo with operation MERGE, Spark's parameter and metric names, and
 * no commit at all when nothing changed and there is nothing else to record.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseCommit, type Action } from '../../../src/delta/actions.js';
import { commitKey } from '../../../src/delta/log-files.js';
import { DuckSession } from '../../../src/engine/duckdb.js';
import { CommitConflictError } from '../../../src/errors.js';
import { localFixture, makeBatch, merge, snapshotOf, type Fixture } from './helpers.js';

let session: DuckSession;
let f: Fixture;
beforeAll(async () => {
  session = await DuckSession.open({ threads: 2 });
});
afterAll(() => session.close());
beforeEach(async () => {
  f = await localFixture(session);
});
afterEach(async () => {
  await f.close();
});

const KEY = { keyColumns: ['id'], orderBy: 'v' };

async function commitActions(version: number): Promise<Action[]> {
  const bytes = await f.storage.read(commitKey(version));
  return parseCommit(Buffer.from(bytes!).toString('utf8'), version, f.storage.uri);
}

function commitInfoOf(actions: Action[]): Record<string, unknown> {
  const info = actions.find((a) => 'commitInfo' in a);
  return (info as { commitInfo: Record<string, unknown> }).commitInfo;
}

describe('the MERGE commit', () => {
  it('records operation MERGE with Spark metric names and the txn in the same version', async () => {
    await makeBatch(session, 'seed', `SELECT range AS id, 'x' AS name, 1 AS v FROM range(10)`);
    await merge(f, { batch: 'seed', ...KEY });
    await makeBatch(
      session,
      'b',
      `SELECT * FROM (VALUES (1, 'y', 2, false), (2, 'z', 2, true), (20, 'n', 1, false)) t(id, name, v, gone)`,
    );
    const txn = { txn: { appId: 'job-orders', version: 7, lastUpdated: 1 } };
    const r = await merge(f, {
      batch: 'b',
      ...KEY,
      deleteWhen: 'gone',
      internalColumns: ['gone'],
      extraActions: [txn],
      appIds: ['job-orders'],
    });
    expect(r.version).toBe(1);
    const actions = await commitActions(1);
    expect(actions.filter((a) => 'remove' in a)).toHaveLength(1);
    expect(actions.filter((a) => 'add' in a)).toHaveLength(2);
    expect(actions).toContainEqual(txn);
    const info = commitInfoOf(actions);
    expect(info).toMatchObject({ operation: 'MERGE', readVersion: 0, isBlindAppend: false });
    expect(info['operationMetrics']).toMatchObject({
      numSourceRows: '3',
      numTargetRowsInserted: '1',
      numTargetRowsUpdated: '1',
      numTargetRowsDeleted: '1',
      numTargetRowsCopied: '8',
      numOutputRows: '10',
      numTargetFilesAdded: '2',
      numTargetFilesRemoved: '1',
      numTargetBytesRemoved: String(r.bytesRewritten),
      numTargetBytesAdded: String(r.bytesAdded),
    });
    expect(
      Number((info['operationMetrics'] as Record<string, string>)['executionTimeMs']),
    ).toBeGreaterThanOrEqual(0);
    const params = info['operationParameters'] as Record<string, string>;
    expect(JSON.parse(params['predicate']!)).toEqual(['target."id" = source."id"']);
    expect(JSON.parse(params['matchedPredicates']!)).toEqual([
      { predicate: '(gone) AND source."v" >= target."v"', actionType: 'delete' },
      { predicate: 'source."v" >= target."v"', actionType: 'update' },
    ]);
    expect(JSON.parse(params['notMatchedPredicates']!)).toEqual([
      { predicate: 'NOT (gone)', actionType: 'insert' },
    ]);
    expect((await snapshotOf(f)).txns.get('job-orders')?.version).toBe(7);
  });

  it('removes files with their partition values, size and stats (extended file metadata)', async () => {
    await makeBatch(
      session,
      'seed',
      `SELECT range AS id, 'p' || (range % 2) AS part, 1 AS v FROM range(4)`,
    );
    await merge(f, { batch: 'seed', ...KEY, partitionBy: ['part'] });
    const before = await snapshotOf(f);
    await makeBatch(session, 'b', `SELECT 1 AS id, 'p1' AS part, 2 AS v`);
    await merge(f, { batch: 'b', ...KEY });
    const removed = (await commitActions(1)).flatMap((a) => ('remove' in a ? [a.remove] : []));
    const old = before.files.find((x) => x.partitionValues['part'] === 'p1')!;
    expect(removed).toEqual([
      expect.objectContaining({
        path: old.path,
        dataChange: true,
        extendedFileMetadata: true,
        partitionValues: { part: 'p1' },
        size: old.size,
        stats: old.stats,
      }),
    ]);
  });

  it('creates the table, its data and the txn in version 0', async () => {
    await makeBatch(session, 'b', `SELECT 1 AS id, 'a' AS name, 1 AS v`);
    const txn = { txn: { appId: 'job', version: 1, lastUpdated: 1 } };
    const r = await merge(f, { batch: 'b', ...KEY, extraActions: [txn] });
    expect(r).toMatchObject({ version: 0, created: true });
    const actions = await commitActions(0);
    expect(actions.map((a) => Object.keys(a)[0]).sort()).toEqual([
      'add',
      'commitInfo',
      'metaData',
      'protocol',
      'txn',
    ]);
    expect(commitInfoOf(actions)['operationMetrics']).toMatchObject({
      numTargetRowsInserted: '1',
      numSourceRows: '1',
    });
  });

  it('commits nothing when nothing changed and no extra actions are given', async () => {
    await makeBatch(session, 'seed', `SELECT 1 AS id, 'a' AS name, 5 AS v`);
    await merge(f, { batch: 'seed', ...KEY });
    await makeBatch(session, 'b', `SELECT 1 AS id, 'old' AS name, 4 AS v`);
    expect((await merge(f, { batch: 'b', ...KEY })).version).toBeNull();
    expect(await f.storage.head(commitKey(1))).toBeNull();
  });

  it('still commits the extra actions when no row changed (the watermark moves)', async () => {
    await makeBatch(session, 'seed', `SELECT 1 AS id, 'a' AS name, 5 AS v`);
    await merge(f, { batch: 'seed', ...KEY });
    await makeBatch(session, 'b', `SELECT 1 AS id, 'old' AS name, 4 AS v`);
    const txn = { txn: { appId: 'job', version: 2, lastUpdated: 1 } };
    const r = await merge(f, { batch: 'b', ...KEY, extraActions: [txn] });
    expect(r).toMatchObject({ version: 1, skippedStale: 1, filesAdded: 0, filesRemoved: 0 });
    expect((await commitActions(1)).filter((a) => !('commitInfo' in a))).toEqual([txn]);
  });

  it('plans on a snapshot passed by the caller, and fails with a conflict when it is stale', async () => {
    await makeBatch(session, 'seed', `SELECT range AS id, 'a' AS name, 1 AS v FROM range(3)`);
    await merge(f, { batch: 'seed', ...KEY });
    const stale = await snapshotOf(f);
    await makeBatch(session, 'b1', `SELECT 1 AS id, 'first' AS name, 2 AS v`);
    await merge(f, { batch: 'b1', ...KEY });
    await makeBatch(session, 'b2', `SELECT 1 AS id, 'second' AS name, 3 AS v`);
    const err = await merge(f, { batch: 'b2', ...KEY, snapshot: stale }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CommitConflictError);
    // The winner rewrote the file this MERGE read (and added into the partitions it read).
    expect(['ConcurrentAppend', 'ConcurrentDeleteRead']).toContain(
      (err as CommitConflictError).conflict,
    );
  });
});
