/**
 * VACUUM end to end on local disk and on s3rver: exactly the unneeded, old files go; live files,
 * files removed within the retention, young orphans and everything hidden stay. Change data
 * files (`_change_data/`, which no snapshot lists) go once they are older than the retention. File ages are
 * set by back-dating LastModified (utimes) and by the deletionTimestamp of committed removes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeLogPath } from '../../src/delta/partition-decode.js';
import { removeFileFor } from '../../src/delta/file-actions.js';
import type { DeltaTable } from '../../src/delta/table.js';
import { DuckSession } from '../../src/engine/duckdb.js';
import { ConfigError } from '../../src/errors.js';
import { vacuumTable } from '../../src/maintenance/vacuum.js';
import { startS3rver, type S3rverHandle } from '../helpers/s3rver.js';
import {
  append,
  keysUnder,
  latest,
  localBackend,
  rowsOf,
  s3Backend,
  type Place,
} from './helpers.js';

const HOUR = 3600 * 1000;
const DAY = 24 * HOUR;

let s3: S3rverHandle;
let session: DuckSession;
beforeAll(async () => {
  [s3, session] = await Promise.all([startS3rver(), DuckSession.open({ threads: 2 })]);
});
afterAll(async () => {
  session?.close();
  await s3?.stop();
});

const rows = (from: number) =>
  `SELECT (${from} + range)::BIGINT AS id, ['a', 'b'][1 + range % 2] AS p FROM range(4)`;

/** Commit removes of `paths` stamped `ago` ms before now (a DELETE of whole files). */
async function removeFiles(
  table: DeltaTable,
  removals: Array<[path: string, ago: number]>,
): Promise<void> {
  const snapshot = await latest(table);
  const now = Date.now();
  const actions = removals.map(([path, ago]) => ({
    remove: removeFileFor(
      snapshot.files.find((f) => f.path === path)!,
      { deletionTimestamp: now - ago },
    ),
  }));
  await table.commit({
    actions,
    operation: 'DELETE',
    read: {
      readVersion: snapshot.version,
      partitions: 'all',
      files: removals.map(([p]) => p),
      appIds: [],
    },
    isBlindAppend: false,
  });
}

/**
 * A table in every state VACUUM must tell apart; everything is back-dated 30 days unless said.
 * Returns the keys VACUUM (7 days) must delete, and those it deletes with no retention at all.
 */
async function scene(place: Place) {
  const table = place.open(session);
  for (const from of [0, 10, 20]) await append(session, table, rows(from), ['p']);
  const files = (await latest(table)).files.map((f) => f.path);
  const [removedOld, removedRecent, removedSkewed] = files;
  await removeFiles(table, [
    [removedOld!, 8 * DAY],
    [removedRecent!, 1 * DAY],
    [removedSkewed!, 8 * DAY], // its object is young (below): the writer's clock and the store's disagree
  ]);
  const extra = {
    orphanOld: 'p=a/part-99999-orphan-old.c000.zstd.parquet',
    orphanNew: 'p=b/part-99999-orphan-new.c000.zstd.parquet',
    orphanAtRoot: 'part-99999-orphan-root.parquet',
    state: '_tidemark/state/job.json',
    cdcOld: '_change_data/cdc-00000-old.c000.zstd.parquet',
    cdcNew: '_change_data/p=a/cdc-00000-new.c000.zstd.parquet',
    hiddenFile: 'p=a/.part-00000.crc',
    hiddenFolder: '.staging/part-1.parquet',
  };
  await Promise.all(Object.values(extra).map((key) => place.storage.write(key, `bytes of ${key}`)));
  const old = new Date(Date.now() - 30 * DAY);
  await Promise.all((await keysUnder(place.storage)).map((key) => place.age(key, old)));
  await place.age(extra.orphanOld, new Date(Date.now() - 8 * DAY));
  await place.age(extra.orphanNew, new Date(Date.now() - 1 * HOUR));
  await place.age(extra.cdcNew, new Date(Date.now() - 1 * HOUR));
  await place.age(decodeLogPath(removedSkewed!), new Date(Date.now() - 1 * HOUR));
  const deleted = [
    decodeLogPath(removedOld!),
    extra.orphanOld,
    extra.orphanAtRoot,
    extra.cdcOld,
  ].sort();
  const deletedWithoutRetention = [
    ...deleted,
    decodeLogPath(removedRecent!),
    decodeLogPath(removedSkewed!),
    extra.orphanNew,
    extra.cdcNew,
  ].sort();
  return { table, deleted, deletedWithoutRetention };
}

