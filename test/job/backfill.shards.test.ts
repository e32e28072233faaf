/**
 * Sharded backfills, in process, on a local source and target (real put-if-absent): the split
 * itself (balanced, contiguous, covering the range exactly once), four shards at once giving the
 * table an unsharded backfill gives, each shard's own resumable state, status of every shard,
 * no-op reruns, --restart of one shard or all, and which other backfills are refused meanwhile.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatStatus } from '../../src/cli/output.js';
import { shardSelectionOf } from '../../src/cli/shard-flags.js';
import type { BackfillOptions } from '../../src/job/backfill/run.js';
import { parseBackfillRange } from '../../src/job/backfill/range.js';
import {
  describeShard,
  parseShardSelection,
  partitionsOf,
  shardFromIndexVariable,
  shardSlice,
  WHOLE_RANGE,
  type Shard,
} from '../../src/job/backfill/shard.js';
import {
  backfillAppId,
  readBackfillState,
  readBackfillStates,
  type BackfillState,
} from '../../src/job/backfill/state.js';
import { startState } from '../../src/job/backfill/plan.js';
import { decideStart } from '../../src/job/backfill/start.js';
import { PartitionClock } from '../../src/discovery/index.js';
import { readJobState } from '../../src/job/state.js';
import { jobStatus } from '../../src/job/status.js';
import { readHistory } from '../../src/job/history.js';
import { openTarget } from '../../src/job/open.js';
import { silentLogger } from '../../src/log/logger.js';
import { LocalStorage } from '../../src/storage/local.js';
import {
  buildFeed,
  daysFrom,
  landFeed,
  latestByOrder,
  type FeedRow,
} from '../../scripts/lib/daily-feed.js';
import { prng } from '../../scripts/lib/prng.js';
import { backfill, backfillOutcome } from './backfill-helpers.js';
import { duplicateOrders, logProblems, readFeedTable } from './feed-table.js';
import { utimes } from 'node:fs/promises';
import { join } from 'node:path';
import {
  cleanup,
  DuckSession,
  expectedLatest,
  land,
  makeConfig,
  mergeTarget,
  orders,
  readTarget,
  run,
  tempDir,
  unwrap,
  type OrderRow,
} from './helpers.js';

let session: DuckSession;
const dirs: string[] = [];
const DAYS = daysFrom('2026-01-01', 8);
const RANGE = { from: DAYS[0]!, to: DAYS[7]! };
let sourceRoot: string;
let landed: FeedRow[];

beforeAll(async () => {
  session = await DuckSession.open();
  sourceRoot = await tempDir('shards-src', dirs);
  const feed = buildFeed({
    days: DAYS,
    ordersPerDay: 6,
    updatesPerDay: 4,
    filesPerDay: 2,
    idBase: 1,
    tag: 'eu',
    random: prng(7),
  });
  await landFeed(new LocalStorage(sourceRoot), feed);
  landed = feed.rows;
});

afterAll(async () => {
  session?.close();
  await cleanup(dirs);
});

type Setup = ReturnType<typeof makeConfig>;

/** A job partitioned by order_date whose hourly run starts at the last two days; it has run once. */
async function tableWithJob(): Promise<{ setup: Setup; target: string }> {
  const target = await tempDir('shards-t', dirs);
  const setup = makeConfig({
    source: {
      uri: sourceRoot,
      discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}', start: DAYS[6] },
    },
    target: {
      uri: target,
      mode: 'merge',
      key: ['order_id'],
      orderBy: 'seq',
      partitionBy: ['order_date'],
    },
  });
  expect(await run(setup)).toMatchObject({ status: 'succeeded', watermark: DAYS[7] });
  return { setup, target };
}

const shard = (index: number, count: number): BackfillOptions['shard'] => ({
  kind: 'one',
  shard: { index, count },
});
const all = (count: number): BackfillOptions['shard'] => ({ kind: 'all', count });

