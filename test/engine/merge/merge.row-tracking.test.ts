/**
 * Row tracking on a table tidemark creates with `delta.enableRowTracking`: fresh row ids assigned
 * per commit (baseRowId, defaultRowCommitVersion, the high-water mark domain), and stable ids and
 * versions preserved through a MERGE that rewrites files, a MERGE that writes deletion vectors,
 * and OPTIMIZE. Rows are read back with an independent reader of the protocol's rules
 * (test/helpers/row-tracking.ts).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AddFile, RemoveFile } from '../../../src/delta/actions.js';
import { DuckSession } from '../../../src/engine/duckdb.js';
import { ident, str } from '../../../src/engine/sql.js';
import { SchemaError } from '../../../src/errors.js';
import { optimizeTable } from '../../../src/maintenance/optimize.js';
import {
  checkRowIdInvariants,
  commitActions,
  highWaterMark,
  trackedRows,
} from '../../helpers/row-tracking.js';
import { scratchSpool } from '../../../scripts/lib/tables.js';
import { localFixture, makeBatch, merge, readRows, snapshotOf, type Fixture } from './helpers.js';

let session: DuckSession;
beforeAll(async () => {
  session = await DuckSession.open({ threads: 2 });
});
afterAll(() => session.close());

const TRACKED = { 'delta.enableRowTracking': 'true' };

/** Stable (id, version) per value of `id`, after checking the writer requirements. */
async function idsAndVersions(f: Fixture): Promise<Record<number, [number, number]>> {
  const snapshot = await snapshotOf(f);
  const rows = await trackedRows(session, f.storage, snapshot, 'id');
  checkRowIdInvariants(snapshot, rows);
  return Object.fromEntries(rows.map((r) => [Number(r.value), [r.rowId, r.version]]));
}

/** A table of ids 1..6 in three files of two rows, created with row tracking (version 0). */
async function trackedTable(): Promise<Fixture> {
  const f = await localFixture(session);
  await makeBatch(
    session,
    'b0',
    `SELECT i::INTEGER AS id, 'v' || i AS v, 1 AS rev FROM range(1, 7) t(i)`,
  );
  await merge(f, {
    batch: 'b0',
    keyColumns: ['id'],
    orderBy: 'rev',
    targetFileRows: 2,
    deletionVectors: 'off',
    tableProperties: TRACKED,
  });
  return f;
}

