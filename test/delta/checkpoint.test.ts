import { cp, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Action } from '../../src/delta/actions.js';
import {
  maybeWriteCheckpoint,
  parseIntervalMs,
  deletedFileRetentionMs,
} from '../../src/delta/checkpoint.js';
import { commitWithRetry } from '../../src/delta/commit.js';
import { loadSnapshot } from '../../src/delta/replay.js';
import type { Snapshot } from '../../src/delta/snapshot.js';
import type { CheckpointIO } from '../../src/delta/checkpoint-io.js';
import { DuckSession } from '../../src/engine/duckdb.js';
import { str } from '../../src/engine/sql.js';
import { LocalStorage } from '../../src/storage/local.js';
import { countingStorage } from '../helpers/counting-storage.js';
import { addAction, appendRequest, createRequest, removeAction } from './commit-helpers.js';
import { checkpointIO } from '../../scripts/lib/tables.js';

const NOW = 1_750_000_000_000;
const DAY = 24 * 3600 * 1000;

let session: DuckSession;
let io: CheckpointIO;
let dir: string;
let table: LocalStorage;
beforeAll(async () => {
  session = await DuckSession.open({ threads: 2 });
  io = checkpointIO(session);
});
afterAll(() => session.close());
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'tidemark-checkpoint-'));
  table = new LocalStorage(dir);
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Commit, then checkpoint when due, as DeltaTable.commit does. */
async function commitAndCheckpoint(request: Parameters<typeof commitWithRetry>[1]) {
  const { version } = await commitWithRetry(table, request);
  const snapshot = (await loadSnapshot(table, io, { version }))!;
  return maybeWriteCheckpoint(table, io, snapshot, { now: () => NOW });
}

/** Versions 1..n: each adds two files (partition a/b); some also carry txn, removes and domains. */
async function buildLog(n: number): Promise<void> {
  await commitWithRetry(table, createRequest());
  for (let v = 1; v <= n; v++) {
    const extra: Action[] = [{ txn: { appId: 'job-orders', version: v, lastUpdated: NOW } }];
    if (v === 4) extra.push({ txn: { appId: 'job-other', version: 99, lastUpdated: NOW } });
    if (v === 3)
      extra.push({
        domainMetadata: {
          domain: 'tidemark.job.orders',
          configuration: `{"v":${v}}`,
          removed: false,
        },
      });
    if (v === 5)
      extra.push({
        domainMetadata: { domain: 'tidemark.gone', configuration: '{}', removed: false },
      });
    if (v === 6)
      extra.push({
        domainMetadata: { domain: 'tidemark.gone', configuration: '{}', removed: true },
      });
    if (v === 7)
      extra.push({
        remove: { ...removeAction('p=a/v1-0.parquet').remove, deletionTimestamp: NOW - DAY },
      });
    if (v === 8)
      extra.push({
        remove: { ...removeAction('p=a/v2-0.parquet').remove, deletionTimestamp: NOW - 30 * DAY },
      });
    const paths = [`p=a/v${v}-0.parquet`, `p=a/v${v}-1.parquet`];
    const request = appendRequest(v - 1, [], extra);
    request.actions.push(...paths.map((p, i) => addAction(p, i === 0 ? 'a' : null)));
    request.isBlindAppend = !extra.some((a) => 'remove' in a);
    const outcome = await commitAndCheckpoint(request);
    expect(outcome.written).toBe(v % 10 === 0);
  }
}

/** Snapshot state without the fields a checkpoint legitimately rewrites (dataChange) or nulls. */
function comparable(s: Snapshot): unknown {
  const clean = (v: unknown) =>
    JSON.parse(JSON.stringify(v, (k, x) => (x === null || k === 'dataChange' ? undefined : x)));
  return clean({
    version: s.version,
    protocol: s.protocol,
    metadata: s.metadata,
    files: s.files,
    removes: s.removes,
    txns: [...s.txns.entries()],
    domains: [...s.domains.entries()],
  });
}

