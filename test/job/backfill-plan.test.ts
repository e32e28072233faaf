/**
 * The pure parts of a backfill, without I/O: range parsing, how a backfill starts given the
 * committed state, which files of a walk it loads in which batches, and the state committed
 * after each batch (the cursor).
 */
import { describe, expect, it } from 'vitest';
import type { DiscoveredFile } from '../../src/discovery/index.js';
import type { PartitionWalk } from '../../src/discovery/partitions.js';
import { ConfigError } from '../../src/errors.js';
import { decideStart } from '../../src/job/backfill/start.js';
import { WHOLE_RANGE } from '../../src/job/backfill/shard.js';
import {
  planPartitionBackfill,
  startState,
  stateAfter,
  type PlannedBatch,
} from '../../src/job/backfill/plan.js';
import { parseBackfillRange } from '../../src/job/backfill/range.js';
import type { BackfillState } from '../../src/job/backfill/state.js';
import { makeConfig } from './helpers.js';
import { compileKeyFilter } from '../../src/discovery/filter.js';

const jobWith = (discover: Record<string, unknown>) =>
  makeConfig({ source: { uri: '/none', discover }, target: { uri: '/none-t', mode: 'append' } })
    .job;
const daily = jobWith({ by: 'partition', layout: '{yyyy}/{mm}/{dd}' });
const hourly = jobWith({ by: 'partition', layout: 'dt={yyyy}-{mm}-{dd}/hour={HH}' });
const modified = jobWith({ by: 'modified' });

describe('parseBackfillRange', () => {
  it('partition ids of the layout; a bare date on an hourly layout is the whole day', () => {
    expect(parseBackfillRange(daily, '2026-11-01', '2026-11-07')).toEqual({
      mode: 'partition',
      from: '2026-11-01',
      to: '2026-11-07',
    });
    expect(parseBackfillRange(hourly, '2026-11-01', '2026-11-02')).toEqual({
      mode: 'partition',
      from: '2026-11-01T00',
      to: '2026-11-02T23',
    });
    expect(parseBackfillRange(hourly, '2026-11-01T05', '2026-11-01T07')).toEqual({
      mode: 'partition',
      from: '2026-11-01T05',
      to: '2026-11-01T07',
    });
  });

  it('modification-time ranges: instants; a --to date includes its whole day', () => {
    expect(parseBackfillRange(modified, '2026-11-01', '2026-11-01')).toEqual({
      mode: 'modified',
      from: Date.parse('2026-11-01T00:00:00Z'),
      to: Date.parse('2026-11-01T23:59:59.999Z'),
    });
    expect(
      parseBackfillRange(modified, '2026-11-01T10:00:00+02:00', '2026-11-01T09:00:00Z'),
    ).toMatchObject({ from: Date.parse('2026-11-01T08:00:00Z') });
  });

  it.each([
    [daily, '2026-11-31', '2026-12-01', 'from'],
    [daily, '2026-11-01', '2026-11-01T03', 'to'],
    [daily, '2026-11-05', '2026-11-01', 'to'],
    [modified, '2026-11-01T10:00:00', '2026-11-02', 'from'],
  ])('refuses %#: ConfigError naming the flag', (job, from, to, field) => {
    expect(() => parseBackfillRange(job, from, to)).toThrow(ConfigError);
    try {
      parseBackfillRange(job, from, to);
    } catch (err) {
      expect((err as ConfigError).context.field).toBe(field);
      expect((err as Error).message).toContain(`--${field}`);
    }
  });
});

const range = { mode: 'partition' as const, from: '2026-11-01', to: '2026-11-07' };
const state = (patch: Partial<BackfillState>): BackfillState => ({
  ...startState('orders', range, null, new Date(0)),
  ...patch,
});

/** decideStart for the unsharded backfill whose only state is `prev`: the decision's kind. */
function start(prev: BackfillState | null, r: typeof range, restart: boolean): string {
  const states = new Map(prev ? [['tidemark.backfill.orders', prev]] : []);
  return decideStart('orders', states, r, WHOLE_RANGE, restart).kind;
}

