/**
 * MERGE into Spark/Databricks tables that use the writer features of a current writer: row
 * tracking with clustering (table 16 with the standard `clustering` name), V2 checkpoints with
 * sidecars (table 15), and append-only (table 15 with `delta.appendOnly`). Every change is read
 * back row by row, and row ids with an independent reader of the protocol's rules.
 */
import { readdir, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serializeCommit, type AddFile, type RemoveFile } from '../../../src/delta/actions.js';
import { writeCheckpoint } from '../../../src/delta/checkpoint.js';
import { readCheckpoint } from '../../../src/delta/checkpoint-read.js';
import { commitKey, LAST_CHECKPOINT_KEY } from '../../../src/delta/log-files.js';
import { listLog } from '../../../src/delta/log-listing.js';
import { loadSnapshot } from '../../../src/delta/replay.js';
import { DuckSession } from '../../../src/engine/duckdb.js';
import { ident, str } from '../../../src/engine/sql.js';
import { AppendOnlyTableError } from '../../../src/errors.js';
import { optimizeTable } from '../../../src/maintenance/optimize.js';
import { LocalStorage } from '../../../src/storage/local.js';
import { clusteredRowTrackingTable, withProperties } from '../../helpers/derived-tables.js';
import {
  checkRowIdInvariants,
  commitActions,
  highWaterMark,
  trackedRows,
} from '../../helpers/row-tracking.js';
import { copySharedTable, sharedTable } from '../../helpers/shared-tables.js';
import { appendAndCommit, checkpointIO, scratchSpool } from '../../../scripts/lib/tables.js';
import { fixtureOn, makeBatch, merge, readRows, snapshotOf, type Fixture } from './helpers.js';

let session: DuckSession;
beforeAll(async () => {
  session = await DuckSession.open({ threads: 2 });
});
afterAll(() => session.close());

function fixtureAt(dir: string): Fixture {
  return fixtureOn(session, new LocalStorage(dir), {
    dir,
    cleanup: () => rm(dir, { recursive: true, force: true }),
  });
}

const ROW_ID_COLUMN = '_row-id-col-4cbc7924-f662-4db1-aa59-22c23f59eb5d';
const VERSION_COLUMN = '_row-commit-version-col-2f60dcc1-9e36-4424-95e7-799b707e4ddb';

