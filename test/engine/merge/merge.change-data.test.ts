/**
 * Change data feed (PROTOCOL.md "Change Data Files"): on a table with delta.enableChangeDataFeed,
 * a MERGE that updates or deletes writes change files holding exactly the rows it changed (insert,
 * update_preimage + update_postimage, delete), partitioned like the data, listed by `cdc` actions
 * of the same commit; an insert-only MERGE writes none. Checked row by row against the changes,
 * when files are rewritten and when changed rows go to deletion vectors.
 */
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AddFile, RemoveFile } from '../../../src/delta/actions.js';
import { TableConfig } from '../../../src/delta/table-config.js';
import { DuckSession } from '../../../src/engine/duckdb.js';
import { LocalStorage } from '../../../src/storage/local.js';
import { DeltaLogError, UnsupportedFeatureError } from '../../../src/errors.js';
import { optimizeTable } from '../../../src/maintenance/optimize.js';
import { scratchSpool } from '../../../scripts/lib/tables.js';
import { cdcActions, changeRows, commitActions } from '../../helpers/change-data.js';
import { copySharedTable } from '../../helpers/shared-tables.js';
import {
  fixtureOn,
  localFixture,
  makeBatch,
  merge,
  readRows,
  snapshotOf,
  type Fixture,
} from './helpers.js';

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

const CDF = { 'delta.enableChangeDataFeed': 'true' };
const KEY = { keyColumns: ['id'], orderBy: 'v' };
/** Every touched file gets a DV, however small (test tables are tiny). */
const DV = { ...KEY, rewriteBelowBytes: 0, rewriteDeletedShare: 1 };
const REWRITE = { ...KEY, deletionVectors: 'off' as const };
const ORDER = `id, CASE _change_type WHEN 'delete' THEN 0 WHEN 'update_preimage' THEN 1 WHEN 'update_postimage' THEN 2 ELSE 3 END`;

/** ids 0..n-1, name-<id>, region a|b by parity, v = 1. */
async function seed(n: number, opts: Record<string, unknown> = {}): Promise<void> {
  await makeBatch(
    session,
    'seed',
    `SELECT range AS id, 'name-' || range AS name, CASE WHEN range % 2 = 0 THEN 'a' ELSE 'b' END AS region, 1 AS v FROM range(${n})`,
  );
  await merge(f, { batch: 'seed', ...KEY, tableProperties: CDF, ...opts });
}

/**
 * The batch of the mixed MERGE: update 3, delete 4 (gone), insert 100, 5 unchanged (a reload),
 * 6 stale (older v), 8 a delete of a key never stored.
 */
async function mixedBatch(): Promise<string> {
  return makeBatch(
    session,
    'b',
    `SELECT * FROM (VALUES (3, 'three', 'b', 2, false), (4, 'name-4', 'a', 2, true), (100, 'new', 'a', 1, false), ` +
      `(5, 'name-5', 'b', 1, false), (6, 'old', 'a', 0, false), (1000, NULL, 'a', 1, true)) t(id, name, region, v, gone)`,
  );
}

const MIXED_CHANGES = [
  { id: 3, name: 'name-3', region: 'b', v: 1, _change_type: 'update_preimage' },
  { id: 3, name: 'three', region: 'b', v: 2, _change_type: 'update_postimage' },
  { id: 4, name: 'name-4', region: 'a', v: 1, _change_type: 'delete' },
  { id: 100, name: 'new', region: 'a', v: 1, _change_type: 'insert' },
];

/** Change rows with v as a number (DuckDB's JSON gives BIGINT-like columns as numbers or strings). */
function normalized(rows: Record<string, unknown>[]): Record<string, unknown>[] {
  return rows.map((r) => ({ ...r, id: Number(r['id']), v: Number(r['v']) }));
}

