/**
 * The tombstone rules without a job run: which files a batch keeps, drops and purges (expiry by
 * the host clock, a changed key or orderBy, the grace period), compaction past MAX_TOMBSTONE_FILES, paths a
 * state may name, and a missing or foreign file listed in the state failing with its name.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DuckSession } from '../../src/engine/duckdb.js';
import { JobTombstones } from '../../src/job/tombstones/files.js';
import {
  isTombstonePath,
  MAX_DROP_GRACE_MS,
  MAX_TOMBSTONE_FILES,
  needsCompaction,
  planTombstones,
  tombstonePath,
  type TombstoneFile,
  type TombstoneSpec,
  type TombstoneState,
} from '../../src/job/tombstones/plan.js';
import { ConfigError, DeltaLogError } from '../../src/errors.js';
import { LocalStorage } from '../../src/storage/local.js';
import { scratchSpool } from '../../scripts/lib/tables.js';

const DAY = 86_400_000;
const NOW = Date.parse('2025-06-10T00:00:00Z');
const SPEC: TombstoneSpec = { job: 'orders', key: ['id'], orderBy: 'ts', retentionMs: 7 * DAY };
const iso = (ms: number) => new Date(ms).toISOString();

function file(n: number, newestAgoMs: number): TombstoneFile {
  return {
    path: tombstonePath('orders', `00000000-0000-0000-0000-${String(n).padStart(12, '0')}`),
    rows: 1,
    minDeletedAt: iso(NOW - newestAgoMs - DAY),
    maxDeletedAt: iso(NOW - newestAgoMs),
  };
}

function state(files: TombstoneFile[], dropped: TombstoneState['dropped'] = []): TombstoneState {
  return { key: ['id'], orderBy: 'ts', files, dropped };
}

describe('planTombstones', () => {
  it('keeps files with an unexpired tombstone and drops wholly expired ones', () => {
    const fresh = file(1, DAY);
    const partly = file(2, 7 * DAY - 1000);
    const expired = file(3, 7 * DAY + 1000);
    const plan = planTombstones(state([fresh, partly, expired]), SPEC, NOW);
    expect(plan.live).toEqual([fresh, partly]);
    expect(plan.dropped).toEqual([{ path: expired.path, droppedAt: iso(NOW) }]);
    expect(plan.cutoff).toBe(NOW - 7 * DAY);
  });

  it('a changed key or orderBy (case aside): a narrower key re-keys, anything else is refused unless dropUnfit says so', () => {
    expect(
      planTombstones(state([file(1, 0)]), { ...SPEC, key: ['ID'], orderBy: 'TS' }, NOW),
    ).toMatchObject({ rekey: false });
    expect(
      planTombstones(state([file(1, 0)]), { ...SPEC, key: ['ID'], orderBy: 'TS' }, NOW).live,
    ).toHaveLength(1);
    const wide = { ...state([file(1, 0)]), key: ['id', 'region'] };
    expect(planTombstones(wide, SPEC, NOW)).toMatchObject({
      rekey: true,
      live: wide.files,
      dropped: [],
    });
    expect(() =>
      planTombstones(state([file(1, 0)]), { ...SPEC, key: ['id', 'region'] }, NOW),
    ).toThrow(ConfigError);
    expect(() =>
      planTombstones(state([file(1, 0)]), { ...SPEC, orderBy: 'updated_at' }, NOW),
    ).toThrow(
      /target.orderBy changed from ts to updated_at.*1 deleted key.*--accept-config-change/,
    );
    expect(
      planTombstones(state([file(1, 0)]), { ...SPEC, orderBy: 'updated_at', dropUnfit: true }, NOW),
    ).toMatchObject({ live: [], dropped: [{ path: file(1, 0).path }] });
    // Only live tombstones are worth a refusal: expired ones are dropped as always.
    expect(
      planTombstones(state([file(1, 8 * DAY)]), { ...SPEC, orderBy: 'updated_at' }, NOW).dropped,
    ).toHaveLength(1);
  });

  it('purges dropped files after the grace period: the shorter of the retention and an hour', () => {
    const dropped = [
      { path: 'old', droppedAt: iso(NOW - MAX_DROP_GRACE_MS) },
      { path: 'recent', droppedAt: iso(NOW - MAX_DROP_GRACE_MS + 1) },
    ];
    const plan = planTombstones(state([], dropped), SPEC, NOW);
    expect(plan.purge).toEqual(['old']);
    expect(plan.dropped.map((d) => d.path)).toEqual(['recent']);
    expect(planTombstones(state([], dropped), { ...SPEC, retentionMs: 1000 }, NOW).purge).toEqual([
      'old',
      'recent',
    ]);
  });

  it('has nothing to do for a state without tombstones', () => {
    expect(planTombstones(undefined, SPEC, NOW)).toEqual({
      live: [],
      dropped: [],
      purge: [],
      cutoff: NOW - 7 * DAY,
      rekey: false,
    });
  });
});

describe('compaction and paths', () => {
  it('compacts when a new file would exceed MAX_TOMBSTONE_FILES', () => {
    expect(needsCompaction(MAX_TOMBSTONE_FILES - 1, true)).toBe(false);
    expect(needsCompaction(MAX_TOMBSTONE_FILES, true)).toBe(true);
    expect(needsCompaction(MAX_TOMBSTONE_FILES, false)).toBe(false);
  });

  it('accepts only paths it writes for the job', () => {
    const good = tombstonePath('orders', '6f1c1c2e-9d7a-4a53-9a43-0a8f0f8f3c11');
    expect(good).toBe('_tidemark/tombstones/orders/6f1c1c2e-9d7a-4a53-9a43-0a8f0f8f3c11.parquet');
    expect(isTombstonePath('orders', good)).toBe(true);
    expect(isTombstonePath('other', good)).toBe(false);
    expect(isTombstonePath('orders', '_tidemark/tombstones/orders/../../part-0.parquet')).toBe(
      false,
    );
    expect(isTombstonePath('orders', '_delta_log/00000000000000000000.json')).toBe(false);
  });
});

describe('JobTombstones.open', () => {
  let session: DuckSession;
  let dir: string;
  beforeAll(async () => {
    session = await DuckSession.open({ threads: 1 });
    dir = await mkdtemp(join(tmpdir(), 'tidemark-tombstones-'));
  });
  afterAll(async () => {
    session.close();
    await rm(dir, { recursive: true, force: true });
  });

  const open = (s: TombstoneState) =>
    JobTombstones.open({
      session,
      storage: new LocalStorage(dir),
      spec: SPEC,
      state: s,
      now: NOW,
      spool: scratchSpool(),
    });

  it('fails naming a live file that the table folder no longer has', async () => {
    const missing = file(1, DAY);
    const err = await open(state([missing])).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DeltaLogError);
    expect((err as Error).message).toContain(missing.path);
  });

  it('refuses a state that names a file outside its tombstone folder', async () => {
    const foreign = { ...file(1, DAY), path: '_tidemark/tombstones/orders/../../part-0.parquet' };
    const err = await open(state([foreign])).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DeltaLogError);
    expect((err as Error).message).toContain('part-0.parquet');
  });
});
