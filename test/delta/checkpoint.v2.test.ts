/**
 * Checkpoints of tables with the `v2Checkpoint` feature: UUID-named, with checkpointMetadata and a
 * sidecar, never classic or multi-part; read back to the same state as the JSON replay, also for a
 * table without files (no sidecar).
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Action, AddFile } from '../../src/delta/actions.js';
import { maybeWriteCheckpoint } from '../../src/delta/checkpoint.js';
import { listLog } from '../../src/delta/log-listing.js';
import { loadSnapshot, readCommits, SnapshotBuilder } from '../../src/delta/replay.js';
import type { Snapshot } from '../../src/delta/snapshot.js';
import type { StructType } from '../../src/delta/schema.js';
import type { CommitRequest } from '../../src/delta/transaction.js';
import { DuckSession } from '../../src/engine/duckdb.js';
import { LocalStorage } from '../../src/storage/local.js';
import { checkpointIO, openTable } from '../../scripts/lib/tables.js';

const SCHEMA: StructType = {
  type: 'struct',
  fields: [{ name: 'id', type: 'long', nullable: true, metadata: {} }],
};
const V2 = { 'delta.checkpointPolicy': 'v2', 'delta.checkpointInterval': '2' };

let session: DuckSession;
let dir: string;
let storage: LocalStorage;
beforeAll(async () => {
  session = await DuckSession.open({ threads: 1 });
});
afterAll(() => session.close());
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'tidemark-v2cp-'));
  storage = new LocalStorage(dir);
});
afterEach(() => rm(dir, { recursive: true, force: true }));

function request(readVersion: number, actions: Action[]): CommitRequest {
  return {
    actions,
    operation: 'WRITE',
    read: { readVersion, partitions: [], files: [], appIds: [] },
    isBlindAppend: false,
  };
}

function add(name: string): AddFile {
  return {
    path: `${name}.parquet`,
    partitionValues: {},
    size: 10,
    modificationTime: 1,
    dataChange: true,
    stats: '{"numRecords":1}',
  };
}

/** The state replayed from the JSON commits alone. */
async function fromCommits(version: number): Promise<Snapshot> {
  const { commits } = await listLog(storage);
  const builder = new SnapshotBuilder(storage.uri);
  for (const actions of await readCommits(
    storage,
    commits.filter((c) => c.version <= version),
  ))
    builder.apply(actions);
  return builder.build(version);
}

function comparable(s: Snapshot): unknown {
  const clean = (v: unknown) =>
    JSON.parse(JSON.stringify(v, (k, x) => (x === null || k === 'dataChange' ? undefined : x)));
  return clean({
    protocol: s.protocol,
    metadata: s.metadata,
    files: s.files,
    removes: s.removes,
    txns: [...s.txns],
    domains: [...s.domains],
  });
}

describe('V2 checkpoints', () => {
  it('a table created with delta.checkpointPolicy=v2 gets UUID-named checkpoints with a sidecar, read back to the JSON state', async () => {
    const table = openTable(storage, session, { now: () => 1_750_000_000_000 });
    await table.create({ schema: SCHEMA, configuration: V2 });
    await table.commit(
      request(0, [{ add: add('a') }, { add: add('b') }, { txn: { appId: 'job', version: 1 } }]),
    );
    const second = await table.commit(
      request(1, [
        {
          remove: {
            path: 'a.parquet',
            dataChange: true,
            deletionTimestamp: 1_750_000_000_000,
            extendedFileMetadata: true,
            partitionValues: {},
            size: 10,
          },
        },
        { add: add('c') },
        { domainMetadata: { domain: 'tidemark.job.x', configuration: '{"k":1}', removed: false } },
      ]),
    );
    expect(second.checkpoint).toMatchObject({ written: true, version: 2, numOfAddFiles: 2 });
    const names = await readdir(path.join(dir, '_delta_log'));
    expect(names.filter((n) => n.includes('.checkpoint.'))).toEqual([
      expect.stringMatching(/^00000000000000000002\.checkpoint\.[0-9a-f-]{36}\.json$/),
    ]);
    expect(await readdir(path.join(dir, '_delta_log/_sidecars'))).toEqual([
      expect.stringMatching(/^[0-9a-f-]{36}\.parquet$/),
    ]);
    const lines = (
      await readFile(
        path.join(
          dir,
          '_delta_log',
          names.find((n) => n.includes('.checkpoint.'))!,
        ),
        'utf8',
      )
    )
      .trim()
      .split('\n');
    expect(Object.keys(JSON.parse(lines[0]!) as object)).toEqual(['checkpointMetadata']);
    expect(lines.map((l) => Object.keys(JSON.parse(l) as object)[0]).sort()).toEqual([
      'checkpointMetadata',
      'domainMetadata',
      'metaData',
      'protocol',
      'sidecar',
      'txn',
    ]);
    const last = JSON.parse(
      await readFile(path.join(dir, '_delta_log/_last_checkpoint'), 'utf8'),
    ) as Record<string, unknown>;
    // checkpointMetadata, protocol, metaData, txn, domain, sidecar + 2 adds + 1 remove.
    expect(last).toEqual({
      version: 2,
      size: 9,
      sizeInBytes: expect.any(Number),
      numOfAddFiles: 2,
    });
    const viaCheckpoint = (await loadSnapshot(storage, checkpointIO(session)))!;
    expect(comparable(viaCheckpoint)).toEqual(comparable(await fromCommits(2)));
    // A checkpoint exists for version 2 now, of whatever kind: none is written again.
    expect(
      await maybeWriteCheckpoint(storage, checkpointIO(session), viaCheckpoint, { interval: 2 }),
    ).toEqual({ written: false, reason: 'exists' });
  });

  it('a table without files gets a V2 checkpoint without sidecars', async () => {
    const table = openTable(storage, session, { checkpointInterval: 1 });
    await table.create({ schema: SCHEMA, configuration: V2 });
    const result = await table.commit(request(0, [{ txn: { appId: 'job', version: 1 } }]));
    expect(result.checkpoint).toMatchObject({
      written: true,
      version: 1,
      size: 4,
      numOfAddFiles: 0,
    });
    expect((await readdir(path.join(dir, '_delta_log'))).some((n) => n === '_sidecars')).toBe(
      false,
    );
    expect(comparable((await loadSnapshot(storage, checkpointIO(session)))!)).toEqual(
      comparable(await fromCommits(1)),
    );
  });
});