describe('a table tidemark creates with delta.enableChangeDataFeed', () => {
  it('gets the changeDataFeed writer feature: writer 4 alone, listed at writer 7 beside deletion vectors', async () => {
    await seed(4, { deletionVectors: 'off' });
    const plain = await snapshotOf(f);
    expect(plain.protocol).toEqual({ minReaderVersion: 1, minWriterVersion: 4 });
    expect(plain.metadata.configuration['delta.enableChangeDataFeed']).toBe('true');
    await f.close();
    f = await localFixture(session);
    await seed(4);
    const withDvs = await snapshotOf(f);
    expect(withDvs.protocol).toMatchObject({ minReaderVersion: 3, minWriterVersion: 7 });
    expect(withDvs.protocol.writerFeatures).toEqual(
      expect.arrayContaining(['deletionVectors', 'changeDataFeed']),
    );
  });

  it('the creating MERGE and insert-only MERGEs write no change files (readers take the adds as inserts)', async () => {
    await seed(4);
    expect(cdcActions(await commitActions(f.storage, 0))).toEqual([]);
    await makeBatch(session, 'b', `SELECT 50 AS id, 'x' AS name, 'a' AS region, 1 AS v`);
    const r = await merge(f, { batch: 'b', ...KEY });
    expect(r).toMatchObject({ inserted: 1, changeFilesAdded: 0 });
    expect(cdcActions(await commitActions(f.storage, r.version!))).toEqual([]);
  });
});