describe('table 16 with clustering (derived): row tracking and clustering as Databricks set them', () => {
  it('MERGE updates, deletes, inserts and adds a column; ids and versions follow the protocol; the clustering domain is untouched', async () => {
    const f = fixtureAt(await clusteredRowTrackingTable());
    try {
      const clusteringBefore = (await snapshotOf(f)).domains.get('delta.clustering');
      await makeBatch(
        session,
        'b',
        `SELECT * FROM (VALUES (11::BIGINT, 'eleven', false), (5::BIGINT, 'five', false), (7::BIGINT, NULL, true), (10::BIGINT, 'ten', false)) t(id, note, gone)`,
      );
      const r = await merge(f, {
        batch: 'b',
        keyColumns: ['id'],
        orderBy: 'id',
        deleteWhen: 'gone',
        internalColumns: ['gone'],
        schemaEvolution: 'addColumns',
      });
      expect(r).toMatchObject({ version: 1, updated: 1, deleted: 1, inserted: 2 });
      const rows = await readRows(f, 'id');
      expect(rows.map((x) => [Number(x['id']), x['note']])).toEqual([
        [0, null],
        [1, null],
        [2, null],
        [3, null],
        [4, null],
        [5, 'five'],
        [6, null],
        [8, null],
        [9, null],
        [10, 'ten'],
        [11, 'eleven'],
      ]);
      const s = await snapshotOf(f);
      const tracked = await trackedRows(session, f.storage, s, 'id');
      checkRowIdInvariants(s, tracked);
      // Rows 0..9 keep their ids; 5 was updated: same id, this version. 10 and 11 get fresh ids after the rewrite of 5.
      expect(tracked.map((t) => [Number(t.value), t.rowId, t.version])).toEqual([
        [0, 0, 0],
        [1, 1, 0],
        [2, 2, 0],
        [3, 3, 0],
        [4, 4, 0],
        [5, 5, 1],
        [6, 6, 0],
        [8, 8, 0],
        [9, 9, 0],
        [10, 11, 1],
        [11, 12, 1],
      ]);
      expect(highWaterMark(s)).toBe(12);
      const actions = await commitActions(f.storage, 1);
      const removes = actions.flatMap((a) => ('remove' in a ? [a.remove as RemoveFile] : []));
      // One-row files lose their only row: removed, no deletion vector, with their row-tracking fields.
      expect(
        removes
          .map((x) => [x.baseRowId, x.defaultRowCommitVersion, x.deletionVector ?? null])
          .sort(),
      ).toEqual([
        [5, 0, null],
        [7, 0, null],
      ]);
      const adds = actions.flatMap((a) => ('add' in a ? [a.add as AddFile] : []));
      expect(
        adds.every(
          (a) =>
            a.clusteringProvider === undefined && JSON.parse(a.stats!).minValues.id !== undefined,
        ),
      ).toBe(true);
      // The file holding the new version of 5 materializes its old id and leaves its version NULL (this commit's).
      const fileOf5 = tracked.find((t) => Number(t.value) === 5)!.file;
      expect(
        await session.allJson(
          `SELECT id, ${ident(ROW_ID_COLUMN)} AS rid, ${ident(VERSION_COLUMN)} AS ver FROM read_parquet(${str(join(f.dir, fileOf5))})`,
        ),
      ).toEqual([{ id: '5', rid: '5', ver: null }]);
      expect(s.domains.get('delta.clustering')).toEqual(clusteringBefore);
      expect(actions[0]).toMatchObject({
        commitInfo: { tags: { 'delta.rowTracking.preserved': 'true' } },
      });
    } finally {
      await f.close();
    }
  });

  it('an append is written sorted by the clustering column and gets fresh ids above the mark', async () => {
    const f = fixtureAt(await clusteredRowTrackingTable());
    try {
      await makeBatch(
        session,
        'b',
        `SELECT * FROM (VALUES (14::BIGINT), (12::BIGINT), (13::BIGINT)) t(id)`,
      );
      const r = await appendAndCommit(f.table, session, { batch: 'b' });
      expect(r).toMatchObject({ version: 1, inserted: 3 });
      const s = await snapshotOf(f);
      const added = s.files.find((x) => x.defaultRowCommitVersion === 1)!;
      expect(added.baseRowId).toBe(10);
      expect(highWaterMark(s)).toBe(12);
      const inFile = await session.allJson(
        `SELECT id FROM read_parquet(${str(join(f.dir, added.path))})`,
      );
      expect(inFile.map((x) => Number(x['id']))).toEqual([12, 13, 14]);
      expect((await readRows(f, 'id')).map((x) => Number(x['id']))).toEqual([
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 14,
      ]);
      // Through tidemark's checkpoint, both domains and every file's row-tracking fields come back unchanged.
      await writeCheckpoint(f.storage, checkpointIO(session), s);
      await unlink(join(f.dir, commitKey(0)));
      const viaCheckpoint = await snapshotOf(f);
      expect([...viaCheckpoint.domains.values()]).toEqual([...s.domains.values()]);
      expect(
        viaCheckpoint.files.map((x) => [x.path, x.baseRowId, x.defaultRowCommitVersion]),
      ).toEqual(s.files.map((x) => [x.path, x.baseRowId, x.defaultRowCommitVersion]));
    } finally {
      await f.close();
    }
  });
});

