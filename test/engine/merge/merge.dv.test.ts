/**
 * MERGE with deletion vectors on tables tidemark creates: changed rows are marked in a DV and their
 * new versions written to new files, instead of rewriting the file; the commit shape is Spark's
 * (remove with the old DV, add with the new one, one packed `.bin` per commit, loose stats); the
 * write mode follows the setting and the per-file thresholds; and the table always reads exactly.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  parseCommit,
  type Action,
  type AddFile,
  type RemoveFile,
} from '../../../src/delta/actions.js';
import { resolveDeletionVector } from '../../../src/delta/deletion-vectors/index.js';
import { commitKey } from '../../../src/delta/log-files.js';
import { DuckSession } from '../../../src/engine/duckdb.js';
import { CommitConflictError } from '../../../src/errors.js';
import { localFixture, makeBatch, merge, readRows, snapshotOf, type Fixture } from './helpers.js';
import { appendAndCommit, mergeAndCommit, openTable } from '../../../scripts/lib/tables.js';

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
/** Every touched file gets a DV, however small (test tables are tiny). */
const DV = { ...KEY, rewriteBelowBytes: 0, rewriteDeletedShare: 1 };

async function actionsOf(version: number): Promise<Action[]> {
  const bytes = await f.storage.read(commitKey(version));
  return parseCommit(Buffer.from(bytes!).toString('utf8'), version, f.storage.uri);
}
const adds = (a: Action[]): AddFile[] => a.flatMap((x) => ('add' in x ? [x.add] : []));
const removes = (a: Action[]): RemoveFile[] => a.flatMap((x) => ('remove' in x ? [x.remove] : []));

/** 1000 rows in two files of 500 (ids 0..999, v = 1). */
async function seed(opts: Record<string, unknown> = {}): Promise<void> {
  await makeBatch(
    session,
    'seed',
    `SELECT range AS id, 'name-' || range AS name, 1 AS v FROM range(1000)`,
  );
  await merge(f, { batch: 'seed', ...KEY, targetFileRows: 500, ...opts });
}

describe('a table tidemark creates', () => {
  it('takes deletion vectors: reader 3 / writer 7 with the feature, and delta.enableDeletionVectors=true', async () => {
    await seed();
    const s = await snapshotOf(f);
    expect(s.protocol).toMatchObject({ minReaderVersion: 3, minWriterVersion: 7 });
    expect(s.protocol.readerFeatures).toContain('deletionVectors');
    expect(s.protocol.writerFeatures).toContain('deletionVectors');
    expect(s.metadata.configuration['delta.enableDeletionVectors']).toBe('true');
  });

  it("with deletionVectors 'off' it does not, and MERGEs rewrite files", async () => {
    await seed({ deletionVectors: 'off' });
    const s = await snapshotOf(f);
    expect(s.protocol.readerFeatures ?? []).not.toContain('deletionVectors');
    await makeBatch(session, 'b', `SELECT 3 AS id, 'x' AS name, 2 AS v`);
    expect(await merge(f, { batch: 'b', ...DV })).toMatchObject({
      updated: 1,
      filesWithNewDv: 0,
      filesRemoved: 1,
    });
  });
});

