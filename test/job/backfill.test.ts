/**
 * `tidemark backfill` end to end: sources in a local folder and on s3rver (the job's own S3
 * client, credentials from the environment), targets in local folders whose `_delta_log` the
 * tests read back. A backfill loads exactly its range, oldest first, one commit per partition
 * (or per batch), resumes, and never writes the job's state nor rolls back the job's newer rows.
 */
import { utimes } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { readBackfillState } from '../../src/job/backfill/state.js';
import type { StorageOpener } from '../../src/job/open.js';
import { LocalStorage } from '../../src/storage/local.js';
import type { Storage } from '../../src/storage/storage.js';
import { openStorage } from '../../src/storage/uri.js';
import { countingStorage, type CountingStorage } from '../helpers/counting-storage.js';
import type { S3rverHandle } from '../helpers/s3rver.js';
import { backfill, backfillStateIn, commitsOf, backfillOutcome } from './backfill-helpers.js';
import {
  closeS3JobEnv,
  DuckSession,
  duplicateRids,
  expectedLatest,
  land,
  makeConfig,
  mergeTarget,
  openS3JobEnv,
  type OrderRow,
  orders,
  readTarget,
  run,
  sortRows,
  tempDir,
} from './helpers.js';

let s3: S3rverHandle;
let session: DuckSession;
const dirs: string[] = [];

beforeAll(async () => {
  ({ s3, session } = await openS3JobEnv());
});
afterAll(() => closeS3JobEnv(s3, session, dirs));

type Driver = 'local' | 's3rver';

interface Zone {
  source: Storage;
  uri: string;
  storageConfig: Record<string, unknown>;
  /** Rows landed per partition id. */
  days: Map<string, OrderRow[]>;
}

async function emptyZone(driver: Driver): Promise<Zone> {
  if (driver === 'local') {
    const root = await tempDir('bf-src', dirs);
    return { source: new LocalStorage(root), uri: root, storageConfig: {}, days: new Map() };
  }
  const { source, uri, storageConfig } = s3.landingZone('landing');
  return { source, uri, storageConfig, days: new Map() };
}

/** Land `rows` as `key` (`2025/03/02/b.csv`), remembering them under the key's day. */
async function put(zone: Zone, key: string, rows: OrderRow[]): Promise<void> {
  await land(zone.source, session, key, rows);
  const day = key.slice(0, 10).replaceAll('/', '-');
  zone.days.set(day, [...(zone.days.get(day) ?? []), ...rows]);
}

/** Six days of order events; later days hold newer versions of earlier keys. */
async function sixDays(driver: Driver): Promise<Zone> {
  const zone = await emptyZone(driver);
  await put(zone, '2025/03/01/a.csv', orders([1, 'placed', 1], [2, 'placed', 1]));
  await put(zone, '2025/03/02/b.ndjson', orders([1, 'paid', 2], [3, 'placed', 1]));
  await put(zone, '2025/03/02/c.csv', orders([4, 'placed', 1]));
  await put(zone, '2025/03/03/d.parquet', orders([2, 'paid', 2], [5, 'placed', 1]));
  await put(zone, '2025/03/04/e.csv', orders([1, 'shipped', 3], [6, 'placed', 1]));
  await put(zone, '2025/03/05/f.csv', orders([3, 'paid', 2]));
  await put(zone, '2025/03/06/g.ndjson', orders([2, 'shipped', 3], [7, 'placed', 1]));
  return zone;
}

function rowsOf(zone: Zone, first: string, last: string): OrderRow[] {
  return [...zone.days].filter(([day]) => day >= first && day <= last).flatMap(([, rows]) => rows);
}

const byDay = { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 1 };

async function mergeSetup(
  zone: Zone,
  extra: Record<string, unknown> = {},
  discover: Record<string, unknown> = byDay,
) {
  const target = await tempDir('bf-t', dirs);
  return {
    target,
    ...makeConfig(
      { source: { uri: zone.uri, discover }, target: mergeTarget(target), ...extra },
      zone.storageConfig,
    ),
  };
}

/** An opener that counts the source's requests. */
function countingSource(uri: string): { opener: StorageOpener; counted: () => CountingStorage } {
  let source: CountingStorage | undefined;
  const opener: StorageOpener = (u, opts) => {
    const storage = openStorage(u, opts);
    if (u !== uri) return storage;
    source = countingStorage(storage);
    return source;
  };
  return { opener, counted: () => source! };
}

