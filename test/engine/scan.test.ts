/**
 * Scanning a snapshot's files with real Parquet written by DuckDB: missing and stray columns,
 * glob characters in names, empty tables, naive timestamps, void columns, deletion vectors.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeltaLogError } from '../../src/errors.js';
import {
  inlineDescriptor,
  RowIndexSet,
  writeDeletionVectorFile,
} from '../../src/delta/deletion-vectors/index.js';
import type { Action, AddFile, PartitionValues } from '../../src/delta/actions.js';
import { SnapshotBuilder } from '../../src/delta/replay.js';
import type { StructField } from '../../src/delta/schema.js';
import type { Snapshot } from '../../src/delta/snapshot.js';
import { DuckSession } from '../../src/engine/duckdb.js';
import { readTable, scanRelation, scanSql, withTableScan } from '../../src/engine/scan.js';
import { str } from '../../src/engine/sql.js';
import { deltaTypeToDuck } from '../../src/engine/type-map-read.js';
import { LocalStorage } from '../../src/storage/local.js';
import { scanSource } from '../../scripts/lib/tables.js';

let session: DuckSession;
let dir: string;
beforeAll(async () => {
  session = await DuckSession.open({ threads: 2 });
  dir = await mkdtemp(join(tmpdir(), 'tidemark-scan-test-'));
});
afterAll(async () => {
  session.close();
  await rm(dir, { recursive: true, force: true });
});

const field = (name: string, type: StructField['type']): StructField => ({
  name,
  type,
  nullable: true,
  metadata: {},
});

/** A snapshot over `files` (paths relative to the test folder, as the log would hold them). */
function snapshotOf(
  fields: StructField[],
  files: Array<{ path: string; partitionValues?: PartitionValues; extra?: Partial<AddFile> }>,
  partitionColumns: string[] = [],
): Snapshot {
  const actions: Action[] = [
    { protocol: { minReaderVersion: 1, minWriterVersion: 2 } },
    {
      metaData: {
        id: 't',
        format: { provider: 'parquet', options: {} },
        schemaString: JSON.stringify({ type: 'struct', fields }),
        partitionColumns,
        configuration: {},
      },
    },
    ...files.map((f) => ({
      add: {
        path: f.path,
        partitionValues: f.partitionValues ?? {},
        size: 1,
        modificationTime: 0,
        dataChange: true,
        ...f.extra,
      },
    })),
  ];
  return new SnapshotBuilder(new LocalStorage(dir).uri).apply(actions).build(0);
}

/** Write a Parquet file (name relative to the test folder) from a SELECT. */
async function parquet(name: string, select: string): Promise<void> {
  await mkdir(join(dir, name, '..'), { recursive: true });
  await session.run(`COPY (${select}) TO ${str(join(dir, name))} (FORMAT parquet)`);
}

async function rows(snapshot: Snapshot): Promise<unknown[]> {
  return withTableScan(session, scanSource(new LocalStorage(dir)), snapshot, (rel) =>
    session.allJson(`SELECT * FROM (${rel}) ORDER BY ALL`),
  );
}

async function types(snapshot: Snapshot): Promise<Record<string, string>> {
  return withTableScan(session, scanSource(new LocalStorage(dir)), snapshot, async (rel) => {
    const described = await session.allJson(`DESCRIBE SELECT * FROM (${rel})`);
    return Object.fromEntries(
      described.map((r) => [String(r['column_name']), String(r['column_type'])]),
    );
  });
}

