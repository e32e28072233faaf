/**
 * `discover` end to end on a local folder (LocalStorage): modification times set with
 * fs.utimes, parallel listing over first-level prefixes, and the errors a user can hit.
 */
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { discover, nextStateFor } from '../../src/discovery/discover.js';
import type { DiscoveryPlan } from '../../src/discovery/plan.js';
import {
  DiscoveryStateError,
  upgradeState,
  type DiscoveryState,
} from '../../src/discovery/state.js';
import { ConfigError } from '../../src/errors.js';
import { LocalStorage } from '../../src/storage/local.js';
import { countingStorage, type CountingStorage } from '../helpers/counting-storage.js';

const dirs: string[] = [];
let root: string;
let storage: CountingStorage;

beforeEach(async () => {
  root = await fsp.mkdtemp(path.join(os.tmpdir(), 'tidemark-discover-'));
  dirs.push(root);
  storage = countingStorage(new LocalStorage(root));
});

afterAll(async () => {
  await Promise.all(dirs.map((d) => fsp.rm(d, { recursive: true, force: true })));
});

/** Write a file whose modification time is `mtimeMs`. */
async function land(key: string, mtimeMs: number): Promise<void> {
  const file = path.join(root, ...key.split('/'));
  await fsp.mkdir(path.dirname(file), { recursive: true });
  await fsp.writeFile(file, `${key}\n`);
  await fsp.utimes(file, mtimeMs / 1000, mtimeMs / 1000);
}

const keys = (plan: DiscoveryPlan) => plan.files.map((f) => f.key);

describe('discover by modification time on a local folder', () => {
  const config = { by: 'modified', settle: 15 * 60_000 } as const;

  it('lists the first level once, then each first-level prefix, skipping hidden folders', async () => {
    const t = Date.now() - 3_600_000;
    await land('a/1.csv', t);
    await land('b/x/2.csv', t);
    await land('c/3.csv', t);
    await land('top.csv', t);
    await land('_tmp/4.csv', t);
    const plan = await discover(storage, config, null, { concurrency: 2 });
    expect(keys(plan).sort()).toEqual(['a/1.csv', 'b/x/2.csv', 'c/3.csv', 'top.csv']);
    expect(storage.calls.map((c) => c.key).sort()).toEqual(['', 'a/', 'b/', 'c/']);
    expect(plan.skippedFolders).toEqual([
      { prefix: '_tmp/', reason: 'not data (name starts with _ or .)' },
    ]);
    expect(plan.partitionsListed).toEqual(['a/', 'b/', 'c/']);
  });

  it('same-second ties and a file below the watermark inside the settle window load exactly once', async () => {
    const t = Math.floor((Date.now() - 60_000) / 1000) * 1000;
    await land('in/a.csv', t);
    const first = await discover(storage, config, null);
    expect(keys(first)).toEqual(['in/a.csv']);
    expect(first.nextState).toMatchObject({ watermark: t });

    await land('in/b.csv', t); // same second as the watermark
    await land('in/multipart.csv', t - 5 * 60_000); // started before, completed after the first run
    await land('in/ancient.csv', t - 60 * 60_000); // older than the window: not a candidate
    const second = await discover(storage, config, first.nextState);
    expect(keys(second)).toEqual(['in/multipart.csv', 'in/b.csv']);
    expect(second.olderThanWindow).toBe(1);

    const third = await discover(storage, config, second.nextState);
    expect(third.files).toEqual([]);
    expect(third.nextState).toEqual(second.nextState);
  });

  it('a file rewritten in place is reported and reloaded', async () => {
    const t = Date.now() - 120_000;
    await land('in/a.csv', t);
    const first = await discover(storage, config, null);
    await land('in/a.csv', t + 60_000);
    const second = await discover(storage, config, first.nextState);
    expect(second.decisions).toEqual([
      { key: 'in/a.csv', action: 'load', reason: 'overwritten, reloading' },
    ]);
  });
});

describe('discover by partition on a local folder', () => {
  it('loads the open partition (today) as files arrive', async () => {
    const today = new Date().toISOString().slice(0, 10).replaceAll('-', '/');
    await land(`${today}/a.csv`, Date.now() - 1000);
    const config = { by: 'partition', layout: '{yyyy}/{mm}/{dd}' } as const;
    const first = await discover(storage, config, null);
    expect(keys(first)).toEqual([`${today}/a.csv`]);
    await land(`${today}/b.csv`, Date.now());
    const second = await discover(storage, config, first.nextState);
    expect(keys(second)).toEqual([`${today}/b.csv`]);
    // Committed batch by batch, the state equals the plan's.
    expect(nextStateFor(first.nextState, second, second.files)).toEqual(second.nextState);
  });
});