describe.each<Driver>(['local', 's3rver'])('backfill by partition (source: %s)', (driver) => {
  it('into a new table: loads exactly [from, to], oldest first, one commit per partition, listing only the folders in range', async () => {
    const zone = await sixDays(driver);
    const setup = await mergeSetup(zone);
    const { opener, counted } = countingSource(zone.uri);
    const report = await backfill(
      setup,
      { from: '2025-03-02', to: '2025-03-04' },
      { openStorage: opener },
    );
    expect(report).toMatchObject({
      status: 'succeeded',
      from: '2025-03-02',
      to: '2025-03-04',
      filesLoaded: 4,
      commits: 3,
      partitionsListed: 3,
      doneThrough: '2025-03-04',
      tableVersion: 2,
      watermark: null,
    });

    const table = await readTarget(session, setup);
    expect(table.rows).toEqual(expectedLatest(rowsOf(zone, '2025-03-02', '2025-03-04')));
    // Only the three partition folders were listed in full; no other day was listed at all.
    const listed = counted()
      .calls.filter((c) => c.method === 'list')
      .map((c) => c.key);
    expect(
      [...new Set(listed.filter((k) => /\d{2}\/\d{2}\/$/.test(k) && k.length === 11))].sort(),
    ).toEqual(['2025/03/02/', '2025/03/03/', '2025/03/04/']);

    const commits = await commitsOf(setup.target);
    expect(commits.map((c) => backfillStateIn(c, 'orders')?.doneThrough)).toEqual([
      '2025-03-02',
      '2025-03-03',
      '2025-03-04',
    ]);
    expect(commits.map((c) => backfillStateIn(c, 'orders')?.status)).toEqual([
      'running',
      'running',
      'done',
    ]);
    for (const c of commits) {
      expect([...c.txns.keys()]).toEqual(['tidemark.backfill.orders']);
      expect([...c.domains.keys()]).toEqual(['tidemark.backfill.orders']);
    }
    // Each partition's rows arrived in its own commit, oldest first.
    expect(table.state.discovery).toBeNull();
  });

  it("on a table the job loads: leaves the job's watermark, state and txn as they were, and the job's rows win", async () => {
    const zone = await sixDays(driver);
    const setup = await mergeSetup(zone);
    const jobOnly = {
      ...setup,
      job: {
        ...setup.job,
        source: {
          ...setup.job.source,
          discover: { ...setup.job.source.discover, start: '2025-03-04' },
        },
      },
    };
    expect(await run(jobOnly)).toMatchObject({
      status: 'succeeded',
      filesLoaded: 3,
      watermark: '2025-03-06',
    });
    const before = await readTarget(session, setup);

    const report = await backfill(setup, { from: '2025-03-01', to: '2025-03-03' });
    expect(report).toMatchObject({
      status: 'succeeded',
      filesLoaded: 4,
      commits: 3,
      watermark: '2025-03-06',
    });
    expect(report.skippedStale).toBeGreaterThan(0); // older versions of keys 1 and 2

    const after = await readTarget(session, setup);
    expect(after.state).toEqual(before.state);
    expect(after.snapshot!.txns.get('tidemark.job.orders')).toEqual(
      before.snapshot!.txns.get('tidemark.job.orders'),
    );
    expect(after.rows).toEqual(expectedLatest(rowsOf(zone, '2025-03-01', '2025-03-06')));
    const commits = (await commitsOf(setup.target)).slice(before.snapshot!.version + 1);
    expect(commits).toHaveLength(3);
    for (const c of commits) expect(c.domains.has('tidemark.job.orders')).toBe(false);
    // The next hourly run finds nothing new: its state was not touched.
    expect(await run(setup)).toMatchObject({
      status: 'nothing-new',
      commits: 0,
      watermark: '2025-03-06',
    });
  });
});

