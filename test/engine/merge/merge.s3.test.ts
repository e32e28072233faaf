/**
 * A MERGE end to end on S3Storage (s3rver): data files are downloaded to the spool folder for the
 * key scan and rewrite, new files uploaded, and the table reads back. s3rver ignores
 * If-None-Match, so the table is opened as the only writer.
 */
import { readdir } from 'node:fs/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DuckSession } from '../../../src/engine/duckdb.js';
import { Spool } from '../../../src/spool/spool.js';
import { startS3rver, type S3rverHandle } from '../../helpers/s3rver.js';
import { fixtureOn, makeBatch, merge, readRows, snapshotOf } from './helpers.js';

let s3: S3rverHandle;
let session: DuckSession;
let spool: Spool;
beforeAll(async () => {
  s3 = await startS3rver();
  session = await DuckSession.open({ threads: 2 });
  spool = await Spool.create('merge-test');
});
afterAll(async () => {
  session?.close();
  await s3?.stop();
  await spool?.close();
});

it('merges into a partitioned table on S3 and reads it back', async () => {
  const f = fixtureOn(session, s3.makeStorage(), { singleWriter: true });
  const KEY = { keyColumns: ['id'], orderBy: 'v', spool };
  await makeBatch(
    session,
    'seed',
    `SELECT range AS id, 'p' || (range % 2) AS part, 'x' AS name, 1 AS v FROM range(20)`,
  );
  expect(await merge(f, { batch: 'seed', ...KEY, partitionBy: ['part'] })).toMatchObject({
    version: 0,
    inserted: 20,
    filesAdded: 2,
  });
  const before = await snapshotOf(f);
  await makeBatch(
    session,
    'b',
    `SELECT * FROM (VALUES (3, 'p1', 'y', 2), (5, 'p1', 'stale', 0), (21, 'p1', 'new', 1)) t(id, part, name, v)`,
  );
  const r = await merge(f, { batch: 'b', ...KEY });
  // Both files' key ranges hold 3 and 5 (a key may sit in any partition): both are scanned, only p1's changes.
  expect(r).toMatchObject({
    version: 1,
    updated: 1,
    skippedStale: 1,
    inserted: 1,
    filesScanned: 2,
    filesRemoved: 1,
    filesAdded: 2,
  });
  const after = await snapshotOf(f);
  const p0 = before.files.find((x) => x.partitionValues['part'] === 'p0')!;
  expect(after.files.map((x) => x.path)).toContain(p0.path);
  const rows = await readRows(f, 'id');
  expect(rows).toHaveLength(21);
  expect(rows.filter((x) => x['name'] !== 'x')).toEqual([
    { id: '3', part: 'p1', name: 'y', v: 2 },
    { id: '21', part: 'p1', name: 'new', v: 1 },
  ]);
  expect(await readdir(spool.dir)).toEqual([]); // the MERGE removed its downloads and written files
});
