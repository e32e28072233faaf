import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Action } from '../../src/delta/actions.js';
import { writeCheckpointActions } from '../../src/engine/checkpoint-writer.js';
import { DuckSession } from '../../src/engine/duckdb.js';
import { str } from '../../src/engine/sql.js';

let session: DuckSession;
let dir: string;
beforeAll(async () => {
  session = await DuckSession.open({ threads: 2 });
  dir = await mkdtemp(path.join(tmpdir(), 'tidemark-cpw-'));
});
afterAll(async () => {
  session.close();
  await rm(dir, { recursive: true, force: true });
});

const baseActions = (): Action[] => [
  { protocol: { minReaderVersion: 1, minWriterVersion: 2 } },
  {
    metaData: {
      id: '1b9c7a9e-0000-4000-8000-000000000000',
      format: { provider: 'parquet', options: {} },
      schemaString:
        '{"type":"struct","fields":[{"name":"p","type":"string","nullable":true,"metadata":{}}]}',
      partitionColumns: ['p'],
      configuration: { 'delta.checkpointInterval': '10' },
      createdTime: 1700000000000,
    },
  },
  { txn: { appId: 'job-a', version: 42, lastUpdated: 1700000000001 } },
  {
    remove: {
      path: 'p=old/x.parquet',
      deletionTimestamp: 1700000000002,
      dataChange: false,
      extendedFileMetadata: true,
      partitionValues: { p: 'old' },
      size: 10,
    },
  },
  { domainMetadata: { domain: 'tidemark.test', configuration: '{"a":1}', removed: false } },
];

describe('writeCheckpointActions', () => {
  it('writes Spark checkpoint columns with MAPs and exactly one action per row', async () => {
    const actions: Action[] = [
      ...baseActions(),
      {
        add: {
          path: 'p=a%20b/1.parquet',
          partitionValues: { p: 'a b' },
          size: 123,
          modificationTime: 5,
          dataChange: false,
          stats: '{"numRecords":3}',
          tags: { k: 'v' },
        },
      },
      {
        add: {
          path: 'p=__HIVE_DEFAULT_PARTITION__/2.parquet',
          partitionValues: { p: null },
          size: 1,
          modificationTime: 6,
          dataChange: false,
        },
      },
    ];
    const file = path.join(dir, 'one.checkpoint.parquet');
    expect(await writeCheckpointActions(session, actions, file)).toBe(7);

    const types = await session.all(
      `SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet(${str(file)}))`,
    );
    const byName = Object.fromEntries(
      types.map((r) => [r['column_name'], String(r['column_type'])]),
    );
    expect(Object.keys(byName)).toEqual([
      'txn',
      'add',
      'remove',
      'metaData',
      'protocol',
      'domainMetadata',
    ]);
    expect(byName['add']).toContain('partitionValues MAP(VARCHAR, VARCHAR)');
    expect(byName['metaData']).toContain('"configuration" MAP(VARCHAR, VARCHAR)');

    const perRow = await session.all(
      `SELECT (txn IS NOT NULL)::INT + (add IS NOT NULL)::INT + (remove IS NOT NULL)::INT + (metaData IS NOT NULL)::INT +
              (protocol IS NOT NULL)::INT + (domainMetadata IS NOT NULL)::INT AS n FROM read_parquet(${str(file)})`,
    );
    expect(perRow.map((r) => r['n'])).toEqual(Array(7).fill(1));

    const adds = await session.allJson(
      `SELECT add.path AS path, add.partitionValues['p'] AS p, add.stats AS stats, add.tags['k'] AS tag
       FROM read_parquet(${str(file)}) WHERE add IS NOT NULL ORDER BY path`,
    );
    expect(adds).toEqual([
      { path: 'p=__HIVE_DEFAULT_PARTITION__/2.parquet', p: null, stats: null, tag: null },
      { path: 'p=a%20b/1.parquet', p: 'a b', stats: '{"numRecords":3}', tag: 'v' },
    ]);
    const proto = await session.allJson(
      `SELECT protocol FROM read_parquet(${str(file)}) WHERE protocol IS NOT NULL`,
    );
    expect(proto[0]!['protocol']).toEqual({
      minReaderVersion: 1,
      minWriterVersion: 2,
      readerFeatures: null,
      writerFeatures: null,
    });
    const meta = await session.allJson(
      `SELECT metaData.configuration['delta.checkpointInterval'] AS ci, metaData.partitionColumns AS pc FROM read_parquet(${str(file)}) WHERE metaData IS NOT NULL`,
    );
    expect(meta).toEqual([{ ci: '10', pc: ['p'] }]);
  });

  it('writes 30,000 adds quickly', async () => {
    const adds: Action[] = Array.from({ length: 30_000 }, (_, i) => ({
      add: {
        path: `p=${i % 50}/part-${i}.parquet`,
        partitionValues: { p: String(i % 50) },
        size: 1000 + i,
        modificationTime: 1700000000000 + i,
        dataChange: false,
        stats: JSON.stringify({
          numRecords: i,
          minValues: { id: i },
          maxValues: { id: i + 10 },
          nullCount: { id: 0 },
        }),
      },
    }));
    const file = path.join(dir, 'big.checkpoint.parquet');
    const started = Date.now();
    expect(await writeCheckpointActions(session, [...baseActions(), ...adds], file)).toBe(30_005);
    expect(Date.now() - started).toBeLessThan(10_000);
    const [row] = await session.all(
      `SELECT count(add) AS n, sum(add.size) AS s FROM read_parquet(${str(file)})`,
    );
    expect(Number(row!['n'])).toBe(30_000);
    expect(Number(row!['s'])).toBe(30_000 * 1000 + (29_999 * 30_000) / 2);
  });

  it('refuses commitInfo', async () => {
    await expect(
      writeCheckpointActions(session, [{ commitInfo: {} }], path.join(dir, 'x.parquet')),
    ).rejects.toThrow(/commitInfo/);
  });
});