describe('statistics of the files tidemark writes follow the table', () => {
  it('delta.dataSkippingNumIndexedCols is honoured, and a clustering column gets stats even past it (the protocol requires them)', async () => {
    const dir = await clusteredRowTrackingTable();
    const f = fixtureAt(dir);
    try {
      const before = await snapshotOf(f);
      // ALTER TABLE … SET TBLPROPERTIES ('delta.dataSkippingNumIndexedCols' = '0')
      const metaData = {
        ...before.metadata,
        configuration: {
          ...before.metadata.configuration,
          'delta.dataSkippingNumIndexedCols': '0',
        },
      };
      await writeFile(
        join(dir, commitKey(1)),
        serializeCommit([
          { commitInfo: { timestamp: Date.now(), operation: 'SET TBLPROPERTIES' } },
          { metaData },
        ]),
      );
      await makeBatch(
        session,
        'b',
        `SELECT * FROM (VALUES (3::BIGINT, 'three'), (20::BIGINT, 'twenty')) t(id, v)`,
      );
      expect(
        await merge(f, {
          batch: 'b',
          keyColumns: ['id'],
          orderBy: 'id',
          schemaEvolution: 'addColumns',
        }),
      ).toMatchObject({ version: 2, updated: 1, inserted: 1 });
      const adds = (await commitActions(f.storage, 2)).flatMap((a) =>
        'add' in a && !a.add.deletionVector ? [a.add] : [],
      );
      expect(adds.length).toBeGreaterThan(0);
      for (const add of adds) {
        const stats = JSON.parse(add.stats!) as {
          minValues: Record<string, unknown>;
          nullCount: Record<string, unknown>;
        };
        expect(Object.keys(stats.minValues)).toEqual(['id']);
        expect(Object.keys(stats.nullCount)).toEqual(['id']);
      }
    } finally {
      await f.close();
    }
  });
});