describe('the split', () => {
  const daily = makeConfig({
    source: { uri: '/none', discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}' } },
    target: { uri: '/t', mode: 'append' },
  }).job;
  const hourly = makeConfig({
    source: {
      uri: '/none',
      discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}/{HH}', timezone: 'Europe/Berlin' },
    },
    target: { uri: '/t', mode: 'append' },
  }).job;
  const modified = makeConfig({
    source: { uri: '/none', discover: { by: 'modified' } },
    target: { uri: '/t', mode: 'append' },
  }).job;

  /** Every shard's partitions, concatenated. */
  function cover(
    job: typeof daily,
    from: string,
    to: string,
    count: number,
    zone = 'UTC',
  ): string[][] {
    const range = parseBackfillRange(job, from, to);
    return Array.from({ length: count }, (_, index) => {
      const slice = shardSlice(job, range, { index, count });
      return slice?.mode === 'partition' ? partitionsOf(slice, new PartitionClock(zone)) : [];
    });
  }

  it('partition ranges: N runs of consecutive partitions, sizes differing by at most one, covering the range once in order', () => {
    for (const [days, count] of [
      [90, 1],
      [90, 4],
      [31, 4],
      [7, 3],
      [3, 5],
    ] as const) {
      const to = daysFrom('2026-01-01', days).at(-1)!;
      const parts = cover(daily, '2026-01-01', to, count);
      expect(parts.flat()).toEqual(daysFrom('2026-01-01', days));
      const sizes = parts.map((p) => p.length);
      expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
    }
    expect(cover(daily, '2026-01-01', '2026-01-03', 5).map((p) => p.length)).toEqual([
      0, 1, 0, 1, 1,
    ]);
    expect(
      shardSlice(daily, parseBackfillRange(daily, '2026-01-01', '2026-01-03'), {
        index: 0,
        count: 5,
      }),
    ).toBeNull();
  });

  it('hourly layouts count the hours a time zone has (23 on the spring-forward day in Berlin)', () => {
    const parts = cover(hourly, '2026-03-29', '2026-03-29', 2, 'Europe/Berlin');
    expect(parts.flat()).toHaveLength(23);
    expect(parts.flat()).not.toContain('2026-03-29T02');
    expect(parts.map((p) => p.length)).toEqual([11, 12]);
  });

  it('modification-time ranges: N equal, consecutive intervals of milliseconds', () => {
    const range = parseBackfillRange(modified, '2026-01-01', '2026-01-04');
    const slices = [0, 1, 2, 3].map((index) => shardSlice(modified, range, { index, count: 4 }));
    expect(slices.map((s) => s && new Date(s.from).toISOString())).toEqual([
      '2026-01-01T00:00:00.000Z',
      '2026-01-02T00:00:00.000Z',
      '2026-01-03T00:00:00.000Z',
      '2026-01-04T00:00:00.000Z',
    ]);
    expect(slices.map((s) => s && new Date(s.to).toISOString())).toEqual([
      '2026-01-01T23:59:59.999Z',
      '2026-01-02T23:59:59.999Z',
      '2026-01-03T23:59:59.999Z',
      '2026-01-04T23:59:59.999Z',
    ]);
  });

  it('K/N counts from 1 (1/4 … 4/4, as Playwright, Jest and Vitest); an index variable counts from 0; all/N; bad values are refused naming where they came from', () => {
    expect(parseShardSelection('1/4', '--shard')).toEqual({
      kind: 'one',
      shard: { index: 0, count: 4 },
    });
    expect(parseShardSelection('4/4', '--shard')).toEqual({
      kind: 'one',
      shard: { index: 3, count: 4 },
    });
    expect(parseShardSelection('3/4', 'TIDEMARK_SHARD')).toEqual({
      kind: 'one',
      shard: { index: 2, count: 4 },
    });
    expect(describeShard({ index: 0, count: 4 })).toBe('1/4');
    expect(parseShardSelection(' ALL / 4 ', '--shard')).toEqual({ kind: 'all', count: 4 });
    expect(() => parseShardSelection('0/4', '--shard')).toThrow(
      /--shard "0\/4": shard 0 is not one of 1 … 4: shards count from 1 \(1\/4 … 4\/4\); a scheduler's 0-based index goes in --shards 4 --shard-index-env NAME/,
    );
    expect(() => parseShardSelection('5/4', '--shard')).toThrow(
      /--shard "5\/4": shard 5 is not one of 1 … 4/,
    );
    expect(() => parseShardSelection('1/0', 'TIDEMARK_SHARD')).toThrow(
      /TIDEMARK_SHARD "1\/0": the number of shards must be a whole number of at least 1/,
    );
    expect(() => parseShardSelection('1 of 4', '--shard')).toThrow(/expected K\/N/);
    expect(shardFromIndexVariable('JOB_COMPLETION_INDEX', '3', 4)).toEqual({ index: 3, count: 4 });
    expect(describeShard(shardFromIndexVariable('AWS_BATCH_JOB_ARRAY_INDEX', '0', 4))).toBe('1/4');
    expect(() => shardFromIndexVariable('AWS_BATCH_JOB_ARRAY_INDEX', '4', 4)).toThrow(
      /is 4, not below --shards 4.*does the array size match/,
    );
    expect(() => shardFromIndexVariable('JOB_COMPLETION_INDEX', undefined, 4)).toThrow(
      /JOB_COMPLETION_INDEX is not set/,
    );
  });

  it('the CLI takes --shard, else --shards N with --shard-index-env NAME, else TIDEMARK_SHARD; mixing is refused', () => {
    const env = { TIDEMARK_SHARD: '2/3', JOB_COMPLETION_INDEX: '2' };
    const one = (index: number, count: number) => ({
      kind: 'one',
      shard: { index, count } satisfies Shard,
    });
    expect(shardSelectionOf({ shard: '1/2' }, env)).toEqual(one(0, 2));
    expect(shardSelectionOf({ shards: '4', shardIndexEnv: 'JOB_COMPLETION_INDEX' }, env)).toEqual(
      one(2, 4),
    );
    expect(shardSelectionOf({}, env)).toEqual(one(1, 3));
    expect(shardSelectionOf({}, {})).toBeUndefined();
    expect(() => shardSelectionOf({ shard: '1/2', shards: '4' }, env)).toThrow(
      /either --shard K\/N, or --shards N/,
    );
    expect(() => shardSelectionOf({ shards: '4' }, env)).toThrow(/go together/);
    expect(() => shardSelectionOf({ shards: 'four', shardIndexEnv: 'X' }, env)).toThrow(
      /--shards "four"/,
    );
  });
});

