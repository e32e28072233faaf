/**
 * Deletes and CDC feeds end to end (docs/concepts.md, Deletes and CDC feeds): the real job loads a feed shaped like
 * AWS DMS output (./cdc-feed.ts) with `deleteWhen: "Op = 'D'"` and `orderBy: cdc_ts`, from
 * s3rver and from a local folder, into a local Delta table. After every day the table equals the
 * source database's state, computed from the change list alone. Tombstones keep deleted keys
 * deleted when older rows arrive in later batches and runs, expire after `tombstoneRetention`,
 * and their files stay bounded.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobConfig, StorageConfig } from '../../src/config/schema.js';
import { openTarget } from '../../src/job/open.js';
import type { RunReport } from '../../src/job/report.js';
import { readJobState, type JobState } from '../../src/job/state.js';
import { MAX_TOMBSTONE_FILES } from '../../src/job/tombstones/plan.js';
import { LocalStorage } from '../../src/storage/local.js';
import type { Storage } from '../../src/storage/storage.js';
import { stepBudget, withinStep } from '../helpers/machine.js';
import type { S3rverHandle } from '../helpers/s3rver.js';
import {
  generateFeed,
  landFile,
  replay,
  tableRows,
  type Change,
  type DbRow,
  type Feed,
} from './cdc-feed.js';
import { closeS3JobEnv, DuckSession, makeConfig, openS3JobEnv, run, tempDir } from './helpers.js';
import { openTable } from '../../scripts/lib/tables.js';

let s3: S3rverHandle;
let session: DuckSession;
const dirs: string[] = [];
/** Limit of one day of a loop (land a file, run the job, read the table back) on a quiet machine, where it takes about 0.4 s. */
const RUN_MS = 5_000;

beforeAll(async () => {
  ({ s3, session } = await openS3JobEnv());
});
afterAll(() => closeS3JobEnv(s3, session, dirs));

type SourceKind = 's3rver' | 'local';

interface Zone {
  storage: Storage;
  uri: string;
  storageConfig: Record<string, unknown>;
}

/** A fresh landing zone on s3rver or in a local folder. */
async function landingZone(kind: SourceKind): Promise<Zone> {
  if (kind === 'local') {
    const dir = await tempDir('cdc-src', dirs);
    return { storage: new LocalStorage(dir), uri: dir, storageConfig: {} };
  }
  const { source, uri, storageConfig } = s3.landingZone('cdc');
  return { storage: source, uri, storageConfig };
}

type Setup = { job: JobConfig; storage: StorageConfig };

/** The DMS job: merge by id, ordered by the commit timestamp, Op = 'D' deletes. */
function cdcJob(
  zone: Zone,
  target: string,
  extra: { maxFilesPerBatch?: number; tombstoneRetention?: string | number } = {},
): Setup {
  return makeConfig(
    {
      source: {
        uri: zone.uri,
        discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 2 },
      },
      target: {
        uri: target,
        key: ['id'],
        orderBy: 'cdc_ts',
        deleteWhen: "Op = 'D'",
        ...(extra.tombstoneRetention !== undefined
          ? { tombstoneRetention: extra.tombstoneRetention }
          : {}),
      },
      ...(extra.maxFilesPerBatch !== undefined ? { maxFilesPerBatch: extra.maxFilesPerBatch } : {}),
    },
    zone.storageConfig,
  );
}

/** The table's rows and the job state, read back through a fresh DeltaTable. */
async function readBack(
  setup: Setup,
): Promise<{ rows: DbRow[]; state: JobState; version: number | null }> {
  const storage = openTarget(setup.job, setup.storage);
  const snapshot = await openTable(storage, session).snapshot();
  return {
    rows: await tableRows(session, storage, snapshot),
    state: readJobState(snapshot, setup.job.name),
    version: snapshot?.version ?? null,
  };
}

/** Tombstone files present in the table folder. */
async function tombstoneObjects(setup: Setup): Promise<string[]> {
  const listed = await openTarget(setup.job, setup.storage).listAll({
    prefix: '_tidemark/tombstones/',
  });
  return listed.objects.map((o) => o.key).sort();
}

/** A CDC file of hand-written changes. */
function change(Op: 'I' | 'U' | 'D', id: number, name: string | null, at: string): Change {
  return { Op, id, name, balance: name === null ? null : 1.5, cdc_ts: `2025-06-${at}` };
}

function row(id: number, name: string, at: string, Op: string): DbRow {
  return { id, name, balance: 1.5, cdc_ts: `2025-06-${at}.000000`, Op };
}

/**
 * Land and load the feed day by day; `check` sees the table after each day. Day 1 goes with the
 * full load in one batch (the table is created with the CDC files' Op column); later days load
 * one file per batch, so a key's changes are applied out of order across commits.
 */
