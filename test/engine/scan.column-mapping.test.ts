/**
 * Scanning column-mapped tables with hand-written Parquet (PROTOCOL.md "Reader Requirements for
 * Column Mapping"): in mode id columns resolve by field id alone, whatever the file calls them,
 * and a file without field ids reads as NULLs; in mode name by physical name; columns and nested
 * fields a file lacks read as NULL; files written before a type widening are cast up.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Action, Protocol } from '../../src/delta/actions.js';
import { SnapshotBuilder } from '../../src/delta/replay.js';
import type { DataType, StructField } from '../../src/delta/schema.js';
import type { Snapshot } from '../../src/delta/snapshot.js';
import { DuckSession } from '../../src/engine/duckdb.js';
import { withTableScan } from '../../src/engine/scan.js';
import { str } from '../../src/engine/sql.js';
import { LocalStorage } from '../../src/storage/local.js';
import { scanSource } from '../../scripts/lib/tables.js';

let session: DuckSession;
let dir: string;
beforeAll(async () => {
  session = await DuckSession.open({ threads: 2 });
  dir = await mkdtemp(join(tmpdir(), 'tidemark-scan-cm-test-'));
});
afterAll(async () => {
  session.close();
  await rm(dir, { recursive: true, force: true });
});

/** A mapped field: id and physical name in its metadata. */
const mapped = (
  name: string,
  type: DataType,
  id: number,
  extra: Record<string, unknown> = {},
): StructField => ({
  name,
  type,
  nullable: true,
  metadata: {
    'delta.columnMapping.id': id,
    'delta.columnMapping.physicalName': `col-${name}`,
    ...extra,
  },
});

/** id, name, s: struct<a, b>, tags: array<struct<t>> */
const FIELDS: StructField[] = [
  mapped('id', 'long', 1),
  mapped('name', 'string', 2),
  mapped('s', { type: 'struct', fields: [mapped('a', 'integer', 4), mapped('b', 'string', 5)] }, 3),
  mapped(
    'tags',
    {
      type: 'array',
      elementType: { type: 'struct', fields: [mapped('t', 'string', 7)] },
      containsNull: true,
    },
    6,
  ),
];

function snapshotOf(
  mode: 'name' | 'id',
  fields: StructField[],
  paths: string[],
  protocol: Protocol = { minReaderVersion: 2, minWriterVersion: 5 },
): Snapshot {
  const actions: Action[] = [
    { protocol },
    {
      metaData: {
        id: 't',
        format: { provider: 'parquet', options: {} },
        schemaString: JSON.stringify({ type: 'struct', fields }),
        partitionColumns: [],
        configuration: { 'delta.columnMapping.mode': mode, 'delta.columnMapping.maxColumnId': '7' },
      },
    },
    ...paths.map((path) => ({
      add: { path, partitionValues: {}, size: 1, modificationTime: 0, dataChange: true },
    })),
  ];
  return new SnapshotBuilder(new LocalStorage(dir).uri).apply(actions).build(0);
}

async function parquet(name: string, select: string, options = ''): Promise<void> {
  await mkdir(join(dir, name, '..'), { recursive: true });
  await session.run(`COPY (${select}) TO ${str(join(dir, name))} (FORMAT parquet${options})`);
}

async function rows(snapshot: Snapshot): Promise<unknown[]> {
  return withTableScan(session, scanSource(new LocalStorage(dir)), snapshot, (rel) =>
    session.allJson(`SELECT * FROM (${rel}) ORDER BY ALL NULLS LAST`),
  );
}