describe('row tracking on a table tidemark creates', () => {
  it('creation: the protocol and hidden column names, ids 0..5 over three files, version 0, high-water mark 5', async () => {
    const f = await trackedTable();
    try {
      const s = await snapshotOf(f);
      expect(s.protocol).toMatchObject({
        minWriterVersion: 7,
        writerFeatures: expect.arrayContaining(['rowTracking', 'domainMetadata']),
      });
      expect(s.metadata.configuration['delta.rowTracking.materializedRowIdColumnName']).toMatch(
        /^_row-id-col-[0-9a-f-]{36}$/,
      );
      expect(
        s.metadata.configuration['delta.rowTracking.materializedRowCommitVersionColumnName'],
      ).toMatch(/^_row-commit-version-col-[0-9a-f-]{36}$/);
      expect(s.schema.fields.map((x) => x.name)).toEqual(['id', 'v', 'rev']);
      expect(s.files.map((x) => [x.baseRowId, x.defaultRowCommitVersion]).sort()).toEqual([
        [0, 0],
        [2, 0],
        [4, 0],
      ]);
      expect(highWaterMark(s)).toBe(5);
      expect(await idsAndVersions(f)).toEqual({
        1: [0, 0],
        2: [1, 0],
        3: [2, 0],
        4: [3, 0],
        5: [4, 0],
        6: [5, 0],
      });
      const info = (await commitActions(f.storage, 0))[0]!;
      expect(info).toMatchObject({
        commitInfo: { tags: { 'delta.rowTracking.preserved': 'true' } },
      });
    } finally {
      await f.close();
    }
  });

  it('a MERGE that rewrites files (update, delete, insert, a new column): copied rows keep id and version, the updated row its id with the new version', async () => {
    const f = await trackedTable();
    try {
      await makeBatch(
        session,
        'b1',
        `SELECT * FROM (VALUES (2, 'B', 2, 'late', false), (4, 'v4', 2, NULL, true), (7, 'v7', 2, 'new', false)) t(id, v, rev, note, gone)`,
      );
      const r = await merge(f, {
        batch: 'b1',
        keyColumns: ['id'],
        orderBy: 'rev',
        deleteWhen: 'gone',
        internalColumns: ['gone'],
        schemaEvolution: 'addColumns',
        deletionVectors: 'off',
      });
      expect(r).toMatchObject({
        version: 1,
        updated: 1,
        deleted: 1,
        inserted: 1,
        filesWithNewDv: 0,
      });
      expect(await readRows(f, 'id')).toEqual([
        { id: 1, v: 'v1', rev: 1, note: null },
        { id: 2, v: 'B', rev: 2, note: 'late' },
        { id: 3, v: 'v3', rev: 1, note: null },
        { id: 5, v: 'v5', rev: 1, note: null },
        { id: 6, v: 'v6', rev: 1, note: null },
        { id: 7, v: 'v7', rev: 2, note: 'new' },
      ]);
      const s = await snapshotOf(f);
      expect(s.schema.fields.map((x) => x.name)).toEqual(['id', 'v', 'rev', 'note']); // the hidden columns stay out of the schema
      const ids = await idsAndVersions(f);
      expect(ids).toMatchObject({ 1: [0, 0], 2: [1, 1], 3: [2, 0], 5: [4, 0], 6: [5, 0] });
      // The insert gets a fresh id above the old mark; the mark covers every new file's rows (3 rewritten + 1 inserted).
      expect(ids[7]).toEqual([9, 1]);
      expect(highWaterMark(s)).toBe(9);
      const actions = await commitActions(f.storage, 1);
      const removes = actions.flatMap((a) => ('remove' in a ? [a.remove as RemoveFile] : []));
      expect(removes.map((x) => [x.baseRowId, x.defaultRowCommitVersion]).sort()).toEqual([
        [0, 0],
        [2, 0],
      ]);
      const adds = actions.flatMap((a) => ('add' in a ? [a.add as AddFile] : []));
      expect(adds.every((a) => a.defaultRowCommitVersion === 1 && (a.baseRowId ?? -1) >= 6)).toBe(
        true,
      );
      expect(
        actions.filter(
          (a) => 'domainMetadata' in a && a.domainMetadata.domain === 'delta.rowTracking',
        ),
      ).toHaveLength(1);
      expect(actions[0]).toMatchObject({
        commitInfo: { tags: { 'delta.rowTracking.preserved': 'true' } },
      });
    } finally {
      await f.close();
    }
  });

  it('a MERGE that writes a deletion vector: the file keeps its baseRowId, the updated row moves with its id', async () => {
    const f = await trackedTable();
    try {
      await makeBatch(session, 'b1', `SELECT * FROM (VALUES (6, 'V6', 2)) t(id, v, rev)`);
      const r = await merge(f, {
        batch: 'b1',
        keyColumns: ['id'],
        orderBy: 'rev',
        deletionVectors: 'on',
        rewriteBelowBytes: 0,
        rewriteDeletedShare: 1,
      });
      expect(r).toMatchObject({ updated: 1, filesWithNewDv: 1 });
      const s = await snapshotOf(f);
      const withDv = s.files.find((x) => x.deletionVector)!;
      expect([
        withDv.baseRowId,
        withDv.defaultRowCommitVersion,
        withDv.deletionVector!.cardinality,
      ]).toEqual([4, 0, 1]);
      expect(await idsAndVersions(f)).toEqual({
        1: [0, 0],
        2: [1, 0],
        3: [2, 0],
        4: [3, 0],
        5: [4, 0],
        6: [5, 1],
      });
      expect(highWaterMark(s)).toBe(6); // the one-row file of the new version of 6
      expect((await readRows(f, 'id')).map((x) => x['v'])).toEqual([
        'v1',
        'v2',
        'v3',
        'v4',
        'v5',
        'V6',
      ]);
    } finally {
      await f.close();
    }
  });

  it('OPTIMIZE keeps every row id and version; the compacted files get fresh ids above the mark and its version', async () => {
    const f = await trackedTable();
    try {
      await makeBatch(session, 'b1', `SELECT * FROM (VALUES (6, 'V6', 2)) t(id, v, rev)`);
      await merge(f, {
        batch: 'b1',
        keyColumns: ['id'],
        orderBy: 'rev',
        deletionVectors: 'on',
        rewriteBelowBytes: 0,
        rewriteDeletedShare: 1,
      });
      const before = await idsAndVersions(f);
      const result = await optimizeTable(f.table, session, { spool: scratchSpool() });
      expect(result).toMatchObject({ version: 2, filesRemoved: 4, filesAdded: 1 });
      expect(await idsAndVersions(f)).toEqual(before);
      const s = await snapshotOf(f);
      expect(
        s.files.map((x) => [x.baseRowId, x.defaultRowCommitVersion, x.deletionVector ?? null]),
      ).toEqual([[7, 2, null]]);
      // Six live rows plus the purged deleted one are not copied: the new file holds 6 rows, ids 7..12.
      expect(highWaterMark(s)).toBe(12);
      expect((await readRows(f, 'id')).map((x) => x['v'])).toEqual([
        'v1',
        'v2',
        'v3',
        'v4',
        'v5',
        'V6',
      ]);
    } finally {
      await f.close();
    }
  });

  it('a new column may not take the name of a hidden row-tracking column', async () => {
    const f = await trackedTable();
    try {
      const hidden = (await snapshotOf(f)).metadata.configuration[
        'delta.rowTracking.materializedRowIdColumnName'
      ]!;
      await makeBatch(
        session,
        'b1',
        `SELECT 1 AS id, 'x' AS v, 2 AS rev, 42::BIGINT AS ${ident(hidden)}`,
      );
      const err = await merge(f, {
        batch: 'b1',
        keyColumns: ['id'],
        orderBy: 'rev',
        schemaEvolution: 'addColumns',
      }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SchemaError);
      expect(err).toMatchObject({ context: { column: hidden } });
    } finally {
      await f.close();
    }
  });

  it('with a change data feed too: the MERGE records its changes in cdc files (no hidden columns there) and keeps the ids', async () => {
    const f = await localFixture(session);
    try {
      await makeBatch(
        session,
        'b0',
        `SELECT i::INTEGER AS id, 'v' || i AS v, 1 AS rev FROM range(1, 4) t(i)`,
      );
      await merge(f, {
        batch: 'b0',
        keyColumns: ['id'],
        orderBy: 'rev',
        deletionVectors: 'off',
        tableProperties: { ...TRACKED, 'delta.enableChangeDataFeed': 'true' },
      });
      await makeBatch(session, 'b1', `SELECT * FROM (VALUES (2, 'B', 2)) t(id, v, rev)`);
      await merge(f, { batch: 'b1', keyColumns: ['id'], orderBy: 'rev', deletionVectors: 'off' });
      expect(await idsAndVersions(f)).toEqual({ 1: [0, 0], 2: [1, 1], 3: [2, 0] });
      const cdc = (await commitActions(f.storage, 1)).flatMap((a) =>
        'cdc' in a ? [a.cdc.path] : [],
      );
      expect(cdc).toHaveLength(1);
      const columns = await session.allJson(
        `SELECT name FROM parquet_schema(${str(join(f.dir, decodeURIComponent(cdc[0]!)))}) WHERE name LIKE '\\_%' ESCAPE '\\'`,
      );
      expect(columns.map((c) => c['name'])).toEqual(['_change_type']);
    } finally {
      await f.close();
    }
  });

  it('on a column-mapped table: data columns physical with field ids, the hidden columns under their own names without ids; ids kept', async () => {
    const f = await localFixture(session);
    try {
      await makeBatch(
        session,
        'b0',
        `SELECT i::INTEGER AS id, 'v' || i AS v, 1 AS rev FROM range(1, 4) t(i)`,
      );
      await merge(f, {
        batch: 'b0',
        keyColumns: ['id'],
        orderBy: 'rev',
        deletionVectors: 'off',
        columnMapping: 'name',
        tableProperties: TRACKED,
      });
      await makeBatch(session, 'b1', `SELECT * FROM (VALUES (2, 'B', 2)) t(id, v, rev)`);
      await merge(f, { batch: 'b1', keyColumns: ['id'], orderBy: 'rev', deletionVectors: 'off' });
      const s = await snapshotOf(f);
      expect(s.protocol.writerFeatures).toEqual(
        expect.arrayContaining(['columnMapping', 'rowTracking', 'domainMetadata']),
      );
      const hidden = s.metadata.configuration['delta.rowTracking.materializedRowIdColumnName']!;
      const rewritten = s.files.find((x) => x.defaultRowCommitVersion === 1)!;
      const footer = await session.allJson(
        `SELECT name, field_id FROM parquet_schema(${str(join(f.dir, decodeURIComponent(rewritten.path)))}) WHERE name <> 'duckdb_schema'`,
      );
      expect(
        footer
          .filter((c) => String(c['name']).startsWith('col-'))
          .every((c) => c['field_id'] !== null),
      ).toBe(true);
      expect(footer.find((c) => c['name'] === hidden)).toEqual({ name: hidden, field_id: null });
      expect((await readRows(f, 'id')).map((x) => x['v'])).toEqual(['v1', 'B', 'v3']);
      const idColumn = String(
        s.schema.fields.find((x) => x.name === 'id')!.metadata!['delta.columnMapping.physicalName'],
      );
      const tracked = await trackedRows(session, f.storage, s, idColumn);
      checkRowIdInvariants(s, tracked);
      expect(tracked.map((t) => [Number(t.value), t.rowId, t.version])).toEqual([
        [1, 0, 0],
        [2, 1, 1],
        [3, 2, 0],
      ]);
    } finally {
      await f.close();
    }
  });
});