describe('table 15: V2 checkpoints with sidecars', () => {
  it('two MERGEs (update, delete, insert, a new column) read back exactly; the checkpoint they trigger is a V2 one that reads back alone', async () => {
    const f = fixtureAt(await copySharedTable('v2-checkpoint-sidecars'));
    try {
      await makeBatch(
        session,
        'b1',
        `SELECT * FROM (VALUES (3::BIGINT, 'three', false), (5::BIGINT, NULL, true), (10::BIGINT, 'ten', false)) t(id, v, gone)`,
      );
      const r1 = await merge(f, {
        batch: 'b1',
        keyColumns: ['id'],
        orderBy: 'id',
        deleteWhen: 'gone',
        internalColumns: ['gone'],
        schemaEvolution: 'addColumns',
      });
      expect(r1).toMatchObject({ version: 3, updated: 1, deleted: 1, inserted: 1 });
      await makeBatch(
        session,
        'b2',
        `SELECT * FROM (VALUES (4::BIGINT, 'four', false), (0::BIGINT, NULL, true), (11::BIGINT, 'eleven', false)) t(id, v, gone)`,
      );
      const r2 = await merge(f, {
        batch: 'b2',
        keyColumns: ['id'],
        orderBy: 'id',
        deleteWhen: 'gone',
        internalColumns: ['gone'],
      });
      expect(r2).toMatchObject({ version: 4, updated: 1, deleted: 1, inserted: 1 });
      const expected = [
        [1, null],
        [2, null],
        [3, 'three'],
        [4, 'four'],
        [6, null],
        [7, null],
        [8, null],
        [9, null],
        [10, 'ten'],
        [11, 'eleven'],
      ];
      expect((await readRows(f, 'id')).map((x) => [Number(x['id']), x['v']])).toEqual(expected);

      // delta.checkpointInterval is 2: version 4 got a UUID-named V2 checkpoint, never a classic one.
      const listing = await listLog(f.storage);
      expect(listing.checkpoints.map((c) => [c.version, c.kind])).toEqual([
        [2, 'v2'],
        [4, 'v2'],
      ]);
      const ours = listing.checkpoints[1]!;
      const files = (await snapshotOf(f)).files.length;
      expect(ours.keys[0]).toMatch(
        /^_delta_log\/00000000000000000004\.checkpoint\.[0-9a-f-]{36}\.json$/,
      );
      const top = (await readFile(join(f.dir, ours.keys[0]!), 'utf8'))
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(top[0]).toEqual({
        checkpointMetadata: { version: 4, tags: { numOfAddFiles: String(files) } },
      });
      const sidecars = top
        .filter((a) => 'sidecar' in a)
        .map((a) => (a['sidecar'] as { path: string }).path);
      expect(sidecars).toHaveLength(1);
      expect(sidecars[0]).toMatch(/^[0-9a-f-]{36}\.parquet$/);
      expect(top.some((a) => 'add' in a || 'remove' in a)).toBe(false); // all file actions sit in the sidecar
      const sidecarColumns = await session.allJson(
        `SELECT name FROM parquet_schema(${str(join(f.dir, '_delta_log/_sidecars', sidecars[0]!))}) WHERE name IN ('add', 'remove', 'metaData', 'txn')`,
      );
      expect(sidecarColumns.map((c) => c['name']).sort()).toEqual(['add', 'remove']);
      const all = await readCheckpoint(f.storage, checkpointIO(session), ours);
      expect(all.filter((a) => 'add' in a)).toHaveLength(files);
      // _last_checkpoint is replaced whole: no stale Spark `v2Checkpoint` of version 2 next to version 4.
      const last = JSON.parse(await readFile(join(f.dir, LAST_CHECKPOINT_KEY), 'utf8')) as Record<
        string,
        unknown
      >;
      expect(last).toMatchObject({ version: 4, size: all.length + 2, numOfAddFiles: files });
      expect(last).not.toHaveProperty('v2Checkpoint');

      // Time travel to version 2 still starts from Spark's checkpoint and its sidecars.
      const v2 = (await loadSnapshot(f.storage, checkpointIO(session), { version: 2 }))!;
      expect(v2.files).toHaveLength(4);

      // With the commits before it cleaned up, the table reads from the new checkpoint alone.
      for (const v of [0, 1, 2, 3]) await unlink(join(f.dir, commitKey(v)));
      expect((await readRows(f, 'id')).map((x) => [Number(x['id']), x['v']])).toEqual(expected);
    } finally {
      await f.close();
    }
  });

  it('append-only (table 15 with delta.appendOnly = true): inserts pass, an updating MERGE is refused before writing, OPTIMIZE is allowed', async () => {
    const metadata = (await loadSnapshot(
      new LocalStorage(sharedTable('v2-checkpoint-sidecars')),
      checkpointIO(session),
    ))!.metadata;
    const f = fixtureAt(
      await withProperties('v2-checkpoint-sidecars', {
        version: 3,
        metadata,
        properties: { 'delta.appendOnly': 'true' },
      }),
    );
    try {
      await makeBatch(session, 'ins', `SELECT * FROM (VALUES (12::BIGINT), (3::BIGINT)) t(id)`);
      // 12 is new; 3 equals its stored row (unchanged, nothing rewritten).
      expect(await merge(f, { batch: 'ins', keyColumns: ['id'], orderBy: 'id' })).toMatchObject({
        version: 4,
        inserted: 1,
        unchanged: 1,
        updated: 0,
      });
      const before = await readdir(f.dir, { recursive: true });
      await makeBatch(session, 'upd', `SELECT * FROM (VALUES (4::BIGINT, true)) t(id, gone)`);
      const err = await merge(f, {
        batch: 'upd',
        keyColumns: ['id'],
        orderBy: 'id',
        deleteWhen: 'gone',
        internalColumns: ['gone'],
      }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AppendOnlyTableError);
      expect((err as Error).message).toContain(
        `table ${f.storage.uri} is append-only (delta.appendOnly = true): this MERGE would update 0 and delete 1 stored rows`,
      );
      expect(err).toMatchObject({ context: { uri: f.storage.uri, setting: 'delta.appendOnly' } });
      expect(await readdir(f.dir, { recursive: true })).toEqual(before);
      const optimized = await optimizeTable(f.table, session, { spool: scratchSpool() });
      expect(optimized).toMatchObject({ version: 5, filesAdded: 1 });
      expect((await readRows(f, 'id')).map((x) => Number(x['id']))).toEqual([
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12,
      ]);
    } finally {
      await f.close();
    }
  });
});