describe('sharded backfill (target: local, partitioned by order_date)', () => {
  let reference: FeedRow[];

  beforeAll(async () => {
    const { setup } = await tableWithJob();
    await backfill(setup, RANGE);
    reference = (await readFeedTable(session, setup)).rows;
    expect(reference.map(({ rid, ...r }) => ({ ...r, rid }))).toEqual(
      latestByOrder(landed).sort((a, b) => a.order_id - b.order_id || (a.rid < b.rid ? -1 : 1)),
    );
  });

  it('four shards at once give the table an unsharded backfill gives; each loads its own slice; the job state is untouched', async () => {
    const { setup, target } = await tableWithJob();
    const jobBefore = readJobState((await readFeedTable(session, setup)).snapshot, 'orders');
    const reports = await Promise.all(
      [0, 1, 2, 3].map((i) => backfill(setup, { ...RANGE, shard: shard(i, 4) })),
    );
    expect(reports.map((r) => [r.shard, r.part, r.status, r.doneThrough])).toEqual([
      ['1/4', { from: DAYS[0], to: DAYS[1] }, 'succeeded', DAYS[1]],
      ['2/4', { from: DAYS[2], to: DAYS[3] }, 'succeeded', DAYS[3]],
      ['3/4', { from: DAYS[4], to: DAYS[5] }, 'succeeded', DAYS[5]],
      ['4/4', { from: DAYS[6], to: DAYS[7] }, 'succeeded', DAYS[7]],
    ]);
    expect(reports.reduce((n, r) => n + r.filesLoaded, 0)).toBe(16);
    expect(reports.every((r) => r.watermark === DAYS[7])).toBe(true);
    const table = await readFeedTable(session, setup);
    expect(duplicateOrders(table.rows)).toEqual([]);
    expect(table.rows).toEqual(reference);
    expect(readJobState(table.snapshot, 'orders')).toEqual(jobBefore);
    expect(await logProblems(target)).toEqual([]);
    const states = readBackfillStates(table.snapshot, 'orders');
    expect([...states.keys()].sort()).toEqual(
      [0, 1, 2, 3].map((i) => `tidemark.backfill.orders@shard-${i}-of-4`),
    );
    expect(
      [...states.values()].every((s) => s.status === 'done' && s.totals.filesLoaded === 4),
    ).toBe(true);

    // status: every shard; a rerun of a finished shard is a no-op.
    const status = unwrap(
      await jobStatus(setup.job, { storage: setup.storage, logger: silentLogger(), tty: false }),
    );
    expect(status.backfill).toMatchObject({
      from: RANGE.from,
      to: RANGE.to,
      status: 'done',
      shards: [
        { shard: '1/4', status: 'done', filesLoaded: 4 },
        {},
        {},
        { shard: '4/4', part: { from: DAYS[6], to: DAYS[7] } },
      ],
    });
    expect(formatStatus(status)).toContain(`backfill ${RANGE.from}..${RANGE.to} in 4 shards: done`);
    expect(formatStatus(status)).toContain(`    shard 3/4 ${DAYS[4]}..${DAYS[5]}: done; 4 files`);
    const again = await backfill(setup, { ...RANGE, shard: shard(1, 4) });
    expect(again).toMatchObject({
      status: 'already-done',
      commits: 0,
      tableVersion: table.snapshot!.version,
    });
  });

  it('shards of the range run side by side; another range, or the same range split another way, is refused until they finish', async () => {
    const { setup } = await tableWithJob();
    expect(await backfill(setup, { ...RANGE, shard: shard(0, 4) })).toMatchObject({
      status: 'succeeded',
      commits: 3,
    });
    const status = unwrap(
      await jobStatus(setup.job, { storage: setup.storage, logger: silentLogger(), tty: false }),
    );
    expect(status.backfill?.shards?.map((s) => s.status)).toEqual([
      'done',
      'pending',
      'pending',
      'pending',
    ]);
    expect(formatStatus(status)).toContain('1 of 4 shards done');
    // A pending shard has committed nothing itself (the opening commit wrote its state): no updatedAt (docs/operations.md).
    expect(status.backfill?.shards?.map((s) => s.updatedAt === null)).toEqual([
      false,
      true,
      true,
      true,
    ]);
    expect(formatStatus(status)).toContain(
      `    shard 2/4 ${DAYS[2]}..${DAYS[3]}: pending; 0 files, 0 rows (not started)`,
    );
    // history labels a shard's data commits with the range and the shard, as the docs show.
    const { entries } = await readHistory(openTarget(setup.job, setup.storage), {
      limit: 5,
      job: 'orders',
    });
    const shardCommits = entries.filter((e) => e.kind === 'backfill');
    expect(shardCommits.length).toBeGreaterThan(1);
    for (const e of shardCommits)
      expect(e.backfill).toMatch(new RegExp(`^${RANGE.from}\\.\\.${RANGE.to}( shard 1/4)?$`));
    expect(shardCommits.filter((e) => e.operation === 'MERGE').map((e) => e.backfill)).toContain(
      `${RANGE.from}..${RANGE.to} shard 1/4`,
    );

    const other = await backfillOutcome(setup, { from: DAYS[0]!, to: DAYS[2]! });
    expect(other.ok).toBe(false);
    expect(String(other.ok ? '' : (other.error as Error).message)).toMatch(
      /in 4 shards is unfinished \(1 of 4 shards done; unfinished: 2\/4, 3\/4, 4\/4\).*--shard K\/4.*--restart/,
    );
    const twoWay = await backfillOutcome(setup, { ...RANGE, shard: shard(0, 2) });
    expect(twoWay.ok).toBe(false);

    for (const i of [1, 2, 3])
      expect(await backfill(setup, { ...RANGE, shard: shard(i, 4) })).toMatchObject({
        status: 'succeeded',
        filesLoaded: 4,
      });
    expect(await backfill(setup, { from: DAYS[0]!, to: DAYS[2]! })).toMatchObject({
      status: 'succeeded',
      filesLoaded: 6,
    });
  });

  it('on a table that does not exist yet, shards run one at a time: each writes its own state, the others show as not started and hold off another backfill; an empty slice is marked done', async () => {
    const target = await tempDir('shards-new', dirs);
    const setup = makeConfig({
      source: {
        uri: sourceRoot,
        discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}', start: DAYS[6] },
      },
      target: {
        uri: target,
        mode: 'merge',
        key: ['order_id'],
        orderBy: 'seq',
        partitionBy: ['order_date'],
      },
    });
    // Three days in four shards: one slice is empty.
    const three = { from: DAYS[0]!, to: DAYS[2]! };
    const range = parseBackfillRange(setup.job, three.from, three.to);
    const slices = [0, 1, 2, 3].map((i) => shardSlice(setup.job, range, { index: i, count: 4 }));
    const empty = slices.findIndex((slice) => slice === null);
    expect(empty).toBeGreaterThanOrEqual(0);
    const order = [0, 1, 2, 3].filter((i) => i !== empty);
    const status = async () =>
      unwrap(
        await jobStatus(setup.job, { storage: setup.storage, logger: silentLogger(), tty: false }),
      );

    expect(await backfill(setup, { ...three, shard: shard(order[0]!, 4) })).toMatchObject({
      status: 'succeeded',
      filesLoaded: 2,
    });
    const first = await status();
    expect(first.backfill?.status).toBe('running');
    expect(first.backfill?.shards?.map((s) => s.status)).toEqual(
      [0, 1, 2, 3].map((i) => (i === order[0] ? 'done' : 'pending')),
    );
    expect(first.backfill?.shards?.[empty]).toMatchObject({ part: null, updatedAt: null });
    expect(formatStatus(first)).toContain('1 of 4 shards done');
    expect(formatStatus(first)).toContain('(not started)');
    const other = await backfillOutcome(setup, RANGE);
    expect(other.ok ? '' : (other.error as Error).message).toMatch(
      /in 4 shards is unfinished \(1 of 4 shards done; unfinished: /,
    );

    for (const i of order.slice(1))
      expect(await backfill(setup, { ...three, shard: shard(i, 4) })).toMatchObject({
        status: 'succeeded',
        filesLoaded: 2,
      });
    expect((await status()).backfill?.status).toBe('running');
    // The empty slice loads nothing and records that it is done.
    expect(await backfill(setup, { ...three, shard: shard(empty, 4) })).toMatchObject({
      status: 'succeeded',
      filesLoaded: 0,
      commits: 1,
    });
    const done = await status();
    expect(done.backfill).toMatchObject({ status: 'done' });
    expect(done.backfill?.shards?.map((s) => s.status)).toEqual(['done', 'done', 'done', 'done']);
    const table = await readFeedTable(session, setup);
    expect(duplicateOrders(table.rows)).toEqual([]);
    expect(await logProblems(target)).toEqual([]);
    expect(await backfill(setup, RANGE)).toMatchObject({ status: 'succeeded' });
  });

  it('--partitions-per-commit: each shard commits several whole days at once; the table is the same', async () => {
    const { setup, target } = await tableWithJob();
    const reports = await Promise.all(
      [0, 1].map((i) => backfill(setup, { ...RANGE, shard: shard(i, 2), partitionsPerCommit: 2 })),
    );
    // Four days per shard in two commits each, plus the commit that opened the split.
    expect(reports.reduce((n, r) => n + r.commits, 0)).toBe(5);
    expect((await readFeedTable(session, setup)).rows).toEqual(reference);
    expect(await logProblems(target)).toEqual([]);
  });

  it('--restart of one shard reloads only its slice; --shard all/N --restart starts every shard over; all/N --dry-run shows the split', async () => {
    const { setup, target } = await tableWithJob();
    for (const i of [0, 1, 2, 3]) await backfill(setup, { ...RANGE, shard: shard(i, 4) });
    const restarted = await backfill(setup, { ...RANGE, shard: shard(2, 4), restart: true });
    expect(restarted).toMatchObject({
      status: 'succeeded',
      filesLoaded: 4,
      part: { from: DAYS[4], to: DAYS[5] },
    });
    const snap = (await readFeedTable(session, setup)).snapshot;
    expect(readBackfillState(snap, 'orders', { index: 2, count: 4 })).toMatchObject({
      status: 'done',
      totals: { filesLoaded: 4 },
    });
    expect(readBackfillState(snap, 'orders', { index: 0, count: 4 })?.batch).toBe(3);

    const dry = await backfill(setup, { ...RANGE, shard: all(4), dryRun: true });
    expect(dry.split?.map((s) => [s.shard, s.status, s.files])).toEqual([
      ['1/4', 'done', 0],
      ['2/4', 'done', 0],
      ['3/4', 'done', 0],
      ['4/4', 'done', 0],
    ]);
    expect(dry.tableVersion).toBe(snap!.version);

    expect(await backfill(setup, { ...RANGE, shard: all(4), restart: true })).toMatchObject({
      status: 'reset',
      commits: 1,
    });
    const reset = await backfill(setup, { ...RANGE, shard: all(4), dryRun: true });
    expect(reset.split?.map((s) => [s.status, s.files])).toEqual([
      ['running', 4],
      ['running', 4],
      ['running', 4],
      ['running', 4],
    ]);
    await Promise.all([0, 1, 2, 3].map((i) => backfill(setup, { ...RANGE, shard: shard(i, 4) })));
    const table = await readFeedTable(session, setup);
    expect(table.rows).toEqual(reference);
    expect(
      [...readBackfillStates(table.snapshot, 'orders').values()].map((s) => s.totals.filesLoaded),
    ).toEqual([4, 4, 4, 4]);
    expect(await logProblems(target)).toEqual([]);

    const bare = await backfillOutcome(setup, { ...RANGE, shard: all(4) });
    expect(bare.ok ? null : (bare.error as Error).message).toMatch(
      /--shard all\/4 shows \(--dry-run\) or restarts \(--restart\) every shard/,
    );
  });
});