describe('decideStart', () => {
  it('no state: fresh; same range unfinished: resume; same range done: already-done; restart: fresh', () => {
    expect(start(null, range, false)).toBe('fresh');
    expect(start(state({ doneThrough: '2026-11-03' }), range, false)).toBe('resume');
    expect(start(state({ status: 'done' }), range, false)).toBe('already-done');
    expect(start(state({ status: 'done' }), range, true)).toBe('fresh');
  });

  it('another range: fresh when the last one is done, refused (ConfigError) while it is unfinished, unless restart', () => {
    const other = { ...range, to: '2026-11-08' };
    expect(start(state({ status: 'done' }), other, false)).toBe('fresh');
    expect(() => start(state({ doneThrough: '2026-11-02' }), other, false)).toThrow(
      /unfinished \(done through 2026-11-02\)/,
    );
    expect(start(state({ doneThrough: '2026-11-02' }), other, true)).toBe('fresh');
  });
});

const obj = (key: string, size = 10) => ({
  key,
  size,
  lastModified: new Date(0),
  etag: `e-${key}`,
});

function walkOf(parts: Record<string, string[]>): PartitionWalk {
  return {
    partitions: Object.entries(parts).map(([id, keys]) => {
      const prefix = `${id.replaceAll('-', '/')}/`;
      return { id, prefix, objects: keys.map((k) => obj(prefix + k)) };
    }),
    skippedFolders: [
      { prefix: '2026/11/09/', reason: 'after the current partition 2026-11-07 (store clock)' },
      { prefix: 'junk/', reason: 'does not match' },
    ],
    strayObjects: [],
    serverTime: new Date(0),
    listRequests: 3,
  };
}

describe('planPartitionBackfill', () => {
  const limits = { maxFiles: 2, maxBytes: 1_000, requireSuccessMarker: false, selects: () => true };

  it('oldest first, batches never span partitions, not-data files skipped, folders after the range not reported', () => {
    const plan = planPartitionBackfill(
      walkOf({ '2026-11-01': ['a.csv', '_SUCCESS'], '2026-11-02': ['c.csv', 'b.csv', 'd.csv'] }),
      { doneThrough: null, loaded: [] },
      limits,
    );
    expect(
      plan.batches.map((b) => [b.partition, b.closesPartition, b.files.map((f) => f.key)]),
    ).toEqual([
      ['2026-11-01', true, ['2026/11/01/a.csv']],
      ['2026-11-02', false, ['2026/11/02/b.csv', '2026/11/02/c.csv']],
      ['2026-11-02', true, ['2026/11/02/d.csv']],
    ]);
    expect(plan.skipped).toEqual([{ key: '2026/11/01/_SUCCESS', reason: 'not data' }]);
    expect(plan.skippedFolders).toEqual([{ prefix: 'junk/', reason: 'does not match' }]);
    expect(plan).toMatchObject({ files: 4, bytes: 40, listRequests: 3 });
  });

  it('resumes after the cursor: partitions done are left out, files of the partition in progress are skipped', () => {
    const walk = walkOf({ '2026-11-01': ['a.csv'], '2026-11-02': ['b.csv', 'c.csv'] });
    const plan = planPartitionBackfill(
      walk,
      {
        doneThrough: '2026-11-01',
        loaded: [{ key: '2026/11/02/b.csv', etag: 'e-2026/11/02/b.csv' }],
      },
      limits,
    );
    expect(plan.batches.flatMap((b) => b.files.map((f) => f.key))).toEqual(['2026/11/02/c.csv']);
    expect(plan.skipped).toEqual([
      { key: '2026/11/02/b.csv', reason: 'already loaded by this backfill' },
    ]);
  });

  it('requireSuccessMarker: a partition without _SUCCESS is skipped and said so', () => {
    const plan = planPartitionBackfill(
      walkOf({ '2026-11-01': ['a.csv'], '2026-11-02': ['b.csv', '_SUCCESS'] }),
      { doneThrough: null, loaded: [] },
      { ...limits, requireSuccessMarker: true },
    );
    expect(plan.batches.map((b) => b.partition)).toEqual(['2026-11-02']);
    expect(plan.skipped).toContainEqual({ key: '2026/11/01/a.csv', reason: 'no success marker' });
  });

  it('partitionsPerCommit: whole consecutive partitions share a batch within the limits; a split partition is never grouped', () => {
    const walk = walkOf({
      '2026-11-01': ['a.csv'],
      '2026-11-02': ['b.csv'],
      '2026-11-03': ['c.csv', 'd.csv', 'e.csv'],
      '2026-11-04': ['f.csv'],
      '2026-11-05': ['g.csv'],
      '2026-11-06': ['h.csv'],
    });
    const plan = planPartitionBackfill(
      walk,
      { doneThrough: null, loaded: [] },
      { ...limits, maxFiles: 3, partitionsPerCommit: 3 },
    );
    expect(
      plan.batches.map((b) => [
        b.partition,
        b.closesPartition,
        b.files.map((f) => f.key.slice(11)),
      ]),
    ).toEqual([
      ['2026-11-02', true, ['a.csv', 'b.csv']],
      ['2026-11-03', true, ['c.csv', 'd.csv', 'e.csv']],
      ['2026-11-06', true, ['f.csv', 'g.csv', 'h.csv']],
    ]);
    const split = planPartitionBackfill(
      walk,
      { doneThrough: null, loaded: [] },
      { ...limits, partitionsPerCommit: 3 },
    );
    expect(split.batches.map((b) => [b.partition, b.closesPartition, b.files.length])).toEqual([
      ['2026-11-02', true, 2],
      ['2026-11-03', false, 2],
      ['2026-11-03', true, 1],
      ['2026-11-05', true, 2],
      ['2026-11-06', true, 1],
    ]);
  });

  it('source.include/exclude: a file the filter leaves out is skipped as excluded, matched on its whole key', () => {
    const selects = compileKeyFilter({ include: ['*.csv'] });
    const plan = planPartitionBackfill(
      walkOf({ '2026-11-01': ['a.csv', 'notes.txt'] }),
      { doneThrough: null, loaded: [] },
      { ...limits, selects },
    );
    expect(plan.batches.flatMap((b) => b.files.map((f) => f.key))).toEqual(['2026/11/01/a.csv']);
    expect(plan.skipped).toEqual([{ key: '2026/11/01/notes.txt', reason: 'excluded' }]);
  });
});