describe.each([localBackend, s3Backend(() => s3)])('vacuumTable on $name', (backend) => {
  it('deletes exactly the old unneeded files; a dry run lists the same files and deletes nothing', async () => {
    const place = await backend.place();
    const { table, deleted } = await scene(place);
    const keysBefore = await keysUnder(place.storage);
    const rowsBefore = await rowsOf(session, table);

    const dry = await vacuumTable(table, { dryRun: true });
    expect(dry).toMatchObject({
      dryRun: true,
      filesDeleted: deleted,
      retainHours: 168,
      version: 3,
    });
    expect(await keysUnder(place.storage)).toEqual(keysBefore);

    const real = await vacuumTable(table);
    expect(real).toMatchObject({
      dryRun: false,
      filesDeleted: deleted,
      bytesDeleted: dry.bytesDeleted,
    });
    expect(real.bytesDeleted).toBeGreaterThan(0);
    expect(await keysUnder(place.storage)).toEqual(keysBefore.filter((k) => !deleted.includes(k)));
    expect(await rowsOf(session, table)).toEqual(rowsBefore);
    expect((await vacuumTable(table)).filesDeleted).toEqual([]);
    await place.cleanup();
  });

  it('refuses a retention below the table’s deletedFileRetentionDuration unless told it is unsafe', async () => {
    const place = await backend.place();
    const { table, deletedWithoutRetention } = await scene(place);
    const keysBefore = await keysUnder(place.storage);
    const err = await vacuumTable(table, { retainHours: 24 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect(String(err)).toMatch(/retention of 24 hours.*deletedFileRetentionDuration is 168 hours/);
    expect(await keysUnder(place.storage)).toEqual(keysBefore);

    const unsafe = await vacuumTable(table, {
      retainHours: 0,
      unsafeAllowShortRetention: true,
      dryRun: true,
    });
    expect(unsafe.filesDeleted).toEqual(deletedWithoutRetention);
    await place.cleanup();
  });
});

describe('vacuumTable details (local)', () => {
  it('keeps files removed within a longer retention, and counts back from the given clock', async () => {
    const place = await localBackend.place();
    const { table, deletedWithoutRetention } = await scene(place);
    // 10 days: the files removed 8 days ago and the 8-day-old orphan are now within retention.
    const longer = await vacuumTable(table, { retainHours: 240, dryRun: true });
    expect(longer.filesDeleted).toEqual([
      '_change_data/cdc-00000-old.c000.zstd.parquet',
      'part-99999-orphan-root.parquet',
    ]);
    // A week and an hour later, everything not live is past retention.
    const later = await vacuumTable(table, {
      now: () => Date.now() + 7 * DAY + HOUR,
      dryRun: true,
    });
    expect(later.filesDeleted).toEqual(deletedWithoutRetention);
    await place.cleanup();
  });

  it('walks partition folders whose column starts with an underscore, never other hidden folders', async () => {
    const place = await localBackend.place();
    const table = place.open(session);
    await append(session, table, `SELECT range::BIGINT AS id, 'x' AS _p FROM range(3)`, ['_p']);
    await place.storage.write('_p=x/part-orphan.parquet', 'orphan');
    await place.storage.write('_q=x/part-not-a-partition.parquet', 'kept');
    const old = new Date(Date.now() - 30 * DAY);
    await Promise.all((await keysUnder(place.storage)).map((key) => place.age(key, old)));
    expect((await vacuumTable(table)).filesDeleted).toEqual(['_p=x/part-orphan.parquet']);
    expect(await keysUnder(place.storage, '_q=x/')).toEqual(['_q=x/part-not-a-partition.parquet']);
    await place.cleanup();
  });

  it('follows the table’s delta.deletedFileRetentionDuration as the default retention', async () => {
    const place = await localBackend.place();
    const table = place.open(session);
    await table.create({
      schema: {
        type: 'struct',
        fields: [{ name: 'id', type: 'long', nullable: true, metadata: {} }],
      },
      configuration: { 'delta.deletedFileRetentionDuration': 'interval 12 hours' },
    });
    await append(session, table, `SELECT range::BIGINT AS id FROM range(3)`);
    await append(session, table, `SELECT range::BIGINT AS id FROM range(3)`);
    const [first, second] = (await latest(table)).files.map((f) => f.path);
    await removeFiles(table, [
      [first!, 13 * HOUR],
      [second!, 11 * HOUR],
    ]);
    await Promise.all(
      (await keysUnder(place.storage)).map((key) => place.age(key, new Date(Date.now() - DAY))),
    );
    const result = await vacuumTable(table, { dryRun: true });
    expect(result).toMatchObject({ retainHours: 12, filesDeleted: [decodeLogPath(first!)] });
    await place.cleanup();
  });
});