describe('sharded backfill by modification time (source and target: local)', () => {
  it('each shard takes its interval of the range by LastModified; together they load what an unsharded backfill does', async () => {
    const root = await tempDir('shards-mod', dirs);
    const zone = new LocalStorage(root);
    const t0 = Date.parse('2025-04-01T00:00:00Z');
    const rows: OrderRow[] = [];
    for (let i = 0; i < 8; i++) {
      const batch = orders([i % 3, `s${i}`, i + 1], [10 + i, 'placed', 1]);
      await land(zone, session, `f${i}.csv`, batch);
      const at = new Date(t0 + i * 6 * 3_600_000); // four files a day, over two days
      await utimes(join(root, `f${i}.csv`), at, at);
      rows.push(...batch);
    }
    const setupWith = async () =>
      makeConfig({
        source: { uri: root, discover: { by: 'modified' } },
        target: mergeTarget(await tempDir('shards-mod-t', dirs)),
      });
    const range = { from: '2025-04-01', to: '2025-04-02' };
    const sharded = await setupWith();
    const first = await backfill(sharded, { ...range, shard: shard(0, 2) });
    const second = await backfill(sharded, { ...range, shard: shard(1, 2) });
    expect([first, second].map((r) => [r.part, r.filesLoaded, r.status])).toEqual([
      [{ from: '2025-04-01T00:00:00.000Z', to: '2025-04-01T23:59:59.999Z' }, 4, 'succeeded'],
      [{ from: '2025-04-02T00:00:00.000Z', to: '2025-04-02T23:59:59.999Z' }, 4, 'succeeded'],
    ]);
    const whole = await setupWith();
    await backfill(whole, range);
    const a = await readTarget(session, sharded);
    expect(a.rows).toEqual(expectedLatest(rows));
    expect(a.rows).toEqual((await readTarget(session, whole)).rows);
    expect(
      [...readBackfillStates(a.snapshot, 'orders').values()].every((s) => s.status === 'done'),
    ).toBe(true);
  });
});

