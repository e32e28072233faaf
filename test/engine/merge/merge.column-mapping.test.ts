/**
 * The column-mapping writer requirements (PROTOCOL.md "Writer Requirements for Column Mapping")
 * after a tidemark commit, read from what was written: Parquet footers (DuckDB parquet_schema)
 * with physical names at every struct level and field ids equal to the column ids, stats and
 * partitionValues keyed by physical names, new columns with fresh ids and maxColumnId raised;
 * tables tidemark creates in modes name and id; a mode switch refused.
 */
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AddFile } from '../../../src/delta/actions.js';
import { parseCommit } from '../../../src/delta/actions.js';
import { decodeLogPath } from '../../../src/delta/partition-decode.js';
import type { DataType, StructField } from '../../../src/delta/schema.js';
import { parseStats } from '../../../src/delta/stats.js';
import { DuckSession, type Row } from '../../../src/engine/duckdb.js';
import { stageMerge } from '../../../src/engine/merge/index.js';
import { str } from '../../../src/engine/sql.js';
import { SchemaError } from '../../../src/errors.js';
import { LocalStorage } from '../../../src/storage/local.js';
import { writeCheckpoint } from '../../../src/delta/checkpoint.js';
import { appendAndCommit, checkpointIO, scratchSpool } from '../../../scripts/lib/tables.js';
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
beforeAll(async () => {
  session = await DuckSession.open({ threads: 2 });
});
afterAll(() => session.close());

async function copyOf(name: string): Promise<Fixture> {
  const dir = await copySharedTable(name);
  return fixtureOn(session, new LocalStorage(dir), {
    dir,
    cleanup: () => rm(dir, { recursive: true, force: true }),
  });
}

/** The adds of commit `version`. */
async function addsOf(f: Fixture, version: number): Promise<AddFile[]> {
  const bytes = await f.storage.read(`_delta_log/${String(version).padStart(20, '0')}.json`);
  return parseCommit(new TextDecoder().decode(bytes!), version, f.storage.uri).flatMap((a) =>
    'add' in a ? [a.add] : [],
  );
}

/** parquet_schema() of an added file below the root: name, field id and converted type per node (the root left out). */
async function footer(f: Fixture, add: AddFile): Promise<Row[]> {
  const path = join(f.dir, decodeLogPath(add.path, f.storage.uri));
  const rows = await session.allJson(
    `SELECT name, field_id, converted_type FROM parquet_schema(${str(path)})`,
  );
  return rows.slice(1);
}

/** Physical name → column id of every struct field, at any depth. */
function idsByPhysicalName(type: DataType, out = new Map<string, number>()): Map<string, number> {
  if (typeof type === 'string') return out;
  if (type.type === 'array') return idsByPhysicalName(type.elementType, out);
  if (type.type === 'map')
    return idsByPhysicalName(type.valueType, idsByPhysicalName(type.keyType, out));
  for (const field of type.fields) {
    out.set(
      String(field.metadata['delta.columnMapping.physicalName']),
      Number(field.metadata['delta.columnMapping.id']),
    );
    idsByPhysicalName(field.type, out);
  }
  return out;
}

/** Every key at any depth of a stats object. */
function statsKeys(value: unknown): string[] {
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([k, v]) => [k, ...statsKeys(v)]);
}

const UUID_NAME = /^col-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const RANDOM_FOLDER = /^[A-Za-z0-9]{2}\/part-/;

