/**
 * The partition walk against real storage (a local folder, through LocalStorage), with a
 * counting wrapper: which folders are listed, which are reported, and how many LIST
 * requests a run issues.
 */
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { discover } from '../../src/discovery/discover.js';
import { Layout } from '../../src/discovery/layout.js';
import { walkPartitions } from '../../src/discovery/partitions.js';
import type { PartitionState } from '../../src/discovery/state.js';
import { LocalStorage } from '../../src/storage/local.js';
import { countingStorage } from '../helpers/counting-storage.js';

const DAY_MS = 86_400_000;
const tmpDirs: string[] = [];

async function tempDir(): Promise<string> {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'tidemark-walk-'));
  tmpDirs.push(dir);
  return dir;
}

/** Create files (key -> content) under `root`, many at a time. */
async function createFiles(root: string, keys: string[]): Promise<void> {
  for (let i = 0; i < keys.length; i += 200) {
    await Promise.all(
      keys.slice(i, i + 200).map(async (key) => {
        const file = path.join(root, ...key.split('/'));
        await fsp.mkdir(path.dirname(file), { recursive: true });
        await fsp.writeFile(file, `${key}\n`);
      }),
    );
  }
}

/** `yyyy/mm/dd/data.csv` for every day from `first` to `last` (inclusive, UTC dates). */
function dailyKeys(first: string, last: string): string[] {
  const keys: string[] = [];
  for (let ms = Date.parse(first); ms <= Date.parse(last); ms += DAY_MS) {
    keys.push(`${new Date(ms).toISOString().slice(0, 10).replaceAll('-', '/')}/data.csv`);
  }
  return keys;
}

afterAll(async () => {
  await Promise.all(tmpDirs.map((d) => fsp.rm(d, { recursive: true, force: true })));
});

describe('walking partition folders', () => {
  it('finds the partitions in range and reports folders that are not partitions', async () => {
    const root = await tempDir();
    await createFiles(root, [
      '2026/03/04/a.csv',
      '2026/03/05/b.csv',
      '2026/03/05/sub/c.csv',
      '2026/03/07/future.csv',
      '2026/04/01/future.csv',
      '2026/13/45/x.csv',
      '2026/02/30/x.csv',
      '2026/03/5/x.csv',
      'latest/x.csv',
      '_temporary/0/x.csv',
      '2026/notes.txt',
    ]);
    const storage = countingStorage(new LocalStorage(root));
    const walk = await walkPartitions(storage, Layout.parse('{yyyy}/{mm}/{dd}'), {
      from: '2026-03-01',
      until: () => '2026-03-06',
      concurrency: 4,
    });
    expect(walk.partitions.map((p) => [p.id, p.prefix, p.objects.map((o) => o.key)])).toEqual([
      ['2026-03-04', '2026/03/04/', ['2026/03/04/a.csv']],
      ['2026-03-05', '2026/03/05/', ['2026/03/05/b.csv', '2026/03/05/sub/c.csv']],
    ]);
    expect(walk.skippedFolders).toEqual(
      expect.arrayContaining([
        { prefix: '_temporary/', reason: 'not data (name starts with _ or .)' },
        { prefix: 'latest/', reason: "does not match layout level '{yyyy}'" },
        { prefix: '2026/13/', reason: 'impossible date: month 13 does not exist' },
        { prefix: '2026/04/', reason: 'after the current partition 2026-03-06 (store clock)' },
        { prefix: '2026/03/5/', reason: "does not match layout level '{dd}'" },
        { prefix: '2026/03/07/', reason: 'after the current partition 2026-03-06 (store clock)' },
      ]),
    );
    // 2026/02/ lies before the range: never listed, so its impossible day is not reported again.
    expect(walk.skippedFolders.map((s) => s.prefix)).not.toContain('2026/02/30/');
    expect(walk.strayObjects.map((o) => o.key)).toEqual(['2026/notes.txt']);
    expect(walk.listRequests).toBe(storage.counts.list);
    expect(storage.calls.map((c) => c.key).sort()).toEqual([
      '',
      '2026/',
      '2026/03/',
      '2026/03/04/',
      '2026/03/05/',
    ]);
  });

  it('walks two-level hour layouts from the first hour needed', async () => {
    const root = await tempDir();
    await createFiles(root, [
      'dt=2026-03-07/hour=23/a.json',
      'dt=2026-03-08/hour=00/a.json',
      'dt=2026-03-08/hour=01/a.json',
      'dt=2026-03-08/hour=03/a.json',
      'dt=2026-03-08/hour=04/a.json',
    ]);
    const storage = countingStorage(new LocalStorage(root));
    const walk = await walkPartitions(storage, Layout.parse('dt={yyyy}-{mm}-{dd}/hour={HH}'), {
      from: '2026-03-08T01',
      until: () => '2026-03-08T03',
      concurrency: 2,
    });
    expect(walk.partitions.map((p) => p.id)).toEqual(['2026-03-08T01', '2026-03-08T03']);
    expect(storage.calls.map((c) => c.key).sort()).toEqual([
      '',
      'dt=2026-03-08/',
      'dt=2026-03-08/hour=01/',
      'dt=2026-03-08/hour=03/',
    ]);
  });

  it('does not list literal folder levels, it goes straight into them', async () => {
    const root = await tempDir();
    await createFiles(root, ['region=eu/2026/03/05/a.csv', 'region=us/2026/03/05/b.csv']);
    const storage = countingStorage(new LocalStorage(root));
    const walk = await walkPartitions(storage, Layout.parse('region=eu/{yyyy}/{mm}/{dd}'), {
      from: '2026-03-05',
      until: () => '2026-03-05',
      concurrency: 1,
    });
    expect(walk.partitions.map((p) => p.prefix)).toEqual(['region=eu/2026/03/05/']);
    expect(storage.calls.map((c) => c.key)).toEqual([
      'region=eu/',
      'region=eu/2026/',
      'region=eu/2026/03/',
      'region=eu/2026/03/05/',
    ]);
  });
});