async function loadFeed(
  zone: Zone,
  target: string,
  feed: Feed,
  opts: {
    tombstoneRetention?: number;
    check?: (day: number, rows: DbRow[], applied: Change[]) => void;
  } = {},
): Promise<RunReport[]> {
  const retention =
    opts.tombstoneRetention === undefined ? {} : { tombstoneRetention: opts.tombstoneRetention };
  const first = cdcJob(zone, target, retention);
  const later = cdcJob(zone, target, { maxFilesPerBatch: 1, ...retention });
  const reports: RunReport[] = [];
  let applied: Change[] = [];
  for (const [i, files] of feed.days.entries()) {
    for (const file of i === 0 ? [feed.fullLoad, ...files] : files)
      await landFile(zone.storage, session, file);
    reports.push(await run(i === 0 ? first : later));
    applied = [...applied, ...files.flatMap((f) => f.rows)];
    opts.check?.(i + 1, (await readBack(first)).rows, applied);
  }
  return reports;
}

describe.each<SourceKind>(['s3rver', 'local'])('an AWS DMS feed from %s', (kind) => {
  it('after each day of inserts, updates and deletes in Parquet and CSV, the table equals the source database', async () => {
    const zone = await landingZone(kind);
    const target = await tempDir('cdc-t', dirs);
    const feed = generateFeed(kind === 's3rver' ? 7 : 11, 4, 40);
    const reports = await loadFeed(zone, target, feed, {
      check: (day, rows, applied) =>
        expect(rows, `table after day ${day}`).toEqual(replay(feed.fullLoad.rows, applied)),
    });
    expect(reports.every((r) => r.status === 'succeeded')).toBe(true);
    expect(reports.reduce((n, r) => n + r.deleted, 0)).toBeGreaterThan(0);
    expect(reports.reduce((n, r) => n + r.skippedStale, 0)).toBeGreaterThan(0);
    const { state } = await readBack(cdcJob(zone, target));
    expect(state.tombstones?.files.length).toBeGreaterThan(0);
    expect(state.tombstones).toMatchObject({ key: ['id'], orderBy: 'cdc_ts' });
  });
});

