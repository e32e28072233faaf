/**
 * What table features stamp on each commit attempt: fresh row ids and the high-water mark (row
 * tracking), and the in-commit timestamp, first action and monotonic; both recounted from the
 * winners after a lost race, never kept from the attempt that lost.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Action, AddFile } from '../../src/delta/actions.js';
import { checkConflicts } from '../../src/delta/conflicts.js';
import { loadSnapshot } from '../../src/delta/replay.js';
import { assignRowIds, highWaterMarkDomain } from '../../src/delta/row-tracking.js';
import type { StructType } from '../../src/delta/schema.js';
import type { CommitRequest } from '../../src/delta/transaction.js';
import { DuckSession } from '../../src/engine/duckdb.js';
import { DeltaLogError } from '../../src/errors.js';
import { LocalStorage } from '../../src/storage/local.js';
import { checkpointIO, openTable } from '../../scripts/lib/tables.js';
import { commitInfoOf, readCommit } from './commit-helpers.js';

const SCHEMA: StructType = {
  type: 'struct',
  fields: [{ name: 'id', type: 'long', nullable: true, metadata: {} }],
};

let session: DuckSession;
let dir: string;
let storage: LocalStorage;
beforeAll(async () => {
  session = await DuckSession.open({ threads: 1 });
});
afterAll(() => session.close());
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'tidemark-features-'));
  storage = new LocalStorage(dir);
});
afterEach(() => rm(dir, { recursive: true, force: true }));

function add(name: string, rows: number, extra: Partial<AddFile> = {}): Action {
  return {
    add: {
      path: `${name}.parquet`,
      partitionValues: {},
      size: 10,
      modificationTime: 1,
      dataChange: true,
      stats: `{"numRecords":${rows}}`,
      ...extra,
    },
  };
}

function append(readVersion: number, actions: Action[]): CommitRequest {
  return {
    actions,
    operation: 'WRITE',
    read: { readVersion, partitions: [], files: [], appIds: [] },
    isBlindAppend: true,
  };
}

const addsOf = (actions: Action[] | null) =>
  (actions ?? []).flatMap((a) => ('add' in a ? [a.add] : []));
const markOf = (actions: Action[] | null) =>
  (actions ?? []).flatMap((a) =>
    'domainMetadata' in a && a.domainMetadata.domain === 'delta.rowTracking'
      ? [JSON.parse(a.domainMetadata.configuration)]
      : [],
  );

describe('row ids per commit', () => {
  it('new adds get baseRowId counted from the mark in commit order, and the version; re-added files keep theirs; the domain only when the mark moves', () => {
    const { actions, highWaterMark } = assignRowIds(
      [add('a', 3), add('dv', 4, { baseRowId: 0, defaultRowCommitVersion: 0 }), add('b', 2)],
      {
        version: 7,
        highWaterMark: 9,
        uri: 'file:///t/',
      },
    );
    expect(addsOf(actions).map((a) => [a.path, a.baseRowId, a.defaultRowCommitVersion])).toEqual([
      ['a.parquet', 10, 7],
      ['dv.parquet', 0, 0],
      ['b.parquet', 13, 7],
    ]);
    expect(highWaterMark).toBe(14);
    expect(actions.at(-1)).toEqual({ domainMetadata: highWaterMarkDomain(14) });
    expect(highWaterMarkDomain(14).configuration).toBe('{"rowIdHighWaterMark":14}');
    // Nothing new: no domain.
    expect(
      assignRowIds([add('dv', 4, { baseRowId: 0, defaultRowCommitVersion: 0 })], {
        version: 8,
        highWaterMark: 14,
        uri: 'x',
      }).actions,
    ).toHaveLength(1);
    // A new add without a row count cannot get ids.
    expect(() =>
      assignRowIds([{ add: { ...(add('n', 1) as { add: AddFile }).add, stats: null } }], {
        version: 8,
        highWaterMark: 14,
        uri: 'file:///t/',
      }),
    ).toThrow(DeltaLogError);
  });

  it('two writers of the delta.rowTracking domain do not conflict (the loser recounts)', () => {
    const domain = { domainMetadata: highWaterMarkDomain(3) };
    const ours = {
      actions: [domain],
      isBlindAppend: false,
      changesMetadata: false,
      changesProtocol: false,
    };
    expect(
      checkConflicts({ readVersion: 0, partitions: [], files: [], appIds: [] }, ours, {
        version: 1,
        actions: [domain],
      }),
    ).toBeNull();
  });

  it('a commit that loses the race recounts its row ids and version from the winner', async () => {
    const table = openTable(storage, session);
    await table.create({ schema: SCHEMA, configuration: { 'delta.enableRowTracking': 'true' } });
    const winner = await table.commit(append(0, [add('w1', 1), add('w2', 1)]));
    const loser = await table.commit(append(0, [add('l1', 5)]));
    expect([winner.version, loser.version, loser.attempts]).toEqual([1, 2, 2]);
    expect(addsOf(await readCommit(storage, 1)).map((a) => a.baseRowId)).toEqual([0, 1]);
    expect(
      addsOf(await readCommit(storage, 2)).map((a) => [a.baseRowId, a.defaultRowCommitVersion]),
    ).toEqual([[2, 2]]);
    expect(markOf(await readCommit(storage, 2))).toEqual([{ rowIdHighWaterMark: 6 }]);
  });
});

describe('in-commit timestamps', () => {
  /** A table with ICTs whose writer's clock is `clock.now`. */
  function ictTable(clock: { now: number }, opts: { checkpointInterval?: number } = {}) {
    return openTable(storage, session, { now: () => clock.now, ...opts });
  }

  it('every commit starts with commitInfo carrying max(clock, previous + 1), also when the clock runs behind', async () => {
    const clock = { now: 10_000 };
    const table = ictTable(clock, { checkpointInterval: 2 });
    await table.create({
      schema: SCHEMA,
      configuration: { 'delta.enableInCommitTimestamps': 'true' },
    });
    clock.now = 5_000; // behind the previous commit
    await table.commit(append(0, [add('a', 1)]));
    clock.now = 20_000;
    await table.commit(append(1, [add('b', 1)]));
    const stamps = [];
    for (const v of [0, 1, 2]) {
      const info = commitInfoOf((await readCommit(storage, v))!);
      expect(info['timestamp'], `v${v}`).toBe(info['inCommitTimestamp']);
      stamps.push(info['inCommitTimestamp']);
    }
    expect(stamps).toEqual([10_000, 10_001, 20_000]);
    expect((await readCommit(storage, 0))![1]).toMatchObject({
      protocol: { minWriterVersion: 7, writerFeatures: ['inCommitTimestamp'] },
    });
    // Version 2 has a checkpoint (interval 2), which keeps no commitInfo: its timestamp comes from its commit file.
    const snapshot = (await loadSnapshot(storage, checkpointIO(session)))!;
    expect(snapshot.version).toBe(2);
    expect(snapshot.inCommitTimestamp).toBe(20_000);
  });

  it('a commit that loses the race takes a timestamp after the winner, whose clock ran ahead', async () => {
    const ours = { now: 1_000 };
    const table = ictTable(ours);
    await table.create({
      schema: SCHEMA,
      configuration: { 'delta.enableInCommitTimestamps': 'true' },
    });
    const ahead = { now: 90_000 };
    await openTable(storage, session, { now: () => ahead.now }).commit(append(0, [add('w', 1)]));
    ours.now = 2_000;
    const result = await table.commit(append(0, [add('l', 1)]));
    expect(result).toMatchObject({ version: 2, attempts: 2 });
    expect(commitInfoOf((await readCommit(storage, 2))!)['inCommitTimestamp']).toBe(90_001);
  });

  it('tables without the property get no in-commit timestamp', async () => {
    const table = openTable(storage, session);
    await table.create({ schema: SCHEMA });
    expect(commitInfoOf((await readCommit(storage, 0))!)).not.toHaveProperty('inCommitTimestamp');
  });
});