describe('MERGE writing deletion vectors', () => {
  it('marks updated and deleted rows in a DV, writes their new versions to a new file, and reads back exactly', async () => {
    await seed();
    const before = await snapshotOf(f);
    await makeBatch(
      session,
      'b',
      `SELECT * FROM (VALUES (3, 'three', 2, false), (7, NULL, 2, true), (1001, 'new', 1, false)) t(id, name, v, gone)`,
    );
    const r = await merge(f, { batch: 'b', ...DV, deleteWhen: 'gone', internalColumns: ['gone'] });
    expect(r).toMatchObject({
      updated: 1,
      deleted: 1,
      inserted: 1,
      filesWithNewDv: 1,
      bytesRewritten: 0,
      rowsCopied: 0,
    });
    const actions = await actionsOf(r.version!);
    const [remove] = removes(actions);
    const withDv = adds(actions).find((a) => a.deletionVector);
    expect(remove!.path).toBe(withDv!.path);
    expect(remove!.deletionVector ?? null).toBeNull();
    expect(withDv!.deletionVector).toMatchObject({ storageType: 'u', offset: 1, cardinality: 2 });
    expect(withDv!.deletionVector).not.toHaveProperty('maxRowIndex');
    // The stats keep the file's bounds and row count but say they may be wider than its live rows.
    expect(JSON.parse(withDv!.stats!)).toMatchObject({ numRecords: 500, tightBounds: false });
    const original = before.files.find((x) => x.path === withDv!.path)!;
    expect(JSON.parse(withDv!.stats!).minValues).toEqual(JSON.parse(original.stats!).minValues);
    // One packed .bin beside the data files, at the table root.
    const bin = resolveDeletionVector(withDv!.deletionVector!, f.storage.uri);
    expect(bin.kind === 'file' && /^deletion_vector_[0-9a-f-]{36}\.bin$/.test(bin.key)).toBe(true);
    const rows = await readRows(f, 'id');
    expect(rows).toHaveLength(1000);
    expect(rows.find((x) => Number(x['id']) === 3)).toMatchObject({ name: 'three', v: 2 });
    expect(rows.find((x) => Number(x['id']) === 7)).toBeUndefined();
    expect(rows.find((x) => Number(x['id']) === 1001)).toMatchObject({ name: 'new' });
  });

  it('a second MERGE on the same file extends its DV (old deletes kept) and removes the file with its old DV', async () => {
    await seed();
    await makeBatch(
      session,
      'b1',
      `SELECT * FROM (VALUES (3, 'a', 2), (4, 'b', 2)) t(id, name, v)`,
    );
    await merge(f, { batch: 'b1', ...DV });
    const first = (await snapshotOf(f)).files.find((x) => x.deletionVector)!;
    await makeBatch(
      session,
      'b2',
      `SELECT * FROM (VALUES (3, 'c', 3), (5, 'd', 2)) t(id, name, v)`,
    );
    const r = await merge(f, { batch: 'b2', ...DV });
    expect(r).toMatchObject({ updated: 2, filesWithNewDv: 2 }); // the seed file (5) and the file written by b1 (3)
    const actions = await actionsOf(r.version!);
    const removedSeed = removes(actions).find((x) => x.path === first.path)!;
    expect(removedSeed.deletionVector).toEqual(first.deletionVector);
    const readded = adds(actions).find((x) => x.path === first.path)!;
    expect(readded.deletionVector!.cardinality).toBe(3);
    const rows = await readRows(f, 'id');
    expect(rows).toHaveLength(1000);
    expect(rows.filter((x) => [3, 4, 5].includes(Number(x['id']))).map((x) => x['name'])).toEqual([
      'c',
      'b',
      'd',
    ]);
  });

  it('a file whose every row is deleted is removed, with no DV', async () => {
    await makeBatch(session, 'seed', `SELECT range AS id, 'x' AS name, 1 AS v FROM range(4)`);
    await merge(f, { batch: 'seed', ...KEY });
    await makeBatch(
      session,
      'b',
      `SELECT range AS id, NULL AS name, 2 AS v, true AS gone FROM range(4)`,
    );
    const r = await merge(f, { batch: 'b', ...DV, deleteWhen: 'gone', internalColumns: ['gone'] });
    expect(r).toMatchObject({ deleted: 4, filesWithNewDv: 0, filesRemoved: 1, filesAdded: 0 });
    expect(adds(await actionsOf(r.version!))).toEqual([]);
    expect(await readRows(f, 'id')).toEqual([]);
  });

  it('a reload of the same rows (orderBy ties) is unchanged: no DV, no new file', async () => {
    await seed();
    await makeBatch(
      session,
      'b',
      `SELECT range AS id, 'name-' || range AS name, 1 AS v FROM range(10)`,
    );
    const r = await merge(f, { batch: 'b', ...DV });
    expect(r).toMatchObject({
      unchanged: 10,
      updated: 0,
      filesWithNewDv: 0,
      filesAdded: 0,
      version: null,
    });
  });

  it('a tie with a changed value is an update, found by reading only the tied rows', async () => {
    await seed();
    await makeBatch(
      session,
      'b',
      `SELECT * FROM (VALUES (10, 'name-10', 1), (11, 'renamed', 1)) t(id, name, v)`,
    );
    const r = await merge(f, { batch: 'b', ...DV });
    expect(r).toMatchObject({ unchanged: 1, updated: 1, filesWithNewDv: 1 });
    expect((await readRows(f, 'id')).find((x) => Number(x['id']) === 11)).toMatchObject({
      name: 'renamed',
    });
  });

  it('a stale row changes nothing, in a DV file as in any other', async () => {
    await seed();
    await makeBatch(session, 'b', `SELECT 12 AS id, 'old' AS name, 0 AS v`);
    expect(await merge(f, { batch: 'b', ...DV })).toMatchObject({
      skippedStale: 1,
      filesWithNewDv: 0,
      version: null,
    });
  });
});