describe('table scan', () => {
  it('reads columns missing from older files as NULL and drops columns not in the schema', async () => {
    await parquet('evolve/old.parquet', 'SELECT 1::BIGINT AS id');
    await parquet(
      'evolve/new.parquet',
      "SELECT 2::BIGINT AS ID, 'b' AS name, 'insert' AS _change_type, 42 AS junk",
    );
    const s = snapshotOf(
      [field('id', 'long'), field('name', 'string')],
      [{ path: 'evolve/old.parquet' }, { path: 'evolve/new.parquet' }],
    );
    expect(await rows(s)).toEqual([
      { id: '1', name: null },
      { id: '2', name: 'b' },
    ]);
    expect(await types(s)).toEqual({ id: 'BIGINT', name: 'VARCHAR' });
  });

  it('reads only the listed file when its name holds glob characters', async () => {
    await parquet('glob/x?.parquet', "SELECT 'right' AS v");
    await parquet('glob/xa.parquet', "SELECT 'wrong' AS v");
    await parquet('glob/[ab]*{c}.parquet', "SELECT 'brackets' AS v");
    await parquet('glob/a.parquet', "SELECT 'wrong too' AS v");
    const s = snapshotOf(
      [field('v', 'string')],
      [{ path: 'glob/x%3F.parquet' }, { path: 'glob/%5Bab%5D%2A%7Bc%7D.parquet' }],
    );
    expect(await rows(s)).toEqual([{ v: 'brackets' }, { v: 'right' }]);
  });

  it('an empty table is an empty relation with the schema types', async () => {
    const fields = [
      field('ts', 'timestamp'),
      field('d', 'decimal(10, 2)'),
      field('p', 'date'),
      field('m', { type: 'map', keyType: 'string', valueType: 'long', valueContainsNull: true }),
    ];
    const s = snapshotOf(fields, [], ['p']);
    expect(await rows(s)).toEqual([]);
    expect(await types(s)).toEqual({
      ts: 'TIMESTAMP WITH TIME ZONE',
      d: 'DECIMAL(10,2)',
      p: 'DATE',
      m: 'MAP(VARCHAR, BIGINT)',
    });
  });

  it('a naive TIMESTAMP stored under Delta type timestamp reads as the same UTC instant', async () => {
    await parquet(
      'ts/naive.parquet',
      "SELECT TIMESTAMP '2020-02-01 08:09:10' AS t, TIMESTAMP '2021-11-18 02:30:00.123456' AS n",
    );
    const s = snapshotOf(
      [field('t', 'timestamp'), field('n', 'timestamp_ntz')],
      [{ path: 'ts/naive.parquet' }],
    );
    const [row] = await withTableScan(session, scanSource(new LocalStorage(dir)), s, (rel) =>
      session.allJson(
        `SELECT epoch_us(t) AS t, epoch_us(n) AS n, typeof(t) AS tt, typeof(n) AS nt FROM (${rel})`,
      ),
    );
    expect(row).toEqual({
      t: '1580544550000000',
      n: '1637202600123456',
      tt: 'TIMESTAMP WITH TIME ZONE',
      nt: 'TIMESTAMP',
    });
  });

  it('partition values come from the log, typed, never from folder names; void columns are NULL', async () => {
    await parquet('part/k=WRONG/a.parquet', 'SELECT 1 AS v');
    await parquet('part/k=__HIVE_DEFAULT_PARTITION__/b.parquet', 'SELECT 2 AS v');
    const s = snapshotOf(
      [field('v', 'integer'), field('k', 'date'), field('gone', 'void')],
      [
        { path: 'part/k=WRONG/a.parquet', partitionValues: { k: '2024-02-29' } },
        { path: 'part/k=__HIVE_DEFAULT_PARTITION__/b.parquet', partitionValues: { k: null } },
      ],
      ['k'],
    );
    expect(await rows(s)).toEqual([
      { v: 1, k: '2024-02-29', gone: null },
      { v: 2, k: null, gone: null },
    ]);
  });

  it('files with the same Parquet schema and partition are read by one read_parquet', async () => {
    for (const i of [1, 2, 3]) await parquet(`group/f${i}.parquet`, `SELECT ${i}::BIGINT AS id`);
    await parquet('group/wide.parquet', "SELECT 4::BIGINT AS id, 'x' AS extra");
    const files = [1, 2, 3].map((i) => ({ path: `group/f${i}.parquet` }));
    const same = snapshotOf([field('id', 'long')], files);
    const local = (f: { path: string }) => join(dir, f.path);
    expect(
      (
        await scanRelation(
          session,
          { storage: new LocalStorage(dir), snapshot: same },
          same.files,
          local,
        )
      ).sql.match(/read_parquet/g),
    ).toHaveLength(1);
    const mixed = snapshotOf([field('id', 'long')], [...files, { path: 'group/wide.parquet' }]);
    const { sql } = await scanRelation(
      session,
      { storage: new LocalStorage(dir), snapshot: mixed },
      mixed.files,
      local,
    );
    expect(sql.match(/read_parquet/g)).toHaveLength(2);
    expect(await session.allJson(`SELECT sum(id) AS s FROM (${sql})`)).toEqual([{ s: '10' }]);
    // Without shapes, every file is assumed to hold every data column.
    expect(scanSql(same, same.files, local)).toContain('CAST(r."id" AS BIGINT)');
  });

  it('leaves out the rows a deletion vector deletes, by their position in the file (inline and file DVs)', async () => {
    await parquet('dv/a.parquet', 'SELECT range::INTEGER AS v FROM range(10)');
    await parquet('dv/b.parquet', 'SELECT (100 + range)::INTEGER AS v FROM range(5)');
    const storage = new LocalStorage(dir);
    const file = await writeDeletionVectorFile(storage, [RowIndexSet.fromIndexes([0, 9])]);
    const s = snapshotOf(
      [field('v', 'integer')],
      [
        { path: 'dv/a.parquet', extra: { deletionVector: file.descriptors[0]! } },
        {
          path: 'dv/b.parquet',
          extra: { deletionVector: inlineDescriptor(RowIndexSet.fromIndexes([1, 2, 3])) },
        },
      ],
    );
    expect((await rows(s)).map((r) => Number((r as { v: number }).v))).toEqual([
      1, 2, 3, 4, 5, 6, 7, 8, 100, 104,
    ]);
  });

  it('a deletion vector whose file is missing fails naming it (never read as "nothing deleted")', async () => {
    await parquet('dv/c.parquet', 'SELECT 1 AS v');
    const missing = {
      storageType: 'u',
      pathOrInlineDv: 'm9JzgVlI!?Oy<+3x+y^b',
      offset: 1,
      sizeInBytes: 34,
      cardinality: 1,
    };
    const s = snapshotOf(
      [field('v', 'integer')],
      [{ path: 'dv/c.parquet', extra: { deletionVector: missing } }],
    );
    const err = await rows(s).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DeltaLogError);
    expect((err as Error).message).toMatch(/DV file not found/);
    expect((err as Error).message).toContain(
      'deletion_vector_44ccbf3f-b223-4581-9cd8-a7e569120ada.bin',
    );
  });

  it('downloads files when the store cannot give a local path', async () => {
    await parquet('remote/a b%.parquet', 'SELECT 7 AS v');
    const inner = new LocalStorage(dir);
    let downloads = 0;
    // A store without local paths, like S3 (only localPath differs from the real local store).
    const remote = Object.assign(Object.create(inner) as LocalStorage, {
      localPath: () => null,
      download: (key: string, path: string) => (downloads++, inner.download(key, path)),
    });
    const s = snapshotOf([field('v', 'integer')], [{ path: 'remote/a%20b%25.parquet' }]);
    expect(await readTable(session, scanSource(remote), s)).toEqual([{ v: 7 }]);
    expect(downloads).toBe(1);
  });
});