describe('backfill ranges: resume, rerun, restart, refusal (source: local)', () => {
  it('a completed range reruns as a no-op; --restart loads it again and the table is unchanged', async () => {
    const zone = await sixDays('local');
    const setup = await mergeSetup(zone);
    await backfill(setup, { from: '2025-03-01', to: '2025-03-06' });
    const done = await readTarget(session, setup);

    const again = await backfill(setup, { from: '2025-03-01', to: '2025-03-06' });
    expect(again).toMatchObject({
      status: 'already-done',
      commits: 0,
      filesLoaded: 0,
      doneThrough: '2025-03-06',
      tableVersion: done.snapshot!.version,
    });

    const restarted = await backfill(setup, {
      from: '2025-03-01',
      to: '2025-03-06',
      restart: true,
    });
    expect(restarted).toMatchObject({
      status: 'succeeded',
      commits: 6,
      filesLoaded: 7,
      inserted: 0,
      updated: 0,
    });
    const table = await readTarget(session, setup);
    expect(table.rows).toEqual(done.rows);
    expect(duplicateRids(table.rows)).toEqual([]);
  });

  it('another range while one is unfinished is refused naming the unfinished range; --restart abandons it', async () => {
    const zone = await sixDays('local');
    const setup = await mergeSetup(zone);
    const crash = await backfillOutcome(
      setup,
      { from: '2025-03-01', to: '2025-03-06' },
      {
        hooks: {
          afterCommit: (b) => {
            if (b === 1) throw new Error('injected crash');
          },
        },
      },
    );
    expect(crash).toMatchObject({
      ok: false,
      report: { status: 'failed', commits: 2, doneThrough: '2025-03-02', tableVersion: 1 },
    });

    const refused = await backfill(setup, { from: '2025-03-04', to: '2025-03-05' }).catch(
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(ConfigError);
    expect((refused as ConfigError).context).toMatchObject({
      field: 'from',
      unfinished: '2025-03-01..2025-03-06',
    });
    expect((refused as Error).message).toContain('--restart');

    const other = await backfill(setup, { from: '2025-03-04', to: '2025-03-05', restart: true });
    expect(other).toMatchObject({
      status: 'succeeded',
      resumedFrom: null,
      filesLoaded: 2,
      commits: 2,
    });
    // The abandoned range is not resumed any more; a new backfill of it starts from its beginning.
    expect(await backfill(setup, { from: '2025-03-01', to: '2025-03-06' })).toMatchObject({
      resumedFrom: null,
      filesLoaded: 7,
    });
  });

  it('a partition larger than maxFilesPerBatch is split into batches; the cursor remembers the files loaded from it', async () => {
    const zone = await sixDays('local');
    const setup = await mergeSetup(zone, { maxFilesPerBatch: 1 });
    const report = await backfill(setup, { from: '2025-03-01', to: '2025-03-03' });
    expect(report).toMatchObject({ status: 'succeeded', filesLoaded: 4, commits: 4 });
    const states = (await commitsOf(setup.target)).map((c) => backfillStateIn(c, 'orders')!);
    expect(states.map((s) => [s.doneThrough, s.loaded.map((e) => e.key)])).toEqual([
      ['2025-03-01', []],
      ['2025-03-01', ['2025/03/02/b.ndjson']],
      ['2025-03-02', []],
      ['2025-03-03', []],
    ]);
  });

  it('deleted keys stay deleted: the backfill reads the job tombstones (deleteWhen)', async () => {
    const zone = await sixDays('local');
    await put(zone, '2025/03/05/h.csv', orders([5, 'deleted', 9]));
    const setup = await mergeSetup(zone, {}, { ...byDay, start: '2025-03-04' });
    setup.job.target.deleteWhen = "status = 'deleted'";
    await run(setup);
    const report = await backfill(setup, { from: '2025-03-01', to: '2025-03-03' });
    expect(report.status).toBe('succeeded');
    const table = await readTarget(session, setup);
    expect(table.rows.map((r) => r.order_id)).not.toContain(5);
    const all = rowsOf(zone, '2025-03-01', '2025-03-06');
    expect(table.rows).toEqual(expectedLatest(all).filter((r) => r.order_id !== 5));
  });

  it("the backfill's deletes are tombstones the job reads too: a late older row of a key the backfill deleted stays out", async () => {
    const zone = await emptyZone('local');
    await put(zone, '2025/03/01/a.csv', orders([9, 'placed', 1], [8, 'placed', 1]));
    await put(zone, '2025/03/02/b.csv', orders([9, 'deleted', 5]));
    const setup = await mergeSetup(zone, {}, { ...byDay, start: '2025-03-04' });
    setup.job.target.deleteWhen = "status = 'deleted'";
    expect(await backfill(setup, { from: '2025-03-01', to: '2025-03-02' })).toMatchObject({
      status: 'succeeded',
      deleted: 1,
    });
    await put(zone, '2025/03/04/late.csv', orders([9, 'paid', 2], [7, 'placed', 1]));
    expect(await run(setup)).toMatchObject({
      status: 'succeeded',
      filesLoaded: 1,
      inserted: 1,
      skippedStale: 1,
    });
    expect((await readTarget(session, setup)).rows.map((r) => r.order_id).sort()).toEqual([7, 8]);
  });

  it('onBadFile quarantine: a corrupt file of the range is set aside (report and backfill state), the rest loads', async () => {
    const zone = await sixDays('local');
    await zone.source.write('2025/03/02/broken.parquet', 'not parquet at all');
    const setup = await mergeSetup(zone, { onBadFile: 'quarantine' });
    const report = await backfill(setup, { from: '2025-03-01', to: '2025-03-02' });
    expect(report).toMatchObject({ status: 'succeeded', filesLoaded: 3, commits: 2 });
    expect(report.quarantined?.map((q) => q.key)).toEqual(['2025/03/02/broken.parquet']);
    const table = await readTarget(session, setup);
    expect(table.rows).toEqual(expectedLatest(rowsOf(zone, '2025-03-01', '2025-03-02')));
    expect(readBackfillState(table.snapshot, 'orders')).toMatchObject({
      status: 'done',
      totals: { filesLoaded: 3 },
      quarantined: [{ key: '2025/03/02/broken.parquet' }],
    });
  });

  it('on an hourly layout a bare date covers the whole day, and partitions after it are not loaded', async () => {
    const zone = await emptyZone('local');
    await put(zone, '2025/03/01/00/a.csv', orders([1, 'placed', 1]));
    await put(zone, '2025/03/01/23/b.csv', orders([2, 'placed', 1]));
    await put(zone, '2025/03/02/00/c.csv', orders([3, 'placed', 1]));
    const setup = await mergeSetup(zone, {}, { by: 'partition', layout: '{yyyy}/{mm}/{dd}/{HH}' });
    const report = await backfill(setup, { from: '2025-03-01', to: '2025-03-01' });
    expect(report).toMatchObject({
      status: 'succeeded',
      from: '2025-03-01T00',
      to: '2025-03-01T23',
      filesLoaded: 2,
      commits: 2,
      doneThrough: '2025-03-01T23',
    });
    expect((await readTarget(session, setup)).rows.map((r) => r.order_id).sort()).toEqual([1, 2]);
  });

  it('append mode: a backfill ahead of the job, the run that then reaches the range, and a backfill of a loaded range leave every row once', async () => {
    const zone = await sixDays('local');
    const target = await tempDir('bf-t', dirs);
    const setup = makeConfig({
      source: { uri: zone.uri, discover: byDay },
      target: { uri: target, mode: 'append' },
    });
    // The job has not run yet: the backfill loads 03-03..03-04 first.
    expect(await backfill(setup, { from: '2025-03-03', to: '2025-03-04' })).toMatchObject({
      filesLoaded: 2,
      inserted: 4,
      commits: 2,
    });
    // The run loads every day; the two files the backfill loaded are found in the table, not appended again.
    expect(await run(setup)).toMatchObject({
      status: 'succeeded',
      filesLoaded: 7,
      inserted: 8,
      filesAlreadyLoaded: 2,
    });
    // A backfill of days the run loaded (unchanged files) appends nothing either.
    expect(await backfill(setup, { from: '2025-03-01', to: '2025-03-02' })).toMatchObject({
      filesLoaded: 3,
      inserted: 0,
      filesAlreadyLoaded: 3,
    });
    const table = await readTarget(session, setup);
    expect(duplicateRids(table.rows)).toEqual([]);
    expect(table.rows).toEqual(sortRows(rowsOf(zone, '2025-03-01', '2025-03-06')));
  });

  it('rejects a range that is not one: bad dates, an hour on a day layout, --to before --from (ConfigError naming the flag)', async () => {
    const zone = await emptyZone('local');
    const setup = await mergeSetup(zone);
    const cases: Array<[string, string, string]> = [
      ['2025-02-30', '2025-03-01', 'from'],
      ['2025-03-01', 'yesterday', 'to'],
      ['2025-03-01T05', '2025-03-02', 'from'],
      ['2025-03-02', '2025-03-01', 'to'],
    ];
    for (const [from, to, field] of cases) {
      const err = await backfill(setup, { from, to }).catch((e: unknown) => e);
      expect(err, `${from}..${to}`).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).context.field).toBe(field);
    }
  });
});

