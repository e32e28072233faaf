import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Action } from '../../src/delta/actions.js';
import type { StructType } from '../../src/delta/schema.js';
import { addFileFor, removeFileFor } from '../../src/delta/file-actions.js';
import type { DeltaTable } from '../../src/delta/table.js';
import { uploadDataFiles } from '../../src/engine/data-file-io.js';
import { writeDataFiles } from '../../src/engine/data-files.js';
import { DuckSession } from '../../src/engine/duckdb.js';
import { readTable } from '../../src/engine/scan.js';
import { AppendOnlyTableError, CommitConflictError, SchemaError } from '../../src/errors.js';
import { LocalStorage } from '../../src/storage/local.js';
import { countingStorage } from '../helpers/counting-storage.js';
import { readCommit } from './commit-helpers.js';
import { openTable, scanSource } from '../../scripts/lib/tables.js';

const SCHEMA: StructType = {
  type: 'struct',
  fields: [
    { name: 'id', type: 'long', nullable: false, metadata: {} },
    { name: 'name', type: 'string', nullable: true, metadata: {} },
    { name: 'day', type: 'date', nullable: true, metadata: {} },
  ],
};

let session: DuckSession;
let dir: string;
let storage: LocalStorage;
let table: DeltaTable;
beforeAll(async () => {
  session = await DuckSession.open({ threads: 2 });
});
afterAll(() => session.close());
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'tidemark-table-'));
  storage = new LocalStorage(path.join(dir, 'table'));
  table = openTable(storage, session);
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Write rows (a VALUES list of id, name, day) as data files, upload them, return their adds. */
async function writeRows(values: string, now = Date.now()): Promise<Action[]> {
  const snapshot = (await table.snapshot())!;
  const files = await writeDataFiles(session, {
    relationSql: `SELECT * FROM (VALUES ${values}) t(id, name, day)`,
    schema: snapshot.schema,
    partitionColumns: snapshot.partitionColumns,
    localDir: path.join(dir, 'staging'),
  });
  await uploadDataFiles(storage, files);
  return files.map((f) => ({ add: addFileFor(f, { modificationTime: now }) }));
}

const append = (readVersion: number, actions: Action[]) => ({
  actions,
  operation: 'WRITE',
  operationParameters: { mode: 'Append', partitionBy: [] },
  read: { readVersion, partitions: [] as [], files: [], appIds: [] },
  isBlindAppend: true,
});