describe('deltaTypeToDuck', () => {
  it('maps primitive, decimal and nested types', () => {
    const cases: Array<[StructField['type'], string]> = [
      ['long', 'BIGINT'],
      ['integer', 'INTEGER'],
      ['short', 'SMALLINT'],
      ['byte', 'TINYINT'],
      ['float', 'FLOAT'],
      ['double', 'DOUBLE'],
      ['decimal(10,2)', 'DECIMAL(10,2)'],
      ['decimal(38, 18)', 'DECIMAL(38,18)'],
      ['string', 'VARCHAR'],
      ['binary', 'BLOB'],
      ['boolean', 'BOOLEAN'],
      ['date', 'DATE'],
      ['timestamp', 'TIMESTAMPTZ'],
      ['timestamp_ntz', 'TIMESTAMP'],
      [{ type: 'array', elementType: 'integer', containsNull: true }, 'INTEGER[]'],
      [
        {
          type: 'map',
          keyType: 'string',
          valueType: { type: 'array', elementType: 'long', containsNull: true },
          valueContainsNull: true,
        },
        'MAP(VARCHAR, BIGINT[])',
      ],
      [
        { type: 'struct', fields: [field('a b', 'date'), field('"q"', 'string')] },
        'STRUCT("a b" DATE, """q""" VARCHAR)',
      ],
    ];
    for (const [type, duck] of cases) expect(deltaTypeToDuck(type)).toBe(duck);
  });

  it('refuses unknown and malformed types', () => {
    for (const type of [
      'variant',
      'int',
      'bigint',
      'decimal(39,0)',
      'decimal(5,6)',
      'decimal(a,b)',
    ]) {
      expect(() => deltaTypeToDuck(type), type).toThrow(/schema type|decimal/);
    }
  });
});