describe('writer requirements after a tidemark commit', () => {
  it('mode id (README 20): every struct field of the new file carries its physical name and its id as field id, no list or map level has one', async () => {
    const f = await copyOf('table-with-columnmapping-mode-id');
    try {
      await makeBatch(
        session,
        'b',
        `SELECT 5 AS IntegerType, 5::BIGINT AS LongType, {'aa': '5', 'ac': {'aca': 5}} AS nested_struct, [{'ab': 5}] AS array_of_structs,
                {'aa': [5, 6], 'ab': MAP {[5, 6]: {'aca': 7}}} AS struct_of_arrays_maps_of_structs, MAP {6: {'ab': 100::BIGINT}} AS map_of_rows`,
      );
      const r = await merge(f, { batch: 'b', keyColumns: ['IntegerType'], orderBy: 'LongType' });
      expect(r).toMatchObject({ version: 1, inserted: 1 });
      const snapshot = await snapshotOf(f);
      const ids = idsByPhysicalName(snapshot.schema);
      const [add] = await addsOf(f, 1);
      const nodes = await footer(f, add!);
      const named = nodes.filter((n) => String(n['name']).startsWith('col-'));
      // All 30 struct fields (22 top-level, 8 nested), each with its own id; the list and map levels (list, element, key_value, key, value) have none.
      expect(named.map((n) => [n['name'], Number(n['field_id'])])).toEqual(
        named.map((n) => [n['name'], ids.get(String(n['name']))]),
      );
      expect(named.map((n) => Number(n['field_id'])).sort((a, b) => a - b)).toEqual(
        Array.from({ length: 30 }, (_, i) => i + 1),
      );
      expect(
        nodes
          .filter((n) => !String(n['name']).startsWith('col-'))
          .every((n) => n['field_id'] === null),
      ).toBe(true);
      // Stats nest by physical names, nested struct fields included.
      const stats = parseStats(add!.stats)!;
      expect(statsKeys(stats.minValues).every((k) => ids.has(k))).toBe(true);
      expect(stats.minValues).toMatchObject({
        'col-ee8dc621-b36b-4784-bdb5-26c5c364e254': {
          'col-b47b5204-0100-46bc-92df-aa446f634191': '5',
        },
      });
      // Read back by field id: 7 rows, sum(IntegerType) 15.
      const rows = await readRows(f, 'IntegerType');
      expect(rows).toHaveLength(7);
      expect(rows.reduce((sum, x) => sum + Number(x['IntegerType'] ?? 0), 0)).toBe(15);
      expect(rows.find((x) => x['IntegerType'] === 5)).toMatchObject({
        nested_struct: { aa: '5', ac: { aca: 5 } },
        map_of_rows: [{ key: 6, value: { ab: '100' } }],
      });
    } finally {
      await f.close();
    }
  });

  it('mode name (README 19): a new column gets id 4 and a col-<uuid> name, maxColumnId becomes "4"; files, stats and partitionValues use physical names', async () => {
    const f = await copyOf('dv-with-columnmapping');
    try {
      await makeBatch(
        session,
        'b',
        `SELECT * FROM (VALUES (3, 1003, 'new', 'n1')) t(part, col1, col2, note)`,
      );
      const r = await merge(f, {
        batch: 'b',
        keyColumns: ['col1'],
        orderBy: 'col1',
        schemaEvolution: 'addColumns',
      });
      expect(r).toMatchObject({ version: 16, inserted: 1 });
      const snapshot = await snapshotOf(f);
      const note = snapshot.schema.fields.find((x) => x.name === 'note')!;
      const physical = String(note.metadata['delta.columnMapping.physicalName']);
      expect(note.metadata['delta.columnMapping.id']).toBe(4);
      expect(physical).toMatch(UUID_NAME);
      expect(snapshot.metadata.configuration).toMatchObject({
        'delta.columnMapping.maxColumnId': '4',
        'delta.columnMapping.mode': 'name',
      });
      const [add] = await addsOf(f, 16);
      expect(add!.path).toMatch(RANDOM_FOLDER);
      expect(add!.partitionValues).toEqual({ 'col-60c949ca-b8bc-4330-b931-b73fb4c60037': '3' });
      const stats = parseStats(add!.stats)!;
      const dataColumns = [
        'col-9f0743fd-a52e-44a7-92e0-72a3d34231b1',
        'col-ae46e8ed-607b-4b7c-8a13-44991fe0a2e4',
        physical,
      ];
      expect(Object.keys(stats.minValues!)).toEqual(dataColumns);
      expect(Object.keys(stats.nullCount!)).toEqual(dataColumns);
      // The partition column stays out of the file; the data columns carry ids 2, 3 and 4.
      expect((await footer(f, add!)).map((n) => [n['name'], Number(n['field_id'])])).toEqual([
        [dataColumns[0], 2],
        [dataColumns[1], 3],
        [physical, 4],
      ]);
      const rows = await readRows(f, 'col1');
      expect(rows).toHaveLength(36);
      expect(rows.filter((x) => x['note'] !== null)).toEqual([
        { part: 3, col1: 1003, col2: 'new', note: 'n1' },
      ]);
    } finally {
      await f.close();
    }
  });

  it('a checkpoint tidemark writes after a MERGE keeps the physical keys: the table reads the same from it', async () => {
    const f = await copyOf('dv-with-columnmapping');
    try {
      await makeBatch(
        session,
        'b',
        `SELECT * FROM (VALUES (6, 26, 'back'), (7, 27, 'updated')) t(part, col1, col2)`,
      );
      await merge(f, {
        batch: 'b',
        keyColumns: ['col1'],
        orderBy: 'col2',
        ...{ deletionVectors: 'on' as const, rewriteBelowBytes: 0 },
      });
      const fromJson = await readRows(f, 'col1');
      await writeCheckpoint(f.storage, checkpointIO(session), await snapshotOf(f));
      expect(
        JSON.parse(
          new TextDecoder().decode((await f.storage.read('_delta_log/_last_checkpoint'))!),
        ),
      ).toMatchObject({ version: 16 });
      const fromCheckpoint = await snapshotOf(f);
      expect(
        fromCheckpoint.files.every(
          (x) => Object.keys(x.partitionValues)[0] === 'col-60c949ca-b8bc-4330-b931-b73fb4c60037',
        ),
      ).toBe(true);
      expect(await readRows(f, 'col1')).toEqual(fromJson);
      expect(fromJson).toHaveLength(36);
    } finally {
      await f.close();
    }
  });

  it('a MERGE keyed by the partition column records the partitions it read by physical name, as the winners’ partitionValues are keyed', async () => {
    const f = await copyOf('dv-with-columnmapping');
    try {
      await makeBatch(session, 'b', `SELECT * FROM (VALUES (6, 26, 'back')) t(part, col1, col2)`);
      const staged = await stageMerge({
        session,
        storage: f.storage,
        snapshot: await snapshotOf(f),
        spool: scratchSpool(),
        batch: 'b',
        keyColumns: ['part', 'col1'],
        orderBy: 'col2',
      });
      try {
        expect(staged.request.read.partitions).toEqual([
          { 'col-60c949ca-b8bc-4330-b931-b73fb4c60037': '6' },
        ]);
      } finally {
        await staged.dispose();
      }
    } finally {
      await f.close();
    }
  });

  it('never switches an existing table’s mode: asking for another one is refused before anything is written', async () => {
    const f = await copyOf('column-mapping-name');
    try {
      const before = await readdir(f.dir, { recursive: true });
      await makeBatch(session, 'b', `SELECT 'BMS' AS "Company Very Short", 'X' AS "Super Name"`);
      const err = await merge(f, {
        batch: 'b',
        keyColumns: ['Super Name'],
        orderBy: 'Super Name',
        columnMapping: 'none',
      }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SchemaError);
      expect((err as Error).message).toMatch(
        /column mapping mode 'name', but columnMapping 'none' was asked for/,
      );
      expect((err as SchemaError).kind).toBe('usage');
      expect(await readdir(f.dir, { recursive: true })).toEqual(before);
    } finally {
      await f.close();
    }
  });
});

