/**
 * Several jobs MERGE into one table (one job per source region). Each keeps its own state (txn
 * appId and domain `tidemark.job.<name>`), so their states never collide. Their commits race for
 * the same versions; a commit that lost to a job writing other keys is retried at the next
 * version without planning again (its read's key bounds exclude the winner's files), while one
 * that lost to a job writing the same keys plans again. The race is forced at an exact point: the
 * other job runs from this one's beforeCommit hook (fault injection: hook runs a rival job).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readJobState } from '../../src/job/state.js';
import { LocalStorage } from '../../src/storage/local.js';
import { commitsOf } from './backfill-helpers.js';
import {
  cleanup,
  DuckSession,
  duplicateRids,
  expectedLatest,
  land,
  makeConfig,
  mergeTarget,
  orders,
  readTarget,
  run,
  tempDir,
  type OrderRow,
} from './helpers.js';

let session: DuckSession;
const dirs: string[] = [];

beforeAll(async () => {
  session = await DuckSession.open();
});

afterAll(async () => {
  session?.close();
  await cleanup(dirs);
});

type Setup = ReturnType<typeof makeConfig>;

/** Two regions' landing zones and one job each, both into `target` (unpartitioned unless `partitionBy`). */
async function twoRegions(
  target: string,
  partitionBy?: string[],
): Promise<{ eu: Setup; us: Setup; zones: { eu: LocalStorage; us: LocalStorage } }> {
  const job = async (name: string) => {
    const root = await tempDir(`many-${name}`, dirs);
    const setup = makeConfig({
      name,
      source: { uri: root, discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}' } },
      target: { ...mergeTarget(target), ...(partitionBy ? { partitionBy } : {}) },
    });
    return { setup, zone: new LocalStorage(root) };
  };
  const eu = await job('eu');
  const us = await job('us');
  return { eu: eu.setup, us: us.setup, zones: { eu: eu.zone, us: us.zone } };
}

describe('many jobs, one table (target: local)', () => {
  it('jobs of disjoint keys race for a version: the loser retries the commit without planning again; both states intact', async () => {
    const target = await tempDir('many-t', dirs);
    const { eu, us, zones } = await twoRegions(target);
    const landed: OrderRow[] = [];
    const put = async (zone: LocalStorage, key: string, rows: OrderRow[]) => {
      await land(zone, session, key, rows);
      landed.push(...rows);
    };
    await put(zones.eu, '2026/01/01/a.csv', orders([1, 'placed', 1], [2, 'placed', 1]));
    await put(zones.us, '2026/01/01/a.csv', orders([10_001, 'placed', 1], [10_002, 'placed', 1]));
    await run(eu);
    await run(us);
    await put(zones.eu, '2026/01/02/b.csv', orders([1, 'paid', 2], [3, 'placed', 2]));
    await put(zones.us, '2026/01/02/b.csv', orders([10_001, 'paid', 2], [10_003, 'placed', 2]));

    let usReport: Awaited<ReturnType<typeof run>> | null = null;
    const euReport = await run(eu, {
      hooks: {
        beforeCommit: async () => {
          usReport ??= await run(us);
        },
      },
    });
    expect(usReport).toMatchObject({ status: 'succeeded', filesLoaded: 1, replans: 0 });
    expect(euReport).toMatchObject({
      status: 'succeeded',
      filesLoaded: 1,
      commits: 1,
      commitRetries: 1,
      replans: 0,
    });

    const table = await readTarget(session, eu);
    expect(duplicateRids(table.rows)).toEqual([]);
    expect(table.rows).toEqual(expectedLatest(landed));
    expect(readJobState(table.snapshot, 'eu').discovery).toMatchObject({ watermark: '2026-01-02' });
    expect(readJobState(table.snapshot, 'us').discovery).toMatchObject({ watermark: '2026-01-02' });
    expect(readJobState(table.snapshot, 'eu').batch).toBe(2);
    expect(readJobState(table.snapshot, 'us').batch).toBe(2);
    // Each commit carries exactly one job's txn and domain.
    for (const c of await commitsOf(target)) {
      const owners = [...c.txns.keys()];
      expect(owners.length).toBeLessThanOrEqual(1);
      expect([...c.domains.keys()]).toEqual(owners);
    }
  });

  it('jobs writing the same keys: the loser plans again on the winner and the newest row of each key wins', async () => {
    const target = await tempDir('many-t', dirs);
    const { eu, us, zones } = await twoRegions(target);
    const landed: OrderRow[] = [];
    const put = async (zone: LocalStorage, key: string, rows: OrderRow[]) => {
      await land(zone, session, key, rows);
      landed.push(...rows);
    };
    await put(zones.eu, '2026/01/01/a.csv', orders([1, 'placed', 1], [2, 'placed', 1]));
    await run(eu);
    await put(zones.eu, '2026/01/02/b.csv', orders([1, 'paid', 3], [2, 'paid', 2]));
    await put(zones.us, '2026/01/02/b.csv', orders([1, 'shipped', 2], [2, 'shipped', 4]));
    let raced = false;
    const euReport = await run(eu, {
      hooks: {
        beforeCommit: async () => {
          if (raced) return;
          raced = true;
          await run(us);
        },
      },
    });
    expect(euReport).toMatchObject({ status: 'succeeded', filesLoaded: 1, replans: 1 });
    const table = await readTarget(session, eu);
    expect(duplicateRids(table.rows)).toEqual([]);
    expect(table.rows).toEqual(expectedLatest(landed));
  });

  it('partitioned table: jobs writing other partitions pass each other as well', async () => {
    const target = await tempDir('many-t', dirs);
    const { eu, us, zones } = await twoRegions(target, ['status']);
    await land(zones.eu, session, '2026/01/01/a.csv', orders([1, 'placed', 1]));
    await land(zones.us, session, '2026/01/01/a.csv', orders([10_001, 'paid', 1]));
    await run(eu);
    await run(us);
    await land(zones.eu, session, '2026/01/02/b.csv', orders([5, 'placed', 2]));
    await land(zones.us, session, '2026/01/02/b.csv', orders([3, 'paid', 2]));
    let raced = false;
    const euReport = await run(eu, {
      hooks: { beforeCommit: async () => void (raced ||= (await run(us), true)) },
    });
    expect(euReport).toMatchObject({ status: 'succeeded', commitRetries: 1, replans: 0 });
  });
});