describe('MERGE into an unpartitioned table that records changes', () => {
  for (const [mode, opts] of [
    ['rewriting the file', REWRITE],
    ['marking deletion vectors', DV],
  ] as const) {
    it(`writes exactly the changed rows to _change_data, ${mode}`, async () => {
      await seed(10, mode === 'rewriting the file' ? { deletionVectors: 'off' } : {});
      const r = await merge(f, {
        batch: await mixedBatch(),
        ...opts,
        deleteWhen: 'gone',
        internalColumns: ['gone'],
      });
      expect(r).toMatchObject({
        inserted: 1,
        updated: 1,
        deleted: 1,
        unchanged: 1,
        skippedStale: 1,
        changeFilesAdded: 1,
      });
      expect(r.filesWithNewDv).toBe(mode === 'rewriting the file' ? 0 : 1);
      expect(normalized(await changeRows(session, f.storage, r.version!, ORDER))).toEqual(
        MIXED_CHANGES,
      );

      const actions = await commitActions(f.storage, r.version!);
      const [cdc] = cdcActions(actions);
      expect(cdc).toMatchObject({ partitionValues: {}, dataChange: false });
      expect(cdc!.path).toMatch(/^_change_data\/cdc-[0-9]{5}-[0-9a-f-]{36}-c000\.zstd\.parquet$/);
      const info = actions.find((a) => 'commitInfo' in a);
      expect(
        info && 'commitInfo' in info ? info.commitInfo['operationMetrics'] : null,
      ).toMatchObject({
        numTargetChangeFilesAdded: '1',
        numTargetRowsInserted: '1',
        numTargetRowsUpdated: '1',
        numTargetRowsDeleted: '1',
      });
      // The table itself is right, and the change file is no data file of it.
      const rows = await readRows(f, 'id');
      expect(rows.map((x) => Number(x['id']))).toEqual([0, 1, 2, 3, 5, 6, 7, 8, 9, 100]);
      expect((await snapshotOf(f)).files.some((x) => x.path.startsWith('_change_data'))).toBe(
        false,
      );
    });
  }

  it('with deletion vectors, a delete that empties a file still records its rows', async () => {
    await seed(2);
    await makeBatch(
      session,
      'b',
      `SELECT * FROM (VALUES (0, 'name-0', 'a', 2, true), (1, 'name-1', 'b', 2, true)) t(id, name, region, v, gone)`,
    );
    const r = await merge(f, { batch: 'b', ...DV, deleteWhen: 'gone', internalColumns: ['gone'] });
    expect(r).toMatchObject({ deleted: 2, filesRemoved: 1 });
    expect(normalized(await changeRows(session, f.storage, r.version!, ORDER))).toEqual([
      { id: 0, name: 'name-0', region: 'a', v: 1, _change_type: 'delete' },
      { id: 1, name: 'name-1', region: 'b', v: 1, _change_type: 'delete' },
    ]);
  });

  it('records a column the MERGE adds: NULL in the preimage, the new value in the postimage', async () => {
    await seed(3, { deletionVectors: 'off' });
    await makeBatch(
      session,
      'b',
      `SELECT 1 AS id, 'one' AS name, 'b' AS region, 2 AS v, 'red' AS colour`,
    );
    const r = await merge(f, { batch: 'b', ...REWRITE, schemaEvolution: 'addColumns' });
    expect(normalized(await changeRows(session, f.storage, r.version!, ORDER))).toEqual([
      { id: 1, name: 'name-1', region: 'b', v: 1, colour: null, _change_type: 'update_preimage' },
      { id: 1, name: 'one', region: 'b', v: 2, colour: 'red', _change_type: 'update_postimage' },
    ]);
  });

  it('refuses to add a column named _change_type, which change-feed readers reserve', async () => {
    await seed(3, { deletionVectors: 'off' });
    await makeBatch(
      session,
      'b',
      `SELECT 1 AS id, 'one' AS name, 'b' AS region, 2 AS v, 'x' AS _change_type`,
    );
    const err = await merge(f, { batch: 'b', ...REWRITE, schemaEvolution: 'addColumns' }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(UnsupportedFeatureError);
    expect((err as UnsupportedFeatureError).feature).toBe('changeDataFeed');
    expect((err as Error).message).toContain(
      'column _change_type has a name change-feed readers reserve',
    );
  });
});

describe('MERGE into a partitioned table that records changes', () => {
  for (const [mode, opts] of [
    ['rewriting files', REWRITE],
    ['marking deletion vectors', DV],
  ] as const) {
    it(`writes one change file per partition under _change_data/region=…/, ${mode}`, async () => {
      await seed(10, {
        partitionBy: ['region'],
        ...(mode === 'rewriting files' ? { deletionVectors: 'off' } : {}),
      });
      const r = await merge(f, {
        batch: await mixedBatch(),
        ...opts,
        deleteWhen: 'gone',
        internalColumns: ['gone'],
      });
      expect(r).toMatchObject({ inserted: 1, updated: 1, deleted: 1, changeFilesAdded: 2 });
      expect(r.filesWithNewDv).toBe(mode === 'rewriting files' ? 0 : 2);
      const cdc = cdcActions(await commitActions(f.storage, r.version!));
      expect(
        cdc
          .map((c) => c.partitionValues)
          .sort((a, b) => String(a['region']).localeCompare(String(b['region']))),
      ).toEqual([{ region: 'a' }, { region: 'b' }]);
      for (const c of cdc)
        expect(c.path.startsWith(`_change_data/region=${c.partitionValues['region']}/cdc-`)).toBe(
          true,
        );
      // Partition columns are not stored in the files; readers take them from partitionValues.
      const folder = join(f.dir, '_change_data', 'region=a');
      expect((await readdir(folder)).length).toBe(1);
      const rows = normalized(await changeRows(session, f.storage, r.version!, ORDER));
      expect(
        rows.map(({ id, name, region, v, _change_type }) => ({
          id,
          name,
          region,
          v,
          _change_type,
        })),
      ).toEqual(MIXED_CHANGES);
    });
  }
});

describe('a Spark table with deletion vectors (README 14) given a change data feed', () => {
  it('records the changes against its live rows only (rows its DVs delete are neither preimages nor matches)', async () => {
    await f.close();
    const dir = await copySharedTable('deletion-vectors');
    f = fixtureOn(session, new LocalStorage(dir), {
      dir,
      cleanup: () => rm(dir, { recursive: true, force: true }),
    });
    const before = await snapshotOf(f);
    const configuration = { ...before.metadata.configuration, ...CDF };
    await f.table.commit({
      actions: [
        {
          protocol: TableConfig.of(before.protocol, before.metadata).withFeature('changeDataFeed', {
            reader: false,
          }),
        },
        { metaData: { ...before.metadata, configuration } },
      ],
      operation: 'SET TBLPROPERTIES',
      read: { readVersion: before.version, partitions: 'all', files: [], appIds: [] },
      isBlindAppend: false,
    });
    // Stored rows have no rev (NULL, the oldest): 1 is updated, 2 deleted; 7 (deleted by Spark's DV) and 100 are inserted.
    await makeBatch(
      session,
      'b',
      `SELECT * FROM (VALUES (1, 1, false), (2, 1, true), (7, 1, false), (100, 1, false)) t(id, rev, gone)`,
    );
    const r = await merge(f, {
      ...DV,
      batch: 'b',
      orderBy: 'rev',
      deleteWhen: 'gone',
      internalColumns: ['gone'],
      schemaEvolution: 'addColumns',
    });
    expect(r).toMatchObject({
      updated: 1,
      deleted: 1,
      inserted: 2,
      filesWithNewDv: 1,
      changeFilesAdded: 1,
    });
    const rows = await changeRows(session, f.storage, r.version!, ORDER);
    expect(
      rows.map((x) => ({
        ...x,
        id: Number(x['id']),
        rev: x['rev'] === null ? null : Number(x['rev']),
      })),
    ).toEqual([
      { id: 1, rev: null, _change_type: 'update_preimage' },
      { id: 1, rev: 1, _change_type: 'update_postimage' },
      { id: 2, rev: null, _change_type: 'delete' },
      { id: 7, rev: 1, _change_type: 'insert' },
      { id: 100, rev: 1, _change_type: 'insert' },
    ]);
    const ids = (await readRows(f, 'id')).map((x) => Number(x['id']));
    expect(ids).toHaveLength(47 - 1 + 2);
  });
});

describe('OPTIMIZE on a table that records changes', () => {
  it('compacts with dataChange=false removes and adds, and writes no change files', async () => {
    await seed(4, { deletionVectors: 'off' });
    for (const id of [10, 11]) {
      await makeBatch(session, 'b', `SELECT ${id} AS id, 'x' AS name, 'a' AS region, 1 AS v`);
      await merge(f, { batch: 'b', ...KEY });
    }
    const before = await readRows(f, 'id');
    const result = await optimizeTable(f.table, session, { spool: scratchSpool() });
    expect(result.version).not.toBeNull();
    const actions = await commitActions(f.storage, result.version!);
    expect(cdcActions(actions)).toEqual([]);
    expect(actions.every((a) => !('remove' in a) || a.remove.dataChange === false)).toBe(true);
    expect(await readRows(f, 'id')).toEqual(before);
  });
});

describe('the commit check', () => {
  it('refuses a commit that removes rows from a table recording changes without change files', async () => {
    await seed(3, { deletionVectors: 'off' });
    const snapshot = await snapshotOf(f);
    const live = snapshot.files[0]!;
    const remove: RemoveFile = { path: live.path, dataChange: true, deletionTimestamp: Date.now() };
    const add: AddFile = {
      path: 'x.parquet',
      partitionValues: {},
      size: 1,
      modificationTime: 0,
      dataChange: true,
    };
    const request = {
      operation: 'DELETE',
      actions: [{ remove }, { add }],
      read: { readVersion: snapshot.version, partitions: 'all' as const, files: [], appIds: [] },
      isBlindAppend: false,
    };
    await expect(f.table.commit(request)).rejects.toThrow(DeltaLogError);
    await expect(f.table.commit(request)).rejects.toThrow(/change data files/);
    expect((await snapshotOf(f)).version).toBe(snapshot.version);
  });
});
