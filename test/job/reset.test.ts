/**
 * `tidemark reset`: the watermark moved in a commit without data, and the next run reloading
 * from there. The pure part (`planReset`: which state `--to` sets, validation naming the field)
 * first, then runs on a local source and on s3rver, targets in local folders.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PartitionState } from '../../src/discovery/index.js';
import { ConfigError } from '../../src/errors.js';
import { planReset } from '../../src/job/reset.js';
import { LocalStorage } from '../../src/storage/local.js';
import type { Storage } from '../../src/storage/storage.js';
import type { S3rverHandle } from '../helpers/s3rver.js';
import { commitsOf, reset } from './backfill-helpers.js';
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

// The lookback alone: the lateCheck partitions the state also remembers would spare a reset's rerun some reloads.
const byDay = { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 1, lateCheck: 0 };
const job = (discover: Record<string, unknown>, mode: 'merge' | 'append' = 'merge') =>
  makeConfig({
    source: { uri: '/tmp/none', discover },
    target: mode === 'merge' ? mergeTarget('/tmp/none-t') : { uri: '/tmp/none-t', mode },
  }).job;

describe('planReset (pure)', () => {
  const prev: PartitionState = {
    stateVersion: 1,
    mode: 'partition',
    watermark: '2025-03-06',
    rememberedFrom: '2025-03-05',
    loaded: [
      { key: '2025/03/05/f.csv', etag: 'f', partition: '2025-03-05' },
      { key: '2025/03/06/g.csv', etag: 'g', partition: '2025-03-06' },
    ],
  };

  it('rewinding: the watermark is the given partition; what follows it is forgotten, the lookback before it is rescanned', () => {
    const plan = planReset(job(byDay), prev, '2025-03-03');
    expect(plan).toEqual({
      rewound: true,
      state: {
        stateVersion: 1,
        mode: 'partition',
        watermark: '2025-03-03',
        rememberedFrom: '2025-03-02',
        loaded: [],
      },
    });
  });

  it('files the state remembers up to the new watermark stay remembered', () => {
    const plan = planReset(job(byDay), prev, '2025-03-05');
    expect(plan.rewound).toBe(true);
    expect(plan.state).toMatchObject({
      watermark: '2025-03-05',
      rememberedFrom: '2025-03-05',
      loaded: [prev.loaded[0]],
    });
  });

  it('advancing keeps every remembered file and is not a rewind', () => {
    const plan = planReset(job(byDay), prev, '2025-03-10');
    expect(plan).toMatchObject({
      rewound: false,
      state: { watermark: '2025-03-10', rememberedFrom: '2025-03-09', loaded: [] },
    });
    expect(planReset(job({ ...byDay, lookback: 5 }), prev, '2025-03-07').state).toMatchObject({
      rememberedFrom: '2025-03-05',
      loaded: prev.loaded,
    });
  });

  it('modification-time mode: a timestamp (or a date: its UTC midnight); remembered files up to it inside the settle window stay', () => {
    const at = Date.parse('2025-04-01T12:00:00Z');
    const modPrev = {
      stateVersion: 1 as const,
      mode: 'modified' as const,
      watermark: at,
      loaded: [
        { key: 'a', etag: '1', lastModified: at - 60_000 },
        { key: 'b', etag: '2', lastModified: at },
      ],
    };
    const plan = planReset(job({ by: 'modified', settle: '15m' }), modPrev, '2025-04-01T11:59:30Z');
    expect(plan).toEqual({
      rewound: true,
      state: {
        stateVersion: 1,
        mode: 'modified',
        watermark: at - 30_000,
        rememberedAfter: at - 30_000 - 15 * 60_000,
        loaded: [modPrev.loaded[0]],
      },
    });
    expect(planReset(job({ by: 'modified' }), null, '2025-04-01').state).toMatchObject({
      watermark: Date.parse('2025-04-01T00:00:00Z'),
    });
  });

  it.each([
    ['2025-02-30', byDay, 'is not a real date'],
    ['03/01/2025', byDay, 'is not a partition date'],
    ['2025-03-01T05', byDay, 'names an hour but the layout has day partitions'],
    ['2025-03-01', { by: 'partition', layout: '{yyyy}/{mm}/{dd}/{HH}' }, 'names a day but layout'],
    ['2025-03-01T24', { by: 'partition', layout: '{yyyy}/{mm}/{dd}/{HH}' }, 'is not a real date'],
    [
      '2026-03-08T02',
      { by: 'partition', layout: '{yyyy}/{mm}/{dd}/{HH}', timezone: 'America/New_York' },
      'does not exist in time zone',
    ],
    ['yesterday', { by: 'modified' }, 'is not a timestamp'],
  ])('--to %s is refused with a ConfigError naming the field `to`', (to, discover, message) => {
    let err: unknown;
    try {
      planReset(job(discover), null, to);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).context.field).toBe('to');
    expect((err as Error).message).toContain(message);
    expect((err as Error).message).toContain('--to');
  });
});

type Driver = 'local' | 's3rver';

async function zoneOf(driver: Driver): Promise<{
  source: Storage;
  uri: string;
  storageConfig: Record<string, unknown>;
  root?: string;
}> {
  if (driver === 'local') {
    const root = await tempDir('rs-src', dirs);
    return { source: new LocalStorage(root), uri: root, storageConfig: {}, root };
  }
  const { source, uri, storageConfig } = s3.landingZone('landing');
  return { source, uri, storageConfig };
}

describe.each<Driver>(['local', 's3rver'])('reset then run (source: %s)', (driver) => {
  it('merge: a rewind commits only the txn and state, the next run reloads from there and the table is unchanged, a file changed in a rewound day is picked up', async () => {
    const zone = await zoneOf(driver);
    const landed: OrderRow[] = [];
    const days = ['01', '02', '03', '04', '05', '06'];
    for (const [i, d] of days.entries()) {
      const rows = orders([i % 3, `s${i}`, i + 1], [10 + i, 'placed', 1]);
      await land(zone.source, session, `2025/03/${d}/part.csv`, rows);
      landed.push(...rows);
    }
    const target = await tempDir('rs-t', dirs);
    const setup = makeConfig(
      { source: { uri: zone.uri, discover: byDay }, target: mergeTarget(target) },
      zone.storageConfig,
    );
    expect(await run(setup)).toMatchObject({
      status: 'succeeded',
      filesLoaded: 6,
      watermark: '2025-03-06',
    });
    const before = await readTarget(session, setup);

    const r = await reset(setup, { to: '2025-03-03' });
    expect(r).toMatchObject({
      status: 'reset',
      watermarkBefore: '2025-03-06',
      watermark: '2025-03-03',
      rewound: true,
      tableVersion: before.snapshot!.version + 1,
    });
    const commit = (await commitsOf(target)).at(-1)!;
    expect(commit).toMatchObject({
      operation: 'SET TRANSACTION',
      adds: [],
      removes: [],
      operationParameters: { job: 'orders', reset: '2025-03-06 → 2025-03-03' },
    });
    expect([...commit.txns]).toEqual([['tidemark.job.orders', before.state.batch + 1]]);
    const afterReset = await readTarget(session, setup);
    expect(afterReset.rows).toEqual(before.rows);
    expect(afterReset.state).toMatchObject({
      batch: before.state.batch + 1,
      discovery: { watermark: '2025-03-03', rememberedFrom: '2025-03-02', loaded: [] },
    });

    // Reloads the lookback day 03-02, its own day 03-03 and everything after: the MERGE leaves the table as it was.
    const rerun = await run(setup);
    expect(rerun).toMatchObject({
      status: 'succeeded',
      filesLoaded: 5,
      inserted: 0,
      updated: 0,
      watermark: '2025-03-06',
    });
    const after = await readTarget(session, setup);
    expect(after.rows).toEqual(before.rows);
    expect(duplicateRids(after.rows)).toEqual([]);
    expect(after.rows).toEqual(expectedLatest(landed));

    // A day outside the lookback corrected in place: only a rewind brings it in.
    await land(zone.source, session, '2025/03/02/part.csv', [
      landed[2]!,
      ...orders([11, 'corrected', 5]),
    ]);
    expect(await run(setup)).toMatchObject({ status: 'nothing-new' });
    await reset(setup, { to: '2025-03-01' });
    expect(await run(setup)).toMatchObject({ status: 'succeeded', filesLoaded: 6 });
    expect((await readTarget(session, setup)).rows.find((x) => x.order_id === 11)).toMatchObject({
      status: 'corrected',
      seq: 5,
    });
  });
});

describe('reset (source: local)', () => {
  async function appendSetup() {
    const root = await tempDir('rs-src', dirs);
    const source = new LocalStorage(root);
    const landed: OrderRow[] = [];
    for (const d of ['01', '02', '03']) {
      const rows = orders([Number(d), 'placed', 1]);
      await land(source, session, `2025/03/${d}/part.csv`, rows);
      landed.push(...rows);
    }
    const target = await tempDir('rs-t', dirs);
    return {
      root,
      landed,
      target,
      setup: makeConfig({
        source: { uri: root, discover: byDay },
        target: { uri: target, mode: 'append' },
      }),
    };
  }

  it('append: moving the watermark back is refused (ConfigError naming --force), advancing it is allowed and skips what it passes', async () => {
    const { setup, landed, root } = await appendSetup();
    await run(setup);
    const refused = await reset(setup, { to: '2025-03-01' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ConfigError);
    expect((refused as ConfigError).context.field).toBe('force');
    expect((await readTarget(session, setup)).state.discovery).toMatchObject({
      watermark: '2025-03-03',
    });

    const source = new LocalStorage(root);
    const lookback = orders([5, 'placed', 1]);
    const after = orders([7, 'placed', 1]);
    await land(source, session, '2025/03/04/part.csv', orders([4, 'placed', 1]));
    await land(source, session, '2025/03/05/part.csv', lookback);
    await land(source, session, '2025/03/07/part.csv', after);
    expect(await reset(setup, { to: '2025-03-06' })).toMatchObject({
      rewound: false,
      watermark: '2025-03-06',
    });
    // 03-04 is passed over; 03-05 is in the lookback of 03-06 and was never loaded: it loads, once.
    expect(await run(setup)).toMatchObject({ status: 'succeeded', filesLoaded: 2 });
    expect((await readTarget(session, setup)).rows).toEqual(
      sortRows([...landed, ...lookback, ...after]),
    );
  });

  it('append with --force: the days after the new watermark are reloaded through the ledger, their rows replaced, never appended twice', async () => {
    const { setup, landed, root } = await appendSetup();
    await run(setup);
    expect(await reset(setup, { to: '2025-03-01', force: true })).toMatchObject({
      status: 'reset',
      rewound: true,
    });
    // 03-01 (behind what the old state remembered, so not remembered now) and 03-02 unchanged: found in
    // the table, nothing appended; 03-03 corrected upstream since: its rows replaced.
    const corrected = orders([3, 'corrected', 2]);
    await land(new LocalStorage(root), session, '2025/03/03/part.csv', corrected);
    expect(await run(setup)).toMatchObject({
      status: 'succeeded',
      filesLoaded: 3,
      inserted: 1,
      filesAlreadyLoaded: 2,
      filesReplaced: 1,
      rowsReplaced: 1,
    });
    const rows = (await readTarget(session, setup)).rows;
    expect(duplicateRids(rows)).toEqual([]);
    expect(rows).toEqual(sortRows([...landed.slice(0, 2), ...corrected]));
  });

  it('a watermark in the future is refused naming --to (every run would find nothing new until then), unless --force', async () => {
    const { setup } = await appendSetup();
    await run(setup);
    const future = new Date(Date.now() + 3 * 86_400_000).toISOString().slice(0, 10);
    const refused = await reset(setup, { to: future }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ConfigError);
    expect((refused as ConfigError).context.field).toBe('to');
    expect((refused as Error).message).toMatch(/is in the future .*pass --force/);
    expect((await readTarget(session, setup)).state.discovery).toMatchObject({
      watermark: '2025-03-03',
    });
    expect(await reset(setup, { to: future, force: true })).toMatchObject({
      status: 'reset',
      watermark: future,
    });
  });

  it('dry run commits nothing, and refuses what the reset would refuse; a table that does not exist yet is refused', async () => {
    const { setup } = await appendSetup();
    const none = await reset(setup, { to: '2025-03-01' }).catch((e: unknown) => e);
    expect(none).toBeInstanceOf(ConfigError);
    expect((none as Error).message).toContain('does not exist yet');
    await run(setup);
    const version = (await readTarget(session, setup)).snapshot!.version;
    // Before, this dry run reported the rewind (exit 0) that the reset itself refuses (exit 2).
    const refused = await reset(setup, { to: '2025-03-01', dryRun: true }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ConfigError);
    expect((refused as ConfigError).context.field).toBe('force');
    expect(await reset(setup, { to: '2025-03-01', dryRun: true, force: true })).toMatchObject({
      status: 'dry-run',
      rewound: true,
      tableVersion: version,
    });
    expect((await readTarget(session, setup)).snapshot!.version).toBe(version);
  });

  it('modification-time mode: reset to a timestamp, the next run loads the files modified after it', async () => {
    const root = await tempDir('rs-src', dirs);
    const source = new LocalStorage(root);
    const t0 = Date.parse('2025-04-01T00:00:00Z');
    const landed: OrderRow[] = [];
    for (let i = 0; i < 4; i++) {
      const rows = orders([i, 'placed', 1]);
      await land(source, session, `f${i}.csv`, rows);
      await fsp.utimes(
        path.join(root, `f${i}.csv`),
        (t0 + i * 3_600_000) / 1000,
        (t0 + i * 3_600_000) / 1000,
      );
      landed.push(...rows);
    }
    const target = await tempDir('rs-t', dirs);
    const setup = makeConfig({
      source: { uri: root, discover: { by: 'modified', settle: '15m' } },
      target: mergeTarget(target),
    });
    expect(await run(setup)).toMatchObject({
      filesLoaded: 4,
      watermark: '2025-04-01T03:00:00.000Z',
    });
    expect(await reset(setup, { to: '2025-04-01T01:00:00Z' })).toMatchObject({
      watermark: '2025-04-01T01:00:00.000Z',
      rewound: true,
    });
    // f2 and f3 (after the new watermark) are reloaded; f1 (at it, inside the settle window) is
    // rechecked and found in the job's ledger: loaded.
    const again = await run(setup);
    expect(again).toMatchObject({
      filesLoaded: 2,
      inserted: 0,
      updated: 0,
      watermark: '2025-04-01T03:00:00.000Z',
    });
    expect(again.skippedByReason).toMatchObject({ 'already loaded': 1 });
    expect((await readTarget(session, setup)).rows).toEqual(expectedLatest(landed));
  });
});