describe('the write mode of each file', () => {
  it('small files are rewritten (rewriteBelowBytes), large ones get a DV', async () => {
    await seed();
    await makeBatch(session, 'b', `SELECT 3 AS id, 'x' AS name, 2 AS v`);
    expect(await merge(f, { batch: 'b', ...KEY, rewriteBelowBytes: 1024 * 1024 })).toMatchObject({
      filesWithNewDv: 0,
      filesRemoved: 1,
      rowsCopied: 499,
    });
    await makeBatch(session, 'b2', `SELECT 4 AS id, 'y' AS name, 2 AS v`);
    expect(await merge(f, { batch: 'b2', ...KEY, rewriteBelowBytes: 0 })).toMatchObject({
      filesWithNewDv: 1,
      rowsCopied: 0,
    });
  });

  it('a file that would keep little live data is rewritten (rewriteDeletedShare)', async () => {
    await seed();
    await makeBatch(session, 'b', `SELECT range AS id, 'x' AS name, 2 AS v FROM range(300)`);
    const r = await merge(f, {
      batch: 'b',
      ...KEY,
      rewriteBelowBytes: 0,
      rewriteDeletedShare: 0.5,
    });
    expect(r).toMatchObject({ updated: 300, filesWithNewDv: 0, filesRemoved: 1 });
  });

  it("'auto' follows the table: no DVs in a table without delta.enableDeletionVectors; 'on' upgrades it in the same commit", async () => {
    await seed({ deletionVectors: 'off' });
    await makeBatch(session, 'b', `SELECT 3 AS id, 'x' AS name, 2 AS v`);
    expect(await merge(f, { batch: 'b', ...DV, deletionVectors: 'auto' })).toMatchObject({
      filesWithNewDv: 0,
    });
    await makeBatch(session, 'b2', `SELECT 600 AS id, 'y' AS name, 2 AS v`);
    const r = await merge(f, { batch: 'b2', ...DV, deletionVectors: 'on' });
    expect(r.filesWithNewDv).toBe(1);
    const actions = await actionsOf(r.version!);
    const protocol = actions.find((a) => 'protocol' in a);
    const metaData = actions.find((a) => 'metaData' in a);
    expect(protocol && 'protocol' in protocol ? protocol.protocol : null).toMatchObject({
      minReaderVersion: 3,
      minWriterVersion: 7,
    });
    expect(
      metaData && 'metaData' in metaData
        ? metaData.metaData.configuration['delta.enableDeletionVectors']
        : null,
    ).toBe('true');
    expect(await readRows(f, 'id')).toHaveLength(1000);
  });
});

describe('deletion vectors and concurrent writers', () => {
  it('two MERGEs planned on the same version that give one file a DV conflict; the second re-plans and both changes stay', async () => {
    await seed();
    const planned = await snapshotOf(f);
    await makeBatch(session, 'b1', `SELECT 3 AS id, 'first' AS name, 2 AS v`);
    await merge(f, { batch: 'b1', ...DV });
    await makeBatch(session, 'b2', `SELECT 4 AS id, 'second' AS name, 2 AS v`);
    const err = await mergeAndCommit(f.table, session, {
      batch: 'b2',
      ...DV,
      snapshot: planned,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CommitConflictError);
    // The winner re-added the file with a DV (and added the row's new version): it changed what this MERGE read.
    expect((err as CommitConflictError).conflict).toMatch(/^Concurrent(Append|DeleteRead)$/);
    await merge(f, { batch: 'b2', ...DV });
    const rows = await readRows(f, 'id');
    expect(rows.filter((x) => [3, 4].includes(Number(x['id']))).map((x) => x['name'])).toEqual([
      'first',
      'second',
    ]);
  });

  it('a blind append committed meanwhile does not conflict with a MERGE that writes DVs: it commits on top, both changes stay', async () => {
    await seed();
    const planned = await snapshotOf(f);
    await makeBatch(session, 'more', `SELECT 5000 AS id, 'appended' AS name, 1 AS v`);
    const appended = await appendAndCommit(f.table, session, { batch: 'more' });
    await makeBatch(session, 'b', `SELECT 3 AS id, 'merged' AS name, 2 AS v`);
    const merged = await mergeAndCommit(f.table, session, { batch: 'b', ...DV, snapshot: planned });
    expect(merged.version).toBe(appended.version! + 1);
    expect(merged.filesWithNewDv).toBe(1);
    const rows = await readRows(f, 'id');
    expect(rows.filter((x) => [3, 5000].includes(Number(x['id']))).map((x) => x['name'])).toEqual([
      'merged',
      'appended',
    ]);
  });

  it('a checkpoint holds the DV adds and a reader of the checkpoint sees the same rows', async () => {
    await seed();
    for (let i = 0; i < 10; i++) {
      await makeBatch(session, 'b', `SELECT ${i} AS id, 'u${i}' AS name, ${i + 2} AS v`);
      await merge(f, { batch: 'b', ...DV });
    }
    expect(
      await f.storage.head('_delta_log/00000000000000000010.checkpoint.parquet'),
    ).not.toBeNull();
    const reopened = openTable(f.storage, session);
    const s = (await reopened.snapshot())!;
    expect(s.files.some((x) => x.deletionVector)).toBe(true);
    const rows = await readRows(f, 'id');
    expect(rows).toHaveLength(1000);
    expect(rows.slice(0, 10).map((x) => x['name'])).toEqual(
      Array.from({ length: 10 }, (_, i) => `u${i}`),
    );
  });
});