describe('discover: errors', () => {
  const partitionState: DiscoveryState = {
    stateVersion: 1,
    mode: 'partition',
    watermark: '2026-03-05',
    rememberedFrom: '2026-03-03',
    loaded: [],
  };

  it('refuses a state written by the other mode, naming discover.by', async () => {
    await expect(discover(storage, { by: 'modified' }, partitionState)).rejects.toMatchObject({
      constructor: ConfigError,
      context: { field: 'discover.by' },
    });
  });

  it('refuses a watermark of another granularity than the layout, giving the exact value to reset to', async () => {
    await expect(
      discover(storage, { by: 'partition', layout: '{yyyy}/{mm}/{dd}/{HH}' }, partitionState),
    ).rejects.toThrow(
      /watermark 2026-03-05 does not fit layout '\{yyyy\}\/\{mm\}\/\{dd\}\/\{HH\}' \(hour partitions\); reset the job to 2026-03-05T23 \(tidemark reset --to 2026-03-05T23\)/,
    );
    const hourly: DiscoveryState = {
      ...partitionState,
      watermark: '2026-03-05T07',
      rememberedFrom: '2026-03-05T05',
    };
    await expect(
      discover(storage, { by: 'partition', layout: '{yyyy}/{mm}/{dd}' }, hourly),
    ).rejects.toMatchObject({
      context: { field: 'discover.layout', resetTo: '2026-03-04' },
    });
  });

  it('refuses a start after the store clock on the first run (every run would be nothing-new, silently)', async () => {
    await land('2026/03/01/a.csv', Date.now() - 60_000);
    const tomorrow = new Date(Date.now() + 2 * 86_400_000).toISOString().slice(0, 10);
    await expect(
      discover(storage, { by: 'partition', layout: '{yyyy}/{mm}/{dd}', start: tomorrow }, null),
    ).rejects.toMatchObject({
      constructor: ConfigError,
      context: { field: 'discover.start' },
      message: expect.stringMatching(/is after the store's clock/),
    });
    await expect(
      discover(storage, { by: 'modified', start: `${tomorrow}T00:00:00Z` }, null),
    ).rejects.toMatchObject({ context: { field: 'discover.start' } });
    // A start that has come is fine.
    await expect(
      discover(storage, { by: 'modified', start: '2026-01-01' }, null),
    ).resolves.toMatchObject({ mode: 'modified' });
  });

  it.each([
    [
      { by: 'partition', layout: '{yyyy}/{mm}/{dd}', start: '2026-02-30' },
      'discover.start',
      /not a real date/,
    ],
    [
      { by: 'partition', layout: '{yyyy}/{mm}/{dd}', start: '2026-03-01T05' },
      'discover.start',
      /names an hour/,
    ],
    [
      { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: -1 },
      'discover.lookback',
      /lookback/,
    ],
    [
      { by: 'partition', layout: '{yyyy}/{mm}/{dd}', timezone: 'Europe/Nowhere' },
      'discover.timezone',
      /Europe\/Nowhere/,
    ],
    [{ by: 'modified', start: '2026-03-01T00:00:00' }, 'discover.start', /not a timestamp/],
    [{ by: 'modified', start: '2026-02-30T00:00:00Z' }, 'discover.start', /not a timestamp/],
    [{ by: 'modified', settle: -5 }, 'discover.settle', /settle/],
    [{ by: 'modified', onOverwrite: 'keep' }, 'discover.onOverwrite', /onOverwrite/],
  ])('rejects config %j naming %s', async (config, field, message) => {
    const err = await discover(storage, config as never, null).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).context.field).toBe(field);
    expect((err as Error).message).toMatch(message);
    expect(storage.counts.list).toBe(0);
  });

  it('reads back a committed state and refuses one it cannot read', () => {
    expect(upgradeState(JSON.parse(JSON.stringify(partitionState)))).toEqual(partitionState);
    expect(() => upgradeState({ ...partitionState, stateVersion: 2 })).toThrow(
      /stateVersion 2, written by a newer tidemark/,
    );
    expect(() => upgradeState({ ...partitionState, watermark: '2026-02-30' })).toThrow(
      DiscoveryStateError,
    );
    expect(() =>
      upgradeState({ stateVersion: 1, mode: 'modified', watermark: 'x', loaded: [] }),
    ).toThrow(/bad timestamp watermark/);
    expect(() => upgradeState(null)).toThrow(/not an object/);
  });
});
