/**
 * Reading checkpoint Parquet: Spark's current and 0.x layouts, multi-part, V2 with sidecars,
 * Spark's typed stats columns, and a round trip through tidemark's own checkpoint writer.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Action } from '../../src/delta/actions.js';
import { readCheckpointActions } from '../../src/engine/checkpoint-reader.js';
import { writeCheckpointActions } from '../../src/engine/checkpoint-writer.js';
import { DuckSession } from '../../src/engine/duckdb.js';
import { str } from '../../src/engine/sql.js';
import { sharedTable } from '../helpers/shared-tables.js';

let session: DuckSession;
let dir: string;
beforeAll(async () => {
  session = await DuckSession.open({ threads: 2 });
  dir = await mkdtemp(join(tmpdir(), 'tidemark-ckpt-test-'));
});
afterAll(async () => {
  session.close();
  await rm(dir, { recursive: true, force: true });
});

const logFile = (table: string, name: string) => join(sharedTable(table), '_delta_log', name);
const kinds = (actions: Action[]) => {
  const counts: Record<string, number> = {};
  for (const a of actions) for (const k of Object.keys(a)) counts[k] = (counts[k] ?? 0) + 1;
  return counts;
};

describe('readCheckpointActions', () => {
  it("reads Spark's classic checkpoint: maps as objects, numbers as numbers", async () => {
    const actions = await readCheckpointActions(session, [
      logFile('checkpoint-classic', '00000000000000000010.checkpoint.parquet'),
    ]);
    expect(kinds(actions)).toEqual({ protocol: 1, metaData: 1, add: 6, remove: 5 });
    const protocol = actions.find((a) => 'protocol' in a);
    expect(protocol).toEqual({
      protocol: {
        minReaderVersion: 1,
        minWriterVersion: 2,
        readerFeatures: null,
        writerFeatures: null,
      },
    });
    const add = actions.find((a): a is Extract<Action, { add: unknown }> => 'add' in a)!.add;
    expect(add).toMatchObject({ partitionValues: {}, dataChange: false, deletionVector: null });
    expect(typeof add.size).toBe('number');
    expect(typeof add.modificationTime).toBe('number');
    expect(JSON.parse(add.stats!)).toHaveProperty('numRecords');
    const meta = actions.find(
      (a): a is Extract<Action, { metaData: unknown }> => 'metaData' in a,
    )!.metaData;
    expect(meta).toMatchObject({
      id: 'testId',
      configuration: {},
      partitionColumns: [],
      format: { provider: 'parquet', options: {} },
    });
  });

  it('reads a Spark 0.2 checkpoint (no feature arrays, stray commitInfo column)', async () => {
    const actions = await readCheckpointActions(session, [
      logFile('txn-streaming-checkpoint', '00000000000000000003.checkpoint.parquet'),
    ]);
    expect(kinds(actions)).toEqual({ txn: 1, protocol: 1, metaData: 1, add: 3, remove: 4 });
    expect(actions.find((a) => 'txn' in a)).toEqual({
      txn: {
        appId: 'e4a20b59-dd0e-4c50-b074-e8ae4786df30',
        version: 0,
        lastUpdated: 1564524299648,
      },
    });
  });

  it('reads all parts of a multi-part checkpoint together', async () => {
    const parts = [1, 2].map((p) =>
      logFile(
        'checkpoint-multipart',
        `00000000000000000001.checkpoint.000000000${p}.0000000002.parquet`,
      ),
    );
    const actions = await readCheckpointActions(session, parts);
    expect(actions).toHaveLength(12); // _last_checkpoint says size 12
    expect(kinds(actions)['add']).toBe(10);
  });

  it("returns a V2 checkpoint's checkpointMetadata and sidecar rows (the Delta layer reads the sidecars), and a sidecar's files", async () => {
    const path = logFile(
      'v2-checkpoint-sidecars',
      '00000000000000000002.checkpoint.e8fa2696-9728-4e9c-b285-634743fdd4fb.parquet',
    );
    const actions = await readCheckpointActions(session, [path]);
    expect(kinds(actions)).toEqual({ checkpointMetadata: 1, protocol: 1, metaData: 1, sidecar: 2 });
    expect(actions.find((a) => 'checkpointMetadata' in a)).toMatchObject({
      checkpointMetadata: { version: 2 },
    });
    const sidecars = actions.flatMap((a) => ('sidecar' in a ? [a.sidecar.path] : []));
    const files = await readCheckpointActions(
      session,
      sidecars.map((name) => logFile('v2-checkpoint-sidecars', `_sidecars/${name}`)),
    );
    expect(kinds(files)).toEqual({ add: 4 });
  });

  it('drops the typed stats_parsed / partitionValues_parsed forms and reads paths with glob characters', async () => {
    const path = join(dir, 'odd [name]*?.checkpoint.parquet');
    await session.run(
      `COPY (SELECT {'path': 'a.parquet', 'partitionValues': MAP {'p': '1'}, 'size': 10, 'modificationTime': 5, 'dataChange': false,
                     'stats': '{"numRecords":1}', 'stats_parsed': {'numRecords': 1}, 'partitionValues_parsed': {'p': 1}} AS add)
       TO ${str(path)} (FORMAT parquet)`,
    );
    // A file the path would match as a glob pattern: it must not be read.
    await session.run(
      `COPY (SELECT {'path': 'decoy.parquet'} AS add) TO ${str(join(dir, 'odd nxy.checkpoint.parquet'))} (FORMAT parquet)`,
    );
    expect(await readCheckpointActions(session, [path])).toEqual([
      {
        add: {
          path: 'a.parquet',
          partitionValues: { p: '1' },
          size: 10,
          modificationTime: 5,
          dataChange: false,
          stats: '{"numRecords":1}',
        },
      },
    ]);
  });

  it("round-trips tidemark's own checkpoint writer", async () => {
    const actions: Action[] = [
      {
        protocol: {
          minReaderVersion: 3,
          minWriterVersion: 7,
          readerFeatures: ['timestampNtz'],
          writerFeatures: ['timestampNtz', 'domainMetadata'],
        },
      },
      {
        metaData: {
          id: 'abc',
          format: { provider: 'parquet', options: {} },
          schemaString: '{"type":"struct","fields":[]}',
          partitionColumns: ['p'],
          configuration: { 'delta.checkpointInterval': '10' },
          createdTime: 1700000000000,
        },
      },
      { txn: { appId: 'job', version: 42, lastUpdated: 1700000000001 } },
      { domainMetadata: { domain: 'tidemark.job', configuration: '{"w":1}', removed: false } },
      {
        add: {
          path: 'p=a%20b/f.parquet',
          partitionValues: { p: 'a b', q: null },
          size: 123,
          modificationTime: 9,
          dataChange: false,
          stats: '{"numRecords":3}',
        },
      },
      {
        remove: {
          path: 'old.parquet',
          deletionTimestamp: 8,
          dataChange: true,
          size: 5,
          partitionValues: { p: 'x' },
          extendedFileMetadata: true,
        },
      },
    ];
    const path = join(dir, 'roundtrip.checkpoint.parquet');
    expect(await writeCheckpointActions(session, actions, path)).toBe(actions.length);
    const back = await readCheckpointActions(session, [path]);
    const order = (list: Action[]) =>
      [...list].sort((a, b) => Object.keys(a)[0]!.localeCompare(Object.keys(b)[0]!));
    expect(order(back)).toMatchObject(order(actions));
  });
});