describe('tables tidemark creates with column mapping', () => {
  const NESTED = `SELECT * FROM (VALUES (1, 'eu', {'city': 'Oslo', 'geo': {'lat': 59.9}}, [{'sku': 'a'}], 1), (2, 'us', {'city': 'Austin', 'geo': {'lat': 30.2}}, [], 1)) t(id, region, address, items, v)`;

  it('mode name, partitioned, with deletion vectors: 3/7 listing columnMapping for readers and writers; ids 1..9 on every field; a second MERGE reads and updates it', async () => {
    const f = await localFixture(session);
    try {
      await makeBatch(session, 'b', NESTED);
      await merge(f, {
        batch: 'b',
        keyColumns: ['id'],
        orderBy: 'v',
        partitionBy: ['region'],
        columnMapping: 'name',
      });
      const s = await snapshotOf(f);
      expect(s.protocol).toEqual({
        minReaderVersion: 3,
        minWriterVersion: 7,
        readerFeatures: ['deletionVectors', 'columnMapping'],
        writerFeatures: ['deletionVectors', 'columnMapping'],
      });
      expect(s.metadata.configuration).toMatchObject({
        'delta.columnMapping.mode': 'name',
        'delta.columnMapping.maxColumnId': '9',
      });
      expect(s.metadata.partitionColumns).toEqual(['region']);
      const ids = idsByPhysicalName(s.schema);
      // id, region, address, address.city, address.geo, address.geo.lat, items, items[].sku, v
      expect([...ids.values()].sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
      expect([...ids.keys()].every((name) => UUID_NAME.test(name))).toBe(true);
      const region = String(s.schema.fields[1]!.metadata['delta.columnMapping.physicalName']);
      for (const add of await addsOf(f, 0)) {
        expect(add.path).toMatch(RANDOM_FOLDER);
        expect(Object.keys(add.partitionValues)).toEqual([region]);
        const nodes = await footer(f, add);
        expect(
          nodes
            .filter((n) => n['field_id'] !== null)
            .every((n) => ids.get(String(n['name'])) === Number(n['field_id'])),
        ).toBe(true);
        expect(nodes.map((n) => n['name'])).not.toContain('city');
      }
      await makeBatch(
        session,
        'u',
        `SELECT 2 AS id, 'us' AS region, {'city': 'Dallas', 'geo': {'lat': 32.8}} AS address, [{'sku': 'b'}] AS items, 2 AS v`,
      );
      expect(await merge(f, { batch: 'u', keyColumns: ['id'], orderBy: 'v' })).toMatchObject({
        updated: 1,
      });
      expect(await readRows(f, 'id')).toEqual([
        {
          id: 1,
          region: 'eu',
          address: { city: 'Oslo', geo: { lat: '59.9' } },
          items: [{ sku: 'a' }],
          v: 1,
        },
        {
          id: 2,
          region: 'us',
          address: { city: 'Dallas', geo: { lat: '32.8' } },
          items: [{ sku: 'b' }],
          v: 2,
        },
      ]);
    } finally {
      await f.close();
    }
  });

  it('mode id through append: protocol 2/5, field ids in the files, rows read back by id', async () => {
    const f = await localFixture(session);
    try {
      await makeBatch(session, 'b', NESTED);
      await appendAndCommit(f.table, session, { batch: 'b', columnMapping: 'id' });
      await appendAndCommit(f.table, session, { batch: 'b' });
      const s = await snapshotOf(f);
      expect(s.protocol).toEqual({ minReaderVersion: 2, minWriterVersion: 5 });
      expect(s.metadata.configuration).toEqual({
        'delta.columnMapping.mode': 'id',
        'delta.columnMapping.maxColumnId': '9',
      });
      const field = (name: string): StructField => s.schema.fields.find((x) => x.name === name)!;
      const [add] = await addsOf(f, 1);
      const top = (await footer(f, add!)).find(
        (n) => n['name'] === field('address').metadata['delta.columnMapping.physicalName'],
      );
      expect(Number(top!['field_id'])).toBe(field('address').metadata['delta.columnMapping.id']);
      const rows = await readRows(f, 'id, v');
      expect(rows.map((x) => [x['id'], (x['address'] as Row)['city'], x['items']])).toEqual([
        [1, 'Oslo', [{ sku: 'a' }]],
        [1, 'Oslo', [{ sku: 'a' }]],
        [2, 'Austin', []],
        [2, 'Austin', []],
      ]);
    } finally {
      await f.close();
    }
  });
});
