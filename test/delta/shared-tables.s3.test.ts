/**
 * Shared tables read through S3 (s3rver on 127.0.0.1): listing with StartAfter, the
 * checkpoint and data files downloaded to temp files, keys with spaces and `%`.
 */
import { readdir } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSnapshot } from '../../src/delta/replay.js';
import { DuckSession } from '../../src/engine/duckdb.js';
import { withTableScan } from '../../src/engine/scan.js';
import type { Storage } from '../../src/storage/storage.js';
import { countingStorage } from '../helpers/counting-storage.js';
import { startS3rver, type S3rverHandle } from '../helpers/s3rver.js';
import { sharedTable } from '../helpers/shared-tables.js';
import { checkpointIO, scanSource } from '../../scripts/lib/tables.js';

let s3: S3rverHandle;
let session: DuckSession;
beforeAll(async () => {
  s3 = await startS3rver();
  session = await DuckSession.open({ threads: 2 });
});
afterAll(async () => {
  session?.close();
  await s3?.stop();
});

/** Upload a shared table, file by file, under a fresh prefix. */
async function uploadTable(name: string): Promise<Storage> {
  const storage = s3.makeStorage();
  const root = sharedTable(name);
  const files = (await readdir(root, { recursive: true, withFileTypes: true })).filter((e) =>
    e.isFile(),
  );
  for (const f of files) {
    const path = join(f.parentPath, f.name);
    await storage.upload(relative(root, path).split('\\').join('/'), path);
  }
  return storage;
}

async function summary(storage: Storage, sumColumn: string) {
  const snapshot = await loadSnapshot(storage, checkpointIO(session));
  const [row] = await withTableScan(session, scanSource(storage), snapshot!, (rel) =>
    session.allJson(`SELECT count(*) AS n, CAST(sum(${sumColumn}) AS VARCHAR) AS s FROM (${rel})`),
  );
  return { version: snapshot!.version, files: snapshot!.files.length, ...row };
}

describe('shared tables on S3', () => {
  it('checkpoint-classic: tail listing from _last_checkpoint, checkpoint downloaded', async () => {
    const storage = countingStorage(await uploadTable('checkpoint-classic'));
    expect(await summary(storage, 'id')).toEqual({ version: 13, files: 7, n: '41', s: '1470' });
    expect(storage.counts.download).toBe(1 + 7); // the checkpoint, then the 7 data files
  });

  it('v2-checkpoint-sidecars: the UUID-named checkpoint and its two sidecars downloaded, no commit read', async () => {
    const storage = countingStorage(await uploadTable('v2-checkpoint-sidecars'));
    expect(await summary(storage, 'id')).toEqual({ version: 2, files: 4, n: '10', s: '45' });
    expect(storage.counts.download).toBe(1 + 2 + 4); // the checkpoint, its sidecars, then the 4 data files
  });

  it('partition-all-types-nulls: keys with spaces and %, decoded once', async () => {
    expect(await summary(await uploadTable('partition-all-types-nulls'), 'as_int')).toEqual({
      version: 0,
      files: 3,
      n: '3',
      s: '1',
    });
  });

  it('simple-table-updates: the uncommitted .tmp commit is ignored', async () => {
    expect(await summary(await uploadTable('simple-table-updates'), 'id')).toEqual({
      version: 4,
      files: 5,
      n: '3',
      s: '21',
    });
  });
});
