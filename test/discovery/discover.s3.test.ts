/**
 * Discovery against an S3 server (s3rver through S3Storage): LastModified at second
 * precision and the store's clock from the HTTP Date header, as on AWS.
 *
 * s3rver stamps a multipart upload with its completion time (AWS uses the start time), so
 * the "below the watermark, inside the settle window" case is covered on a local folder
 * with fs.utimes (discover.local.test.ts) and by the pure planner tests instead.
 * Its delimiter listings also miss folders that hold only deeper folders, so the LIST
 * counts here use a one-level layout (`dt={yyyy}-{mm}-{dd}`).
 */
import pLimit from 'p-limit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { discover } from '../../src/discovery/discover.js';
import type { DiscoveryPlan } from '../../src/discovery/plan.js';
import type { Storage } from '../../src/storage/storage.js';
import { countingStorage } from '../helpers/counting-storage.js';
import { startS3rver, type S3rverHandle } from '../helpers/s3rver.js';
import { sleep } from '../helpers/cli.js';

const DAY_MS = 86_400_000;
let s3: S3rverHandle;

beforeAll(async () => {
  s3 = await startS3rver();
});

afterAll(async () => {
  await s3?.stop();
});

const keys = (plan: DiscoveryPlan) => plan.files.map((f) => f.key);
/** Wait until just after a whole second, so the next few writes share one LastModified second. */
async function startOfSecond(): Promise<void> {
  await sleep(1000 - (Date.now() % 1000) + 20);
}

describe('modification-time discovery on S3', () => {
  const config = { by: 'modified', settle: 15 * 60_000 } as const;

  it('a file landing in the same second as the watermark, after the run, loads exactly once', async () => {
    // Retry in the rare case the writes straddle a second boundary on a slow machine.
    for (let attempt = 1; ; attempt++) {
      const storage = s3.makeStorage();
      await startOfSecond();
      await storage.write('in/a.csv', 'a\n');
      const first = await discover(storage, config, null);
      await storage.write('in/b.csv', 'b\n');
      const [a, b] = [await storage.head('in/a.csv'), await storage.head('in/b.csv')];
      if (a!.lastModified.getTime() !== b!.lastModified.getTime() && attempt < 3) continue;
      expect(b!.lastModified).toEqual(a!.lastModified);

      expect(keys(first)).toEqual(['in/a.csv']);
      expect(first.nextState).toMatchObject({ watermark: a!.lastModified.getTime() });
      const second = await discover(storage, config, first.nextState);
      expect(keys(second)).toEqual(['in/b.csv']);
      expect(second.decisions).toContainEqual({
        key: 'in/a.csv',
        action: 'skip',
        reason: 'already loaded',
      });
      const third = await discover(storage, config, second.nextState);
      expect(third.files).toEqual([]);
      return;
    }
  });

  it('uses the server clock (HTTP Date) and lists first-level prefixes in parallel', async () => {
    const storage = countingStorage(s3.makeStorage());
    // (z/ holds a file of its own: s3rver would not list a folder holding only folders.)
    for (const key of ['x/1.csv', 'y/2.csv', 'z/3.csv', 'z/deep/4.csv', '.hidden/5.csv'])
      await storage.write(key, 'v\n');
    storage.reset();
    const before = Math.floor(Date.now() / 1000) * 1000;
    const plan = await discover(storage, config, null);
    expect(keys(plan).sort()).toEqual(['x/1.csv', 'y/2.csv', 'z/3.csv', 'z/deep/4.csv']);
    expect(plan.skippedFolders).toEqual([
      { prefix: '.hidden/', reason: 'not data (name starts with _ or .)' },
    ]);
    expect(plan.serverTime.getTime() % 1000).toBe(0); // HTTP dates have whole seconds
    expect(plan.serverTime.getTime()).toBeGreaterThanOrEqual(before);
    expect(storage.calls.map((c) => c.key).sort()).toEqual(['', 'x/', 'y/', 'z/']);
  });
});

describe('partition discovery on S3: LIST requests', () => {
  const layout = 'dt={yyyy}-{mm}-{dd}';

  async function landDays(storage: Storage, first: string, last: string): Promise<void> {
    const limit = pLimit(16);
    const writes: Promise<void>[] = [];
    for (let ms = Date.parse(first); ms <= Date.parse(last); ms += DAY_MS) {
      const day = new Date(ms).toISOString().slice(0, 10);
      writes.push(limit(() => storage.write(`dt=${day}/part-0.csv`, `${day}\n`)));
    }
    await Promise.all(writes);
  }

  /** Initial load up to 2025-06-12, three new days, then count the incremental run's LISTs. */
  async function incremental(historyStart: string) {
    const storage = countingStorage(s3.makeStorage());
    await landDays(storage, historyStart, '2025-06-12');
    const first = await discover(storage, { by: 'partition', layout }, null);
    await landDays(storage, '2025-06-13', '2025-06-15');
    storage.reset();
    const plan = await discover(storage, { by: 'partition', layout, lookback: 2 }, first.nextState);
    return { first, plan, requests: storage.counts.list };
  }

  it('an incremental run lists the new and lookback partitions only, however long the history', async () => {
    const long = await incremental('2024-11-01'); // 224 days
    const short = await incremental('2025-05-20'); // 24 days
    expect(long.first.files).toHaveLength(224);
    expect(keys(long.plan)).toEqual([
      'dt=2025-06-13/part-0.csv',
      'dt=2025-06-14/part-0.csv',
      'dt=2025-06-15/part-0.csv',
    ]);
    // 08, 09 late-checked, 10, 11 lookback, the watermark, 3 new.
    expect(long.plan.partitionsListed).toEqual(
      ['08', '09', '10', '11', '12', '13', '14', '15'].map((d) => `dt=2025-06-${d}/`),
    );
    // One root listing from StartAfter, plus the eight partitions.
    expect(long.requests).toBe(9);
    expect(short.requests).toBe(long.requests);
  });
});
