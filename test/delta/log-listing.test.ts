/**
 * Finding the snapshot to replay on copies of real tables: gaps, corrupt or stale
 * `_last_checkpoint`, incomplete multi-part checkpoints, cleaned-up logs, and how much
 * of the log is read.
 */
import { mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeltaLogError } from '../../src/errors.js';
import { commitKey } from '../../src/delta/log-files.js';
import {
  listLog,
  locateSnapshot,
  planReplay,
  readLastCheckpoint,
} from '../../src/delta/log-listing.js';
import { loadSnapshot } from '../../src/delta/replay.js';
import { DuckSession } from '../../src/engine/duckdb.js';
import { LocalStorage } from '../../src/storage/local.js';
import { countingStorage } from '../helpers/counting-storage.js';
import { copySharedTable, sharedTable } from '../helpers/shared-tables.js';
import { checkpointIO } from '../../scripts/lib/tables.js';

const LOG = '_delta_log';
let session: DuckSession;
const copies: string[] = [];

beforeAll(async () => {
  session = await DuckSession.open({ threads: 2 });
});
afterAll(async () => {
  session.close();
  await Promise.all(copies.map((dir) => rm(dir, { recursive: true, force: true })));
});

async function copy(name: string): Promise<string> {
  const dir = await copySharedTable(name);
  copies.push(dir);
  return dir;
}

async function load(dir: string, version?: number) {
  return loadSnapshot(new LocalStorage(dir), checkpointIO(session), { version });
}

describe('locating the snapshot', () => {
  it('a missing commit between versions is a DeltaLogError naming the version', async () => {
    const dir = await copy('simple-table-updates');
    await unlink(join(dir, commitKey(2)));
    const err = await load(dir).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DeltaLogError);
    expect((err as DeltaLogError).context.version).toBe(2);
    expect((err as Error).message).toMatch(/commit 2 is missing/);
    // Versions below the gap can still be read.
    expect((await load(dir, 1))?.files).toHaveLength(22);
  });

  it('a gap after the checkpoint is an error; commits before it may be gone', async () => {
    const dir = await copy('checkpoint-classic');
    for (let v = 0; v <= 9; v++) await unlink(join(dir, commitKey(v)));
    expect((await load(dir))?.files).toHaveLength(7);
    // Time travel before the oldest checkpoint needs the deleted commits.
    await expect(load(dir, 5)).rejects.toThrow(DeltaLogError);
    await unlink(join(dir, commitKey(12)));
    await expect(load(dir)).rejects.toThrow(
      /commit 12 is missing, so version 13 cannot be rebuilt from checkpoint 10/,
    );
  });

  it('a corrupt _last_checkpoint falls back to listing the log', async () => {
    const dir = await copy('checkpoint-classic');
    await writeFile(join(dir, LOG, '_last_checkpoint'), '{"version":10,"si');
    const storage = new LocalStorage(dir);
    expect(await readLastCheckpoint(storage)).toBeNull();
    const snapshot = await load(dir);
    expect({ version: snapshot?.version, files: snapshot?.files.length }).toEqual({
      version: 13,
      files: 7,
    });
  });

  it('a stale _last_checkpoint (no such checkpoint, or beyond the log) falls back to listing', async () => {
    const dir = await copy('checkpoint-classic');
    for (const hint of [
      '{"version":7,"size":3}',
      '{"version":99,"size":3}',
      '{"version":-1}',
      '[]',
    ]) {
      await writeFile(join(dir, LOG, '_last_checkpoint'), hint);
      const plan = await locateSnapshot(new LocalStorage(dir));
      expect({ hint, version: plan?.version, checkpoint: plan?.checkpoint?.version }).toEqual({
        hint,
        version: 13,
        checkpoint: 10,
      });
    }
  });

  it('an incomplete multi-part checkpoint is ignored', async () => {
    const dir = await copy('checkpoint-multipart');
    await unlink(join(dir, LOG, '00000000000000000001.checkpoint.0000000002.0000000002.parquet'));
    const plan = await locateSnapshot(new LocalStorage(dir));
    expect(plan?.checkpoint).toBeNull();
    expect(plan?.commits.map((c) => c.version)).toEqual([0, 1]);
    expect((await load(dir))?.files).toHaveLength(10);
  });

  it('the parts of a complete multi-part checkpoint are used in part order', async () => {
    const listing = await listLog(new LocalStorage(sharedTable('checkpoint-multipart')));
    expect(listing.checkpoints).toEqual([
      {
        version: 1,
        kind: 'multipart',
        keys: [1, 2].map(
          (p) => `${LOG}/00000000000000000001.checkpoint.000000000${p}.0000000002.parquet`,
        ),
      },
    ]);
  });

  it('a V2 (UUID-named) checkpoint is a replay base; its sidecars are not checkpoints', async () => {
    const listing = await listLog(new LocalStorage(sharedTable('v2-checkpoint-sidecars')));
    expect(listing.checkpoints.map((c) => c.kind)).toEqual(['v2']);
    const plan = planReplay(listing, 'file:///t/');
    expect(plan.checkpoint).toMatchObject({ version: 2, kind: 'v2' });
    expect(plan.commits).toHaveLength(0);
    // Time travel below it replays the commits.
    expect(planReplay(listing, 'file:///t/', 1)).toMatchObject({
      checkpoint: null,
      commits: [{ version: 0 }, { version: 1 }],
    });
  });

  it('the uncommitted commit in _delta_log/.tmp is not a version', async () => {
    const listing = await listLog(new LocalStorage(sharedTable('simple-table-updates')));
    expect(listing.commits.map((c) => c.version)).toEqual([0, 1, 2, 3, 4]);
  });

  it('a folder without a Delta log is no table (null), not an error', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tidemark-empty-'));
    copies.push(dir);
    expect(await load(dir)).toBeNull();
    await writeFile(join(dir, 'data.parquet'), 'not delta');
    expect(await load(dir)).toBeNull();
  });

  it('no checkpoint and no commit 0 is a DeltaLogError', async () => {
    const dir = await copy('partition-escaped-chars');
    await unlink(join(dir, commitKey(0)));
    await expect(load(dir)).rejects.toThrow(/commit 0 is missing/);
  });
});

describe('how much of the log is read', () => {
  it('with _last_checkpoint: one tail listing, the checkpoint and only the later commits', async () => {
    const storage = countingStorage(new LocalStorage(sharedTable('checkpoint-classic')));
    const snapshot = await loadSnapshot(storage, checkpointIO(session));
    expect(snapshot?.version).toBe(13);
    const reads = storage.calls.filter((c) => c.method === 'read').map((c) => c.key);
    expect(reads.sort()).toEqual([
      commitKey(11),
      commitKey(12),
      commitKey(13),
      `${LOG}/_last_checkpoint`,
    ]);
    expect(storage.counts.list).toBe(1);
  });

  it('time travel before the hinted checkpoint lists the whole log and reads from commit 0', async () => {
    const storage = countingStorage(new LocalStorage(sharedTable('checkpoint-classic')));
    await loadSnapshot(storage, checkpointIO(session), { version: 3 });
    const reads = storage.calls.filter((c) => c.method === 'read').map((c) => c.key);
    expect(reads.filter((k) => k.endsWith('.json')).sort()).toEqual([0, 1, 2, 3].map(commitKey));
  });
});