describe('tombstones across runs', () => {
  it('without tombstones (retention 0) the same out-of-order feed brings deleted keys back', async () => {
    const zone = await landingZone('local');
    const target = await tempDir('cdc-t', dirs);
    const feed = generateFeed(11, 4, 40);
    await loadFeed(zone, target, feed, { tombstoneRetention: 0 });
    const { rows, state } = await readBack(cdcJob(zone, target));
    const expected = new Set(replay(feed.fullLoad.rows, feed.changes).map((r) => r.id));
    expect(rows.filter((r) => !expected.has(r.id)).length).toBeGreaterThan(0);
    expect(state.tombstones).toBeUndefined();
  });

  it.each<SourceKind>(['local', 's3rver'])(
    'a delete that lands first keeps its key deleted when an older update arrives in a later run; a newer one brings it back (source and target: %s)',
    async (kind) => {
      const zone = await landingZone(kind);
      // On s3rver the tombstone files are downloaded, not read in place (single writer: s3rver ignores If-None-Match).
      const target =
        kind === 'local'
          ? await tempDir('cdc-t', dirs)
          : `s3://${s3.bucket}/lake-${randomUUID()}/customers`;
      const setup = cdcJob(
        {
          ...zone,
          storageConfig: {
            ...zone.storageConfig,
            ...(kind === 's3rver' ? { singleWriter: true } : {}),
          },
        },
        target,
      );
      await landFile(zone.storage, session, {
        key: '2025/06/01/a.csv',
        rows: [change('I', 1, 'a', '01 10:00:00'), change('I', 2, 'b', '01 10:00:00')],
      });
      await run(setup);
      await landFile(zone.storage, session, {
        key: '2025/06/03/c.parquet',
        rows: [change('D', 1, 'a', '03 10:00:00')],
      });
      expect(await run(setup)).toMatchObject({ deleted: 1 });

      // A late file in a lookback partition: an update made before the delete.
      await landFile(zone.storage, session, {
        key: '2025/06/02/late.csv',
        rows: [change('U', 1, 'late', '02 10:00:00')],
      });
      expect(await run(setup)).toMatchObject({
        filesLoaded: 1,
        inserted: 0,
        updated: 0,
        skippedStale: 1,
      });
      expect((await readBack(setup)).rows).toEqual([row(2, 'b', '01 10:00:00', 'I')]);

      // An update made after the delete (the key was re-created upstream) arrives late as well.
      await landFile(zone.storage, session, {
        key: '2025/06/02/later.parquet',
        rows: [change('U', 1, 'back', '03 11:00:00')],
      });
      expect(await run(setup)).toMatchObject({ inserted: 1, skippedStale: 0 });
      expect((await readBack(setup)).rows).toEqual([
        row(1, 'back', '03 11:00:00', 'U'),
        row(2, 'b', '01 10:00:00', 'I'),
      ]);
    },
  );

  it('a delete of a missing key is a no-op that still buries its later-arriving older insert; a stale delete is skipped', async () => {
    const zone = await landingZone('local');
    const setup = cdcJob(zone, await tempDir('cdc-t', dirs));
    await landFile(zone.storage, session, {
      key: '2025/06/01/a.parquet',
      rows: [change('I', 2, 'b', '01 10:00:00')],
    });
    await run(setup);
    // The delete of key 1 arrives before its insert; key 2's delete is older than the stored row.
    await landFile(zone.storage, session, {
      key: '2025/06/02/b.csv',
      rows: [change('D', 1, null, '02 10:00:00'), change('D', 2, 'b', '01 09:00:00')],
    });
    const second = await run(setup);
    expect(second).toMatchObject({ status: 'succeeded', deleted: 0, inserted: 0, skippedStale: 1 });
    expect((await readBack(setup)).state.tombstones?.files).toHaveLength(1);

    await landFile(zone.storage, session, {
      key: '2025/06/02/c.csv',
      rows: [change('I', 1, 'a', '02 09:00:00')],
    });
    expect(await run(setup)).toMatchObject({ inserted: 0, skippedStale: 1 });
    expect((await readBack(setup)).rows).toEqual([row(2, 'b', '01 10:00:00', 'I')]);
  });

  it('tombstones expire after tombstoneRetention, and expired files leave the state and then the table folder', async () => {
    const zone = await landingZone('local');
    const setup = cdcJob(zone, await tempDir('cdc-t', dirs), { tombstoneRetention: '1s' });
    await landFile(zone.storage, session, {
      key: '2025/06/01/a.csv',
      rows: [change('I', 1, 'a', '01 10:00:00'), change('I', 2, 'b', '01 10:00:00')],
    });
    await run(setup);
    await landFile(zone.storage, session, {
      key: '2025/06/02/b.csv',
      rows: [change('D', 1, 'a', '02 10:00:00')],
    });
    await run(setup);
    const [tombstone] = await tombstoneObjects(setup);
    expect(tombstone).toMatch(/^_tidemark\/tombstones\/orders\/[0-9a-f-]{36}\.parquet$/);

    await sleep(1100);
    // Past retention the delete is forgotten: an older row brings the key back (that is what retention means).
    await landFile(zone.storage, session, {
      key: '2025/06/02/late.csv',
      rows: [change('U', 1, 'late', '01 11:00:00')],
    });
    expect(await run(setup)).toMatchObject({ inserted: 1 });
    const afterExpiry = (await readBack(setup)).state.tombstones;
    expect(afterExpiry?.files).toEqual([]);
    expect(afterExpiry?.dropped.map((d) => d.path)).toEqual([tombstone]);
    expect(await tombstoneObjects(setup)).toEqual([tombstone]); // kept for the grace period

    await sleep(1100);
    await landFile(zone.storage, session, {
      key: '2025/06/03/c.csv',
      rows: [change('U', 2, 'b2', '03 10:00:00')],
    });
    await run(setup);
    expect((await readBack(setup)).state.tombstones).toBeUndefined();
    expect(await tombstoneObjects(setup)).toEqual([]);
  });

  const MANY_RUNS = MAX_TOMBSTONE_FILES + 4;
  it(
    'many runs with deletes keep at most MAX_TOMBSTONE_FILES files, compacted without losing a tombstone',
    { timeout: stepBudget(MANY_RUNS + 2, RUN_MS) },
    async () => {
      const zone = await landingZone('local');
      const setup = cdcJob(zone, await tempDir('cdc-t', dirs));
      const runs = MANY_RUNS;
      for (let d = 1; d <= runs; d++) {
        const day = String(d).padStart(2, '0');
        const { state } = await withinStep(`run ${d}`, RUN_MS, async () => {
          // Each day inserts key 100+d and deletes key d (which was never inserted: a pure tombstone).
          await landFile(zone.storage, session, {
            key: `2025/06/${day}/x.csv`,
            rows: [
              change('I', 100 + d, 'n', `${day} 10:00:00`),
              change('D', d, null, `${day} 10:00:00`),
            ],
          });
          await run(setup);
          return readBack(setup);
        });
        expect(state.tombstones!.files.length).toBeLessThanOrEqual(MAX_TOMBSTONE_FILES);
      }
      const { state } = await readBack(setup);
      expect(state.tombstones!.files.reduce((n, f) => n + f.rows, 0)).toBe(runs);
      const listed = await tombstoneObjects(setup);
      const known = [
        ...state.tombstones!.files.map((f) => f.path),
        ...state.tombstones!.dropped.map((d) => d.path),
      ].sort();
      expect(listed).toEqual(known); // nothing unlisted; dropped files wait out their grace period

      // Every deleted key is still remembered: older inserts of all of them arrive late.
      const late = Array.from({ length: runs }, (_, i) =>
        change('I', i + 1, 'zombie', '01 00:00:00'),
      );
      await landFile(zone.storage, session, {
        key: `2025/06/${String(runs).padStart(2, '0')}/late.csv`,
        rows: late,
      });
      expect(await run(setup)).toMatchObject({ inserted: 0, skippedStale: runs });
    },
  );
});