describe('stateAfter (the cursor)', () => {
  const file = (key: string, partition: string, at = 0): DiscoveredFile => ({
    ...obj(key),
    partition,
    lastModified: new Date(at),
    arrival: new Date(at),
  });
  const batch = (
    partition: string | null,
    closesPartition: boolean,
    files: DiscoveredFile[],
  ): PlannedBatch => ({ partition, closesPartition, files });
  const none = { rowsRead: 3, quarantined: [] };
  const now = new Date(1000);

  it('partition mode: inside a partition it remembers the files; its last batch moves past it; the last batch of all marks done', () => {
    const s0 = state({});
    const f1 = file('2026/11/02/b.csv', '2026-11-02');
    const s1 = stateAfter(
      s0,
      batch('2026-11-02', false, [f1]),
      { files: [f1], ...none },
      { last: false, now },
    );
    expect(s1).toMatchObject({
      batch: 1,
      doneThrough: null,
      loaded: [{ key: f1.key, etag: f1.etag }],
      status: 'running',
      totals: { filesLoaded: 1, rowsLoaded: 3 },
    });
    const f2 = file('2026/11/02/c.csv', '2026-11-02');
    const s2 = stateAfter(
      s1,
      batch('2026-11-02', true, [f2]),
      { files: [f2], ...none },
      { last: false, now },
    );
    expect(s2).toMatchObject({ batch: 2, doneThrough: '2026-11-02', loaded: [] });
    const s3 = stateAfter(
      s2,
      batch('2026-11-03', true, [f2]),
      { files: [f2], ...none },
      { last: true, now },
    );
    expect(s3).toMatchObject({ batch: 3, status: 'done', doneThrough: '2026-11-07', loaded: [] });
  });

  it('modification-time mode: the cursor is the newest LastModified loaded, with the files at exactly that time', () => {
    const s0 = state({});
    const a = file('a', '', 5000);
    const b = file('b', '', 7000);
    const c = file('c', '', 7000);
    const s1 = stateAfter(
      s0,
      batch(null, true, [a, b]),
      { files: [a, b], ...none },
      { last: false, now },
    );
    expect(s1).toMatchObject({ doneThrough: new Date(7000).toISOString(), loaded: [{ key: 'b' }] });
    const s2 = stateAfter(
      s1,
      batch(null, true, [c]),
      { files: [c], ...none },
      { last: false, now },
    );
    expect(s2.loaded.map((e) => e.key)).toEqual(['b', 'c']);
  });
});