describe('scanning column-mapped tables', () => {
  it('mode id: resolves columns and nested fields by field id whatever their names; a file without field ids reads as NULLs', async () => {
    // Names unrelated to the physical names (a rename by another writer): only the ids tell.
    await parquet(
      'id/renamed.parquet',
      `SELECT 1::BIGINT AS x, 'one' AS y, {'p': 10, 'q': 'ten'} AS z, [{'w': 'red'}] AS v`,
      `, FIELD_IDS {x: 1, y: 2, z: {__duckdb_field_id: 3, p: 4, q: 5}, v: {__duckdb_field_id: 6, element: {w: 7}}}`,
    );
    // Physical names but no field ids: not resolvable in mode id.
    await parquet('id/no-ids.parquet', `SELECT 2::BIGINT AS "col-id", 'two' AS "col-name"`);
    expect(
      await rows(snapshotOf('id', FIELDS, ['id/renamed.parquet', 'id/no-ids.parquet'])),
    ).toEqual([
      { id: '1', name: 'one', s: { a: 10, b: 'ten' }, tags: [{ t: 'red' }] },
      { id: null, name: null, s: null, tags: null },
    ]);
  });

  it('mode name: resolves by physical name; columns and nested fields the file lacks are NULL, a NULL struct stays NULL', async () => {
    await parquet(
      'name/a.parquet',
      `SELECT * FROM (VALUES (1::BIGINT, {'col-a': 10}, [{'col-t': 'red'}]), (2, NULL, NULL)) t("col-id", "col-s", "col-tags")`,
    );
    // A column under its logical name is not the column.
    await parquet(
      'name/b.parquet',
      `SELECT 3::BIGINT AS "col-id", 'three' AS "col-name", 'wrong' AS name`,
    );
    expect(await rows(snapshotOf('name', FIELDS, ['name/a.parquet', 'name/b.parquet']))).toEqual([
      { id: '1', name: null, s: { a: 10, b: null }, tags: [{ t: 'red' }] },
      { id: '2', name: null, s: null, tags: null },
      { id: '3', name: 'three', s: null, tags: null },
    ]);
  });

  it('a mode property the protocol does not support is ignored: display names are read', async () => {
    await parquet('none/a.parquet', `SELECT 4::BIGINT AS id, 'four' AS name, 'x' AS "col-name"`);
    const snapshot = snapshotOf('name', FIELDS.slice(0, 2), ['none/a.parquet'], {
      minReaderVersion: 1,
      minWriterVersion: 2,
    });
    expect(await rows(snapshot)).toEqual([{ id: '4', name: 'four' }]);
  });

  it('type widening: files written before integer → long, float → double, date → timestamp_ntz and a wider decimal read in the current types', async () => {
    const widened = (from: string, to: string) => ({
      'delta.typeChanges': [{ fromType: from, toType: to, tableVersion: 1 }],
    });
    const fields = [
      mapped('id', 'long', 1, widened('integer', 'long')),
      mapped('f', 'double', 2, widened('float', 'double')),
      mapped('d', 'timestamp_ntz', 3, widened('date', 'timestamp_ntz')),
      mapped(
        's',
        {
          type: 'struct',
          fields: [mapped('a', 'decimal(10,4)', 5, widened('decimal(5,2)', 'decimal(10,4)'))],
        },
        4,
      ),
    ];
    await parquet(
      'widen/old.parquet',
      `SELECT 2147483647::INTEGER AS "col-id", 1.5::FLOAT AS "col-f", DATE '2024-02-29' AS "col-d", {'col-a': 123.45::DECIMAL(5,2)} AS "col-s"`,
    );
    await parquet(
      'widen/new.parquet',
      `SELECT 9000000000::BIGINT AS "col-id", 2.25::DOUBLE AS "col-f", TIMESTAMP '2024-03-01 10:00:00' AS "col-d", {'col-a': 1.2345::DECIMAL(10,4)} AS "col-s"`,
    );
    const snapshot = snapshotOf('name', fields, ['widen/old.parquet', 'widen/new.parquet'], {
      minReaderVersion: 3,
      minWriterVersion: 7,
      readerFeatures: ['columnMapping', 'typeWidening'],
      writerFeatures: ['columnMapping', 'typeWidening'],
    });
    expect(await rows(snapshot)).toEqual([
      { id: '2147483647', f: 1.5, d: '2024-02-29 00:00:00', s: { a: '123.4500' } },
      { id: '9000000000', f: 2.25, d: '2024-03-01 10:00:00', s: { a: '1.2345' } },
    ]);
  });
});