describe('backfill by modification time (source: s3rver)', () => {
  it('loads exactly the files whose LastModified is in [from, to], oldest first, one commit per batch', async () => {
    const zone = await emptyZone('s3rver');
    const prefix = zone.uri.slice(`s3://${s3.bucket}/`.length);
    const t0 = Date.parse('2025-04-01T00:00:00Z');
    const files: Array<[string, OrderRow[]]> = [
      ['x/1.csv', orders([1, 'placed', 1])],
      ['y/2.csv', orders([1, 'paid', 2], [2, 'placed', 1])],
      ['3.csv', orders([2, 'paid', 2])],
      ['x/4.csv', orders([3, 'placed', 1])],
      ['y/5.csv', orders([1, 'shipped', 3])],
    ];
    for (const [i, [key, rows]] of files.entries()) {
      await land(zone.source, session, key, rows);
      await s3.setLastModified(prefix + key, new Date(t0 + i * 3_600_000));
    }
    const setup = await mergeSetup(
      zone,
      { maxFilesPerBatch: 2 },
      { by: 'modified', settle: '15m' },
    );
    const report = await backfill(setup, {
      from: '2025-04-01T01:00:00Z',
      to: '2025-04-01T03:00:00Z',
    });
    expect(report).toMatchObject({
      status: 'succeeded',
      filesLoaded: 3,
      commits: 2,
      from: '2025-04-01T01:00:00.000Z',
      to: '2025-04-01T03:00:00.000Z',
    });
    const table = await readTarget(session, setup);
    expect(table.rows).toEqual(expectedLatest(files.slice(1, 4).flatMap(([, rows]) => rows)));
    const states = (await commitsOf(setup.target)).map((c) => backfillStateIn(c, 'orders')!);
    expect(states.map((s) => [s.status, s.doneThrough, s.loaded.map((e) => e.key)])).toEqual([
      ['running', '2025-04-01T02:00:00.000Z', ['3.csv']],
      ['done', '2025-04-01T03:00:00.000Z', []],
    ]);
    expect(
      await backfill(setup, { from: '2025-04-01T01:00:00Z', to: '2025-04-01T03:00:00Z' }),
    ).toMatchObject({ status: 'already-done' });
  });
});