describe('LIST requests of an incremental run', () => {
  const layout = '{yyyy}/{mm}/{dd}';
  let threeYears: string;
  let oneYear: string;

  beforeAll(async () => {
    threeYears = await tempDir();
    oneYear = await tempDir();
    // Three years (and one year) of daily partitions up to 2025-06-12 (the watermark), one file each.
    await createFiles(threeYears, dailyKeys('2022-06-13', '2025-06-12'));
    await createFiles(oneYear, dailyKeys('2024-06-13', '2025-06-12'));
  });

  /** First run from the oldest partition, then three new days, then an incremental run. */
  async function incremental(root: string) {
    const storage = countingStorage(new LocalStorage(root));
    const first = await discover(storage, { by: 'partition', layout }, null);
    const firstRequests = storage.counts.list;
    await createFiles(root, dailyKeys('2025-06-13', '2025-06-15'));
    storage.reset();
    const plan = await discover(storage, { by: 'partition', layout, lookback: 2 }, first.nextState);
    return {
      first,
      firstRequests,
      plan,
      requests: storage.counts.list,
      listed: storage.calls.map((c) => c.key).sort(),
    };
  }

  it('depends on the new and lookback partitions, not on the years behind them', async () => {
    const three = await incremental(threeYears);
    expect(three.first.files).toHaveLength(1096);
    expect((three.first.nextState as PartitionState).watermark).toBe('2025-06-12');
    expect(three.firstRequests).toBeGreaterThan(1096);

    expect(three.plan.files.map((f) => f.key)).toEqual([
      '2025/06/13/data.csv',
      '2025/06/14/data.csv',
      '2025/06/15/data.csv',
    ]);
    // root + year 2025 + month 06 + partitions 08..15 (2 late-checked, 2 lookback, the watermark, 3 new).
    expect(three.listed).toEqual([
      '',
      '2025/',
      '2025/06/',
      ...['08', '09', '10', '11', '12', '13', '14', '15'].map((d) => `2025/06/${d}/`),
    ]);
    expect(three.requests).toBeLessThanOrEqual(12);
    expect(three.plan.listRequests).toBe(three.requests);

    const one = await incremental(oneYear);
    expect(one.first.files).toHaveLength(365);
    expect(one.requests).toBe(three.requests);
  });

  it('stays small across a year boundary', async () => {
    const root = await tempDir();
    await createFiles(root, dailyKeys('2023-01-01', '2024-12-31'));
    const storage = countingStorage(new LocalStorage(root));
    const first = await discover(storage, { by: 'partition', layout, start: '2024-12-25' }, null);
    expect(first.files).toHaveLength(7);
    await createFiles(root, dailyKeys('2025-01-01', '2025-01-02'));
    storage.reset();
    const plan = await discover(storage, { by: 'partition', layout }, first.nextState);
    expect(plan.files.map((f) => f.partition)).toEqual(['2025-01-01', '2025-01-02']);
    // root + 2 years + 2 months + 7 partitions (12-27 .. 01-02: 2 late-checked, 2 lookback, the watermark, 2 new)
    expect(storage.counts.list).toBe(12);
  });
});