describe('maybeWriteCheckpoint', () => {
  it('writes 10.checkpoint.parquet and _last_checkpoint after the 10th commit', async () => {
    await buildLog(12);
    const names = await readdir(path.join(dir, '_delta_log'));
    expect(names.filter((n) => n.includes('checkpoint'))).toEqual([
      '00000000000000000010.checkpoint.parquet',
      '_last_checkpoint',
    ]);
    const hint = JSON.parse(await readFile(path.join(dir, '_delta_log/_last_checkpoint'), 'utf8'));
    // protocol + metaData + 2 txns + 1 domain + 18 live adds + 1 unexpired remove
    expect(hint).toMatchObject({ version: 10, size: 24, numOfAddFiles: 18 });
    expect(hint.sizeInBytes).toBeGreaterThan(0);
  });

  it('a reopen reads the checkpoint plus at most 9 commits', async () => {
    await buildLog(19);
    const counted = countingStorage(table);
    const snapshot = (await loadSnapshot(counted, io))!;
    expect(snapshot.version).toBe(19);
    const jsonReads = counted.calls
      .filter((c) => c.method === 'read' && c.key.endsWith('.json'))
      .map((c) => c.key);
    expect(jsonReads).toHaveLength(9);
    expect(jsonReads.every((k) => Number(path.basename(k, '.json')) > 10)).toBe(true);
    expect(snapshot.files).toHaveLength(36);
  });

  it('the checkpoint is Spark-shaped: one action per row in the six action columns', async () => {
    await buildLog(10);
    const file = str(path.join(dir, '_delta_log/00000000000000000010.checkpoint.parquet'));
    const columns = await session.all(
      `SELECT column_name FROM (DESCRIBE SELECT * FROM read_parquet(${file}))`,
    );
    expect(columns.map((c) => c['column_name'])).toEqual([
      'txn',
      'add',
      'remove',
      'metaData',
      'protocol',
      'domainMetadata',
    ]);
    const [counts] = await session.all(
      `SELECT count(txn) AS txn, count(add) AS adds, count(remove) AS removes, count(metaData) AS meta,
              count(protocol) AS proto, count(domainMetadata) AS domains, count(*) AS total,
              bool_and(coalesce(add.dataChange, false) = false) AS no_data_change
       FROM read_parquet(${file})`,
    );
    expect(counts).toEqual({
      txn: 2n,
      adds: 18n,
      removes: 1n,
      meta: 1n,
      proto: 1n,
      domains: 1n,
      total: 24n,
      no_data_change: true,
    });
    const [proto] = await session.allJson(
      `SELECT protocol FROM read_parquet(${file}) WHERE protocol IS NOT NULL`,
    );
    expect(proto!['protocol']).toEqual({
      minReaderVersion: 1,
      minWriterVersion: 2,
      readerFeatures: null,
      writerFeatures: null,
    });
  });

  it('keeps txns, live domains and unexpired removes; drops expired removes and removed domains', async () => {
    await buildLog(10);
    const snapshot = (await loadSnapshot(table, io))!;
    expect(snapshot.txns.get('job-orders')?.version).toBe(10);
    expect(snapshot.txns.get('job-other')?.version).toBe(99);
    expect([...snapshot.domains.keys()]).toEqual(['tidemark.job.orders']);
    expect(snapshot.removes.map((t) => t.path)).toEqual(['p=a/v1-0.parquet']);
    expect(snapshot.files.map((f) => f.path)).not.toContain('p=a/v2-0.parquet');
  });

  it('loadSnapshot gives the same state with and without the checkpoint', async () => {
    await buildLog(13);
    const withCheckpoint = (await loadSnapshot(table, io))!;
    const copy = `${dir}-nocp`;
    await cp(dir, copy, { recursive: true });
    try {
      await rm(path.join(copy, '_delta_log/00000000000000000010.checkpoint.parquet'));
      await rm(path.join(copy, '_delta_log/_last_checkpoint'));
      const fromJson = (await loadSnapshot(new LocalStorage(copy), io))!;
      const expected = comparable(fromJson) as { removes: unknown[] };
      // The replay without a checkpoint still holds the expired remove; the checkpoint dropped it.
      expected.removes = expected.removes.filter(
        (t) => (t as { path: string }).path !== 'p=a/v2-0.parquet',
      );
      expect(comparable(withCheckpoint)).toEqual(expected);
    } finally {
      await rm(copy, { recursive: true, force: true });
    }
  });

  it('follows delta.checkpointInterval', async () => {
    const create = createRequest();
    const meta = create.actions[1] as Extract<Action, { metaData: unknown }>;
    meta.metaData.configuration = { 'delta.checkpointInterval': '3' };
    await commitWithRetry(table, create);
    const outcomes = [];
    for (let v = 1; v <= 6; v++)
      outcomes.push(
        (await commitAndCheckpoint(appendRequest(v - 1, [`p=a/${v}.parquet`]))).written,
      );
    expect(outcomes).toEqual([false, false, true, false, false, true]);
    expect(
      JSON.parse(await readFile(path.join(dir, '_delta_log/_last_checkpoint'), 'utf8')).version,
    ).toBe(6);
  });

  it('does not move _last_checkpoint backwards', async () => {
    await buildLog(10);
    await table.write('_delta_log/_last_checkpoint', JSON.stringify({ version: 20, size: 1 }));
    const snapshot = (await loadSnapshot(table, io, { version: 10 }))!;
    await rm(path.join(dir, '_delta_log/00000000000000000010.checkpoint.parquet'));
    expect(await maybeWriteCheckpoint(table, io, snapshot)).toMatchObject({
      written: true,
      version: 10,
    });
    expect(
      JSON.parse(await readFile(path.join(dir, '_delta_log/_last_checkpoint'), 'utf8')).version,
    ).toBe(20);
  });

  it('returns a failure instead of throwing (fault injected: an IO whose write fails)', async () => {
    await buildLog(10);
    const snapshot = (await loadSnapshot(table, io))!;
    await rm(path.join(dir, '_delta_log/00000000000000000010.checkpoint.parquet'));
    const broken: CheckpointIO = {
      ...io,
      writeActions: () => Promise.reject(new Error('disk full')),
    };
    const outcome = await maybeWriteCheckpoint(table, broken, snapshot);
    expect(outcome).toMatchObject({ written: false, reason: 'failed' });
    expect(String((outcome as { error: unknown }).error)).toContain('disk full');
    expect((await loadSnapshot(table, io))!.version).toBe(10);
  });
});

describe('retention of removes (delta.deletedFileRetentionDuration)', () => {
  it('parses Spark intervals loosely', () => {
    expect(parseIntervalMs('interval 1 weeks')).toBe(7 * DAY);
    expect(parseIntervalMs('interval 2 days 12 hours')).toBe(2.5 * DAY);
    expect(parseIntervalMs('30 minutes')).toBe(30 * 60_000);
    expect(parseIntervalMs('INTERVAL 1 WEEK')).toBe(7 * DAY);
    expect(parseIntervalMs('interval 1 month')).toBeNull();
    expect(parseIntervalMs('soon')).toBeNull();
    expect(deletedFileRetentionMs({})).toBe(7 * DAY);
    expect(
      deletedFileRetentionMs({ 'delta.deletedFileRetentionDuration': 'interval 3 days' }),
    ).toBe(3 * DAY);
    expect(deletedFileRetentionMs({ 'delta.deletedFileRetentionDuration': 'garbage' })).toBe(
      7 * DAY,
    );
  });
});
