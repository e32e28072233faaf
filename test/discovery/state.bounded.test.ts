/**
 * The committed discovery state must not grow with the landing zone's history: 500
 * incremental runs over a growing landing zone, each committing its state, and the
 * serialized state stays the same size once the window is full.
 */
import { describe, expect, it } from 'vitest';
import { planModified } from '../../src/discovery/by-modified.js';
import { planPartitions } from '../../src/discovery/by-partition.js';
import { nextStateFor } from '../../src/discovery/discover.js';
import { upgradeState, type DiscoveryState } from '../../src/discovery/state.js';
import type { DiscoveryPlan } from '../../src/discovery/plan.js';
import {
  listingOf,
  modifiedSettings,
  partitionSettings,
  walkOf,
  type FakeFile,
} from './fixtures.js';

const RUNS = 500;
const HOUR_MS = 3_600_000;
const T0 = Date.parse('2026-01-01T00:00:00Z');

/** Commit a plan's files in batches of two, as the job would, through a JSON round trip. */
function commit(state: DiscoveryState | null, plan: DiscoveryPlan): DiscoveryState | null {
  for (let i = 0; i < plan.files.length; i += 2) {
    state = nextStateFor(state, plan, plan.files.slice(i, i + 2));
    state = upgradeState(JSON.parse(JSON.stringify(state)));
  }
  return state;
}

/** After the first runs fill the window, the state never gets bigger (a few bytes for longer key names). */
function expectFlat(sizes: number[]): void {
  const early = Math.max(...sizes.slice(10, 30));
  expect(Math.max(...sizes.slice(30))).toBeLessThanOrEqual(early + 20);
  expect(sizes[sizes.length - 1]).toBeLessThan(4096); // a few KB, committed with every batch
}

function hourKey(ms: number, n: number): string {
  const iso = new Date(ms).toISOString();
  return `dt=${iso.slice(0, 10)}/hour=${iso.slice(11, 13)}/part-${n}.json`;
}

describe('discovery state stays bounded', () => {
  it(`partition mode: ${RUNS} hourly runs over hour partitions`, () => {
    const settings = partitionSettings({ layout: 'dt={yyyy}-{mm}-{dd}/hour={HH}', lookback: 3 });
    const zone: FakeFile[] = [];
    const sizes: number[] = [];
    let state: DiscoveryState | null = null;
    let loaded = 0;
    for (let run = 0; run < RUNS; run++) {
      const now = T0 + run * HOUR_MS + 50 * 60_000;
      // Three files land in this hour, and one late file in the hour before.
      for (let n = 0; n < 3; n++) zone.push({ key: hourKey(now, n), modified: now - n * 60_000 });
      if (run > 0) zone.push({ key: hourKey(now - HOUR_MS, 100 + run), modified: now });
      // A real walk lists only the partitions in range; the planner must cope with more anyway.
      const inRange = zone.slice(-200);
      const plan = planPartitions(
        walkOf(settings.layout, new Date(now), inRange),
        settings,
        state as never,
      );
      expect(plan.files).toHaveLength(run > 0 ? 4 : 3);
      loaded += plan.files.length;
      state = commit(state, plan);
      sizes.push(JSON.stringify(state).length);
    }
    expect(loaded).toBe(RUNS * 4 - 1);
    expect(state).toMatchObject({ watermark: '2026-01-21T19' });
    // The watermark, three lookback and two late-checked partitions, of at most 4 files each.
    expect((state as { loaded: unknown[] }).loaded.length).toBeLessThanOrEqual(24);
    expectFlat(sizes);
  });

  it(`modification-time mode: ${RUNS} runs, every 10 minutes, settle 15 minutes`, () => {
    const settings = modifiedSettings({ settle: 15 * 60_000 });
    const zone: FakeFile[] = [];
    const sizes: number[] = [];
    let state: DiscoveryState | null = null;
    let loaded = 0;
    for (let run = 0; run < RUNS; run++) {
      const now = T0 + run * 600_000;
      // Two files per run, one of them a multipart upload that started 5 minutes earlier.
      zone.push(
        { key: `in/${run}-a.json`, modified: now - 1000 },
        { key: `in/${run}-b.json`, modified: now - 300_000 },
      );
      const plan = planModified(listingOf(now, zone), settings, state as never);
      expect(plan.files).toHaveLength(2);
      loaded += plan.files.length;
      state = commit(state, plan);
      sizes.push(JSON.stringify(state).length);
    }
    expect(loaded).toBe(RUNS * 2);
    expect((state as { loaded: unknown[] }).loaded.length).toBeLessThanOrEqual(6);
    expectFlat(sizes);
  });
});