describe('append backfill by modification time (source: local)', () => {
  it('a backfill beyond the watermark, then the run that reaches it, then a backfill of the loaded range: every row once', async () => {
    const zone = await emptyZone('local');
    const t0 = Math.floor(Date.now() / 1000) * 1000 - 5 * 3_600_000; // whole seconds: utimes keeps them exactly
    const at = (h: number) => new Date(t0 + h * 3_600_000);
    const land1 = async (key: string, rows: OrderRow[], h: number) => {
      await land(zone.source, session, key, rows);
      await utimes(path.join(zone.uri, key), at(h), at(h));
    };
    const setup = makeConfig({
      source: { uri: zone.uri, discover: { by: 'modified', settle: '15m' } },
      target: { uri: await tempDir('bf-t', dirs), mode: 'append' },
    });
    await land1('a.csv', orders([1, 'placed', 1]), 0);
    expect(await run(setup)).toMatchObject({ status: 'succeeded', inserted: 1 });
    await land1('b.csv', orders([2, 'placed', 1], [3, 'placed', 1]), 1);
    await land1('c.csv', orders([4, 'placed', 1]), 2);
    await land1('d.csv', orders([5, 'placed', 1]), 3);
    // Ahead of the job's watermark (a.csv's time): b.csv and c.csv.
    expect(
      await backfill(setup, { from: at(1).toISOString(), to: at(2).toISOString() }),
    ).toMatchObject({ status: 'succeeded', filesLoaded: 2, inserted: 3 });
    // The run takes b, c and d for new: b and c are found in the table, only d appends.
    expect(await run(setup)).toMatchObject({
      status: 'succeeded',
      inserted: 1,
      filesAlreadyLoaded: 2,
    });
    expect(
      await backfill(setup, { from: at(0).toISOString(), to: at(3).toISOString() }),
    ).toMatchObject({ status: 'succeeded', inserted: 0 });
    expect(await run(setup)).toMatchObject({ status: 'nothing-new' });
    const rows = (await readTarget(session, setup)).rows;
    expect(duplicateRids(rows)).toEqual([]);
    expect(rows.map((r) => r.order_id).sort()).toEqual([1, 2, 3, 4, 5]);
  });
});