describe('DeltaTable.create', () => {
  it('writes protocol {1,2} and a metaData the reader accepts, with all four keys per field', async () => {
    const result = await table.create({
      schema: SCHEMA,
      partitionColumns: ['day'],
      configuration: { 'delta.appendOnly': 'false' },
    });
    expect(result).toMatchObject({ version: 0, attempts: 1, checkpoint: null });
    const snapshot = (await table.snapshot())!;
    expect(snapshot.protocol).toEqual({ minReaderVersion: 1, minWriterVersion: 2 });
    expect(snapshot.metadata).toMatchObject({
      format: { provider: 'parquet', options: {} },
      partitionColumns: ['day'],
      configuration: { 'delta.appendOnly': 'false' },
    });
    expect(snapshot.metadata.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(snapshot.metadata.createdTime).toBeGreaterThan(0);
    expect(snapshot.schema).toEqual(SCHEMA);
    const fields = JSON.parse(snapshot.metadata.schemaString).fields as object[];
    for (const f of fields)
      expect(Object.keys(f)).toEqual(['name', 'type', 'nullable', 'metadata']);
    const [first] = (await readCommit(storage, 0))!;
    expect(first).toMatchObject({
      commitInfo: { operation: 'CREATE TABLE', operationParameters: { partitionBy: '["day"]' } },
    });
  });

  it('uses reader 3 / writer 7 with timestampNtz when a nested field is timestamp_ntz', async () => {
    const schema: StructType = {
      type: 'struct',
      fields: [
        { name: 'id', type: 'long', nullable: true, metadata: {} },
        {
          name: 'events',
          type: {
            type: 'array',
            elementType: {
              type: 'struct',
              fields: [{ name: 'at', type: 'timestamp_ntz', nullable: true, metadata: {} }],
            },
            containsNull: true,
          },
          nullable: true,
          metadata: {},
        },
      ],
    };
    await table.create({ schema });
    expect((await table.snapshot())!.protocol).toEqual({
      minReaderVersion: 3,
      minWriterVersion: 7,
      readerFeatures: ['timestampNtz'],
      writerFeatures: ['timestampNtz'],
    });
  });

  it('refuses duplicate column names and unknown partition columns, naming the column', async () => {
    const dup: StructType = {
      type: 'struct',
      fields: [...SCHEMA.fields, { name: 'NAME', type: 'string', nullable: true, metadata: {} }],
    };
    await expect(table.create({ schema: dup })).rejects.toMatchObject({
      name: 'SchemaError',
      context: { column: 'NAME' },
    });
    await expect(
      table.create({ schema: SCHEMA, partitionColumns: ['nope'] }),
    ).rejects.toBeInstanceOf(SchemaError);
    expect(await table.snapshot()).toBeNull();
  });

  it('the loser of a creation race gets TableAlreadyExists', async () => {
    const other = openTable(storage, session);
    const results = await Promise.allSettled([
      table.create({ schema: SCHEMA }),
      other.create({ schema: SCHEMA }),
    ]);
    const rejected = results.filter((r) => r.status === 'rejected');
    expect(rejected).toHaveLength(1);
    expect((rejected[0] as PromiseRejectedResult).reason).toMatchObject({
      conflict: 'TableAlreadyExists',
    });
    expect((rejected[0] as PromiseRejectedResult).reason).toBeInstanceOf(CommitConflictError);
  });

  it('can create the table with its first data and a txn in version 0', async () => {
    const files = await writeDataFiles(session, {
      relationSql: `SELECT * FROM (VALUES (1, 'a', DATE '2024-01-01'), (2, 'b', NULL)) t(id, name, day)`,
      schema: SCHEMA,
      partitionColumns: ['day'],
      localDir: path.join(dir, 'staging'),
    });
    await uploadDataFiles(storage, files);
    const created = await table.create({
      schema: SCHEMA,
      partitionColumns: ['day'],
      actions: [
        ...files.map((f) => ({ add: addFileFor(f, { modificationTime: 1 }) })),
        { txn: { appId: 'job', version: 1, lastUpdated: 1 } },
      ],
      operationMetrics: { numFiles: '2', numOutputRows: '2' },
    });
    expect(created.version).toBe(0);
    const snapshot = (await table.snapshot())!;
    expect(snapshot.txns.get('job')?.version).toBe(1);
    expect(
      (await readTable(session, scanSource(storage), snapshot)).map((r) => r['name']).sort(),
    ).toEqual(['a', 'b']);
    const [first] = (await readCommit(storage, 0))!;
    expect(first).toMatchObject({
      commitInfo: { operation: 'CREATE TABLE AS SELECT', operationMetrics: { numFiles: '2' } },
    });
  });

  it('lists the domainMetadata writer feature when version 0 carries domain metadata', async () => {
    const state: Action = {
      domainMetadata: {
        domain: 'tidemark.job.orders',
        configuration: '{"batch":1}',
        removed: false,
      },
    };
    await table.create({ schema: SCHEMA, actions: [state] });
    const snapshot = (await table.snapshot())!;
    expect(snapshot.protocol).toEqual({
      minReaderVersion: 1,
      minWriterVersion: 7,
      writerFeatures: ['domainMetadata'],
    });
    expect(snapshot.domains.get('tidemark.job.orders')?.configuration).toBe('{"batch":1}');
  });
});

describe('DeltaTable.commit', () => {
  it('appends real data files that the reader reads back', async () => {
    await table.create({ schema: SCHEMA, partitionColumns: ['day'] });
    const adds = await writeRows(
      `(1, 'a', DATE '2024-01-01'), (2, 'b', DATE '2024-01-02'), (3, NULL, NULL)`,
    );
    expect(await table.commit(append(0, adds))).toMatchObject({
      version: 1,
      attempts: 1,
      checkpoint: null,
    });
    const snapshot = (await table.snapshot())!;
    expect(snapshot.files.map((f) => f.partitionValues['day']).sort()).toEqual([
      '2024-01-01',
      '2024-01-02',
      null,
    ]);
    expect(snapshot.files.every((f) => f.parsedStats?.numRecords === 1)).toBe(true);
    const rows = await readTable(session, scanSource(storage), snapshot);
    expect(rows.map((r) => [Number(r['id']), r['name']]).sort()).toEqual([
      [1, 'a'],
      [2, 'b'],
      [3, null],
    ]);
  });

  it('removes a live file with its partition values and size (a rewrite)', async () => {
    await table.create({ schema: SCHEMA, partitionColumns: ['day'] });
    await table.commit(append(0, await writeRows(`(1, 'a', DATE '2024-01-01')`)));
    const before = (await table.snapshot())!;
    const old = before.files[0]!;
    const replacement = await writeRows(`(1, 'A', DATE '2024-01-01')`);
    const remove = removeFileFor(old, { deletionTimestamp: 1234 });
    expect(remove).toMatchObject({
      path: old.path,
      dataChange: true,
      extendedFileMetadata: true,
      partitionValues: { day: '2024-01-01' },
      size: old.size,
    });
    await table.commit({
      actions: [{ remove }, ...replacement],
      operation: 'MERGE',
      read: { readVersion: 1, partitions: [{ day: '2024-01-01' }], files: [old.path], appIds: [] },
      isBlindAppend: false,
    });
    const after = (await table.snapshot())!;
    expect(after.removes.map((t) => t.path)).toEqual([old.path]);
    expect((await readTable(session, scanSource(storage), after)).map((r) => r['name'])).toEqual([
      'A',
    ]);
  });

  it('refuses removes on a delta.appendOnly table, naming the table and the setting', async () => {
    await table.create({ schema: SCHEMA, configuration: { 'delta.appendOnly': 'true' } });
    await table.commit(append(0, await writeRows(`(1, 'a', DATE '2024-01-01')`)));
    const file = (await table.snapshot())!.files[0]!;
    const err = await table
      .commit({
        ...append(1, []),
        actions: [{ remove: removeFileFor(file, { deletionTimestamp: 1 }) }],
        isBlindAppend: false,
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppendOnlyTableError);
    expect(err).toMatchObject({ context: { uri: storage.uri, setting: 'delta.appendOnly' } });
    expect((err as Error).message).toContain(
      `table ${storage.uri} is append-only (delta.appendOnly = true)`,
    );
  });

  it('upgrades a {1,2} table to writer 7 with domainMetadata when a commit writes domain metadata', async () => {
    await table.create({ schema: SCHEMA });
    const state: Action = {
      domainMetadata: {
        domain: 'tidemark.job.orders',
        configuration: '{"batch":1}',
        removed: false,
      },
    };
    await table.commit(append(0, [state, ...(await writeRows(`(1, 'a', NULL)`))]));
    const snapshot = (await table.snapshot())!;
    expect(snapshot.protocol).toEqual({
      minReaderVersion: 1,
      minWriterVersion: 7,
      writerFeatures: ['appendOnly', 'invariants', 'domainMetadata'],
    });
    expect(snapshot.domains.get('tidemark.job.orders')?.configuration).toBe('{"batch":1}');
    // The next commit needs no further upgrade.
    await table.commit(
      append(1, [
        {
          ...state,
          domainMetadata: {
            ...(state as { domainMetadata: object }).domainMetadata,
            configuration: '{"batch":2}',
          },
        } as Action,
      ]),
    );
    const commit2 = (await readCommit(storage, 2))!;
    expect(commit2.some((a) => 'protocol' in a)).toBe(false);
  });

  it('never writes system (delta.*) domains', async () => {
    await table.create({ schema: SCHEMA });
    const system: Action = {
      domainMetadata: { domain: 'delta.rowTracking', configuration: '{}', removed: false },
    };
    await expect(table.commit(append(0, [system]))).rejects.toMatchObject({
      feature: 'domainMetadata',
    });
  });

  it('checkpoints at version 10 and a reopened table reads the checkpoint plus the later commits', async () => {
    await table.create({ schema: SCHEMA });
    const outcomes = [];
    for (let v = 1; v <= 12; v++) {
      const result = await table.commit(
        append(v - 1, await writeRows(`(${v}, 'n${v}', DATE '2024-01-01')`)),
      );
      outcomes.push(result.checkpoint?.written ?? null);
    }
    expect(outcomes).toEqual([
      null,
      null,
      null,
      null,
      null,
      null,
      null,
      null,
      null,
      true,
      null,
      null,
    ]);
    const counted = countingStorage(storage);
    const reopened = openTable(counted, session);
    const snapshot = (await reopened.snapshot())!;
    expect(snapshot.version).toBe(12);
    const jsonReads = counted.calls
      .filter((c) => c.method === 'read' && c.key.endsWith('.json'))
      .map((c) => c.key);
    expect(jsonReads.sort()).toEqual([
      '_delta_log/00000000000000000011.json',
      '_delta_log/00000000000000000012.json',
    ]);
    expect(
      (await readTable(session, scanSource(storage), snapshot))
        .map((r) => Number(r['id']))
        .sort((a, b) => a - b),
    ).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
  });
});
