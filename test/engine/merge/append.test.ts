/**
 * Append mode: rows become new files in a blind append (WRITE, mode Append), nothing is read,
 * the table is created on first use, and the caller's txn rides in the same commit.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseCommit } from '../../../src/delta/actions.js';
import { commitKey } from '../../../src/delta/log-files.js';
import { DuckSession } from '../../../src/engine/duckdb.js';
import { SchemaError } from '../../../src/errors.js';
import { appendAndCommit } from '../../../scripts/lib/tables.js';
import { localFixture, makeBatch, readRows, snapshotOf, type Fixture } from './helpers.js';

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

const append = (opts: Parameters<typeof appendAndCommit>[2]) =>
  appendAndCommit(f.table, session, opts);

describe("stageAppend, committed with the caller's actions", () => {
  it('creates the table, then appends, and reads every row back', async () => {
    await makeBatch(
      session,
      'e1',
      `SELECT range AS seq, 'click' AS kind, DATE '2024-01-01' AS day FROM range(3)`,
    );
    const r1 = await append({ batch: 'e1', partitionBy: ['day'] });
    expect(r1).toMatchObject({ version: 0, created: true, inserted: 3, filesAdded: 1 });
    await makeBatch(
      session,
      'e2',
      `SELECT range AS seq, 'view' AS kind, DATE '2024-01-02' AS day FROM range(3, 5)`,
    );
    const r2 = await append({ batch: 'e2' });
    expect(r2).toMatchObject({ version: 1, created: false, inserted: 2, filesAdded: 1 });
    expect(await readRows(f, 'seq')).toEqual([
      { seq: '0', kind: 'click', day: '2024-01-01' },
      { seq: '1', kind: 'click', day: '2024-01-01' },
      { seq: '2', kind: 'click', day: '2024-01-01' },
      { seq: '3', kind: 'view', day: '2024-01-02' },
      { seq: '4', kind: 'view', day: '2024-01-02' },
    ]);
    expect((await snapshotOf(f)).partitionColumns).toEqual(['day']);
  });

  it('appends duplicates as they come (no key) and commits a blind append with the txn', async () => {
    await makeBatch(session, 'e', `SELECT 1 AS seq, 'x' AS kind`);
    await append({ batch: 'e' });
    const txn = { txn: { appId: 'clicks', version: 3, lastUpdated: 1 } };
    const r = await append({ batch: 'e', extraActions: [txn], appIds: ['clicks'] });
    expect(r.version).toBe(1);
    expect(await readRows(f, 'seq')).toHaveLength(2);
    const actions = parseCommit(
      Buffer.from((await f.storage.read(commitKey(1)))!).toString('utf8'),
      1,
      f.storage.uri,
    );
    const info = actions.find((a) => 'commitInfo' in a) as { commitInfo: Record<string, unknown> };
    expect(info.commitInfo).toMatchObject({
      operation: 'WRITE',
      isBlindAppend: true,
      operationMetrics: { numFiles: '1', numOutputRows: '1' },
    });
    expect(info.commitInfo['operationParameters']).toEqual({ mode: 'Append', partitionBy: '[]' });
    expect(actions).toContainEqual(txn);
  });

  it('commits nothing for an empty batch on an existing table', async () => {
    await makeBatch(session, 'e', `SELECT 1 AS seq, 'x' AS kind`);
    await append({ batch: 'e' });
    await makeBatch(session, 'empty', `SELECT 1 AS seq, 'x' AS kind WHERE false`);
    expect(await append({ batch: 'empty' })).toMatchObject({
      version: null,
      inserted: 0,
      filesAdded: 0,
    });
  });

  it('refuses batch columns the table lacks', async () => {
    await makeBatch(session, 'e', `SELECT 1 AS seq, 'x' AS kind`);
    await append({ batch: 'e' });
    await makeBatch(session, 'e2', `SELECT 1 AS seq, 'x' AS kind, 'extra' AS colour`);
    await expect(append({ batch: 'e2' })).rejects.toThrow(SchemaError);
  });
});