describe('decideStart with shards', () => {
  const R = { mode: 'partition' as const, from: '2026-01-01', to: '2026-01-31' };
  const other = { ...R, to: '2026-01-10' };
  const at = (ms: number) => new Date(Date.parse('2026-02-01T00:00:00Z') + ms);
  const stateOf = (
    range: typeof R,
    s: Shard,
    patch: Partial<BackfillState> = {},
    startedMs = 0,
  ): [string, BackfillState] => [
    backfillAppId('orders', s),
    { ...startState('orders', range, null, at(startedMs), { shard: s, slice: range }), ...patch },
  ];
  const decide = (
    states: Array<[string, BackfillState]>,
    range: typeof R,
    s: Shard,
    restart = false,
  ) => decideStart('orders', new Map(states), range, s, restart).kind;
  const four = (i: number): Shard => ({ index: i, count: 4 });

  it('the first shard opens the split; shards of the current backfill resume, skip when done, or start alone when never opened', () => {
    expect(decide([], R, four(1))).toBe('open');
    const split = [
      stateOf(R, four(0), { status: 'done' }),
      stateOf(R, four(1), { doneThrough: '2026-01-10' }),
      stateOf(R, four(2)),
    ];
    expect(decide(split, R, four(0))).toBe('already-done');
    expect(decide(split, R, four(1))).toBe('resume');
    expect(decide(split, R, four(3))).toBe('fresh');
    expect(decide(split, R, four(0), true)).toBe('fresh');
  });

  it('another range, or the same range split otherwise, is refused while a shard is unfinished; --restart opens it anew', () => {
    const split = [stateOf(R, four(0), { status: 'done' }), stateOf(R, four(1))];
    // Shards 3/4 and 4/4 (indexes 2 and 3) have no state yet (the split was never opened: there was no table): not done either.
    expect(() => decide(split, other, four(0))).toThrow(
      /in 4 shards is unfinished \(1 of 4 shards done; unfinished: 2\/4, 3\/4, 4\/4\)/,
    );
    const twoDone = [
      stateOf(R, four(0), { status: 'done' }),
      stateOf(R, four(1), { status: 'done' }),
    ];
    expect(() => decide(twoDone, other, four(0))).toThrow(
      /\(2 of 4 shards done; unfinished: 3\/4, 4\/4\)/,
    );
    expect(() => decide(split, R, { index: 0, count: 2 })).toThrow(/unfinished/);
    expect(() => decide(split, R, WHOLE_RANGE)).toThrow(/unfinished/);
    expect(decide(split, other, four(0), true)).toBe('open');
    expect(decide(split, R, WHOLE_RANGE, true)).toBe('fresh');
  });

  it("the current backfill is the highest generation, whatever the workers' clocks said; a new one takes the next", () => {
    const older = [
      stateOf(R, four(0), { generation: 1 }, 5000),
      stateOf(R, four(1), { generation: 1, status: 'done' }, 5000),
    ];
    const newer = stateOf(other, WHOLE_RANGE, { generation: 2 }, 0);
    expect(() => decide([...older, newer], R, four(1))).toThrow(
      /a backfill of 2026-01-01..2026-01-10 is unfinished/,
    );
    expect(
      decideStart(
        'orders',
        new Map([...older, [newer[0], { ...newer[1], status: 'done' }]]),
        R,
        four(0),
        false,
      ),
    ).toEqual({ kind: 'open', generation: 3 });
    expect(decideStart('orders', new Map(older), R, four(0), true)).toEqual({
      kind: 'fresh',
      generation: 1,
    });
  });

  it('once every shard is done another backfill starts; the one started last is current, its older states are left alone', () => {
    const done = [0, 1, 2, 3].map((i) => stateOf(R, four(i), { status: 'done' }));
    expect(decide(done, other, four(0))).toBe('open');
    expect(decide(done, other, WHOLE_RANGE)).toBe('fresh');
    // An unsharded backfill of `other` started later and is unfinished: the old split is no longer current.
    const later = [...done, stateOf(other, WHOLE_RANGE, {}, 1000)];
    expect(() => decide(later, R, four(1))).toThrow(
      /a backfill of 2026-01-01..2026-01-10 is unfinished/,
    );
    expect(
      decide([...done, stateOf(other, WHOLE_RANGE, { status: 'done' }, 1000)], R, four(1)),
    ).toBe('open');
  });
});
