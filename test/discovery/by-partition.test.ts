import { describe, expect, it } from 'vitest';
import { planPartitions } from '../../src/discovery/by-partition.js';
import { nextStateFor } from '../../src/discovery/discover.js';
import type { PartitionState } from '../../src/discovery/state.js';
import { loadedKeys, partitionSettings, reasons, walkOf, type FakeFile } from './fixtures.js';

const daily = partitionSettings({ layout: '{yyyy}/{mm}/{dd}' });
/** The lookback alone, without the late check of the partitions behind it (tested below). */
const lookbackOnly = partitionSettings({ layout: '{yyyy}/{mm}/{dd}', lateCheck: 0 });
const file = (key: string, modified = '2026-03-01T00:00:00Z', etag?: string): FakeFile => ({
  key,
  modified,
  etag,
});

/** Run the planner and return the plan with the state committed after loading all of it. */
function run(settings = daily, now: string, files: FakeFile[], state: PartitionState | null) {
  const plan = planPartitions(walkOf(settings.layout, now, files), settings, state);
  return { plan, state: plan.nextState as PartitionState | null };
}

describe('partition discovery: first run', () => {
  const zone = [
    file('2026/03/01/b.csv', '2026-03-01T10:00:00Z'),
    file('2026/03/01/a.csv', '2026-03-01T10:00:00Z'),
    file('2026/02/27/x.csv', '2026-02-27T09:00:00Z'),
    file('2026/02/28/y.csv', '2026-02-28T23:00:00Z'),
    file('2026/02/28/early.csv', '2026-02-28T01:00:00Z'),
  ];

  it('without start loads every partition, oldest partition first, then by time and key', () => {
    const { plan, state } = run(daily, '2026-03-01T12:00:00Z', zone, null);
    expect(loadedKeys(plan)).toEqual([
      '2026/02/27/x.csv',
      '2026/02/28/early.csv',
      '2026/02/28/y.csv',
      '2026/03/01/a.csv',
      '2026/03/01/b.csv',
    ]);
    expect(plan.files.map((f) => f.partition)).toEqual([
      '2026-02-27',
      '2026-02-28',
      '2026-02-28',
      '2026-03-01',
      '2026-03-01',
    ]);
    expect(plan.window).toEqual({ mode: 'partition', from: null, until: '2026-03-01' });
    // Remembered: the lookback partitions and the lateCheck (2) ones behind them.
    expect(state).toMatchObject({
      stateVersion: 1,
      mode: 'partition',
      watermark: '2026-03-01',
      rememberedFrom: '2026-02-25',
    });
    expect(state!.loaded.map((e) => e.key)).toHaveLength(5);
  });

  it('with start skips the partitions before it', () => {
    const settings = partitionSettings({ layout: '{yyyy}/{mm}/{dd}', start: '2026-02-28' });
    const { plan } = run(settings, '2026-03-01T12:00:00Z', zone, null);
    expect(loadedKeys(plan)).toEqual([
      '2026/02/28/early.csv',
      '2026/02/28/y.csv',
      '2026/03/01/a.csv',
      '2026/03/01/b.csv',
    ]);
    expect(plan.window).toMatchObject({ from: '2026-02-28' });
  });

  it('with start, later runs never reach back before it, even while the lookback would', () => {
    const settings = partitionSettings({ layout: '{yyyy}/{mm}/{dd}', start: '2026-03-01' });
    const first = run(settings, '2026-03-01T12:00:00Z', zone, null);
    expect(loadedKeys(first.plan)).toEqual(['2026/03/01/a.csv', '2026/03/01/b.csv']);
    expect(first.state).toMatchObject({ watermark: '2026-03-01', rememberedFrom: '2026-03-01' });

    const second = run(settings, '2026-03-01T18:00:00Z', zone, first.state);
    expect(loadedKeys(second.plan)).toEqual([]);
    expect(second.plan.window).toMatchObject({ from: '2026-03-01' });

    // Batch by batch (the state committed after the first batch is the next batch's base) too.
    const afterOne = nextStateFor(null, first.plan, first.plan.files.slice(0, 1)) as PartitionState;
    expect(afterOne.rememberedFrom).toBe('2026-03-01');
    expect(loadedKeys(run(settings, '2026-03-01T18:00:00Z', zone, afterOne).plan)).toEqual([
      '2026/03/01/b.csv',
    ]);
  });

  it('nothing to load keeps the state as it was (null: nothing to commit)', () => {
    const { plan, state } = run(daily, '2026-03-01T12:00:00Z', [], null);
    expect(plan.files).toEqual([]);
    expect(state).toBeNull();
  });

  it('does not load partitions after the store clock', () => {
    const { plan } = run(daily, '2026-02-28T12:00:00Z', zone, null);
    expect(loadedKeys(plan)).not.toContain('2026/03/01/a.csv');
    expect(plan.nextState).toMatchObject({ watermark: '2026-02-28' });
  });
});

describe('partition discovery: incremental runs', () => {
  it('the open partition picks up new files without reloading the old ones', () => {
    const morning = [
      file('2026/03/05/a.csv', '2026-03-05T08:00:00Z'),
      file('2026/03/05/b.csv', '2026-03-05T09:00:00Z'),
    ];
    const first = run(daily, '2026-03-05T09:30:00Z', morning, null);
    expect(loadedKeys(first.plan)).toEqual(['2026/03/05/a.csv', '2026/03/05/b.csv']);

    const afternoon = [...morning, file('2026/03/05/c.csv', '2026-03-05T15:00:00Z')];
    const second = run(daily, '2026-03-05T15:30:00Z', afternoon, first.state);
    expect(loadedKeys(second.plan)).toEqual(['2026/03/05/c.csv']);
    expect(reasons(second.plan)).toEqual({
      '2026/03/05/a.csv': 'already loaded',
      '2026/03/05/b.csv': 'already loaded',
      '2026/03/05/c.csv': 'new',
    });

    // Next day: the open partition moves on; yesterday is still in reach (lookback).
    const nextDay = [...afternoon, file('2026/03/06/d.csv', '2026-03-06T01:00:00Z')];
    const third = run(daily, '2026-03-06T02:00:00Z', nextDay, second.state);
    expect(loadedKeys(third.plan)).toEqual(['2026/03/06/d.csv']);
    expect(third.state!.watermark).toBe('2026-03-06');
  });

  it('loads a late file in a lookback partition, but not one older than the lookback', () => {
    const zone = [file('2026/03/03/a.csv'), file('2026/03/04/b.csv'), file('2026/03/05/c.csv')];
    const first = run(lookbackOnly, '2026-03-05T12:00:00Z', zone, null);
    expect(first.state!.rememberedFrom).toBe('2026-03-03');

    const late = [...zone, file('2026/03/03/late.csv'), file('2026/03/02/too-late.csv')];
    const second = run(lookbackOnly, '2026-03-05T18:00:00Z', late, first.state);
    expect(loadedKeys(second.plan)).toEqual(['2026/03/03/late.csv']);
    expect(second.plan.window).toMatchObject({ from: '2026-03-03', until: '2026-03-05' });
    expect(second.plan.partitionsListed).toEqual(['2026/03/03/', '2026/03/04/', '2026/03/05/']);
    expect(reasons(second.plan)['2026/03/03/late.csv']).toBe('new');
    expect(reasons(second.plan)).not.toHaveProperty('2026/03/02/too-late.csv');
    // A late file does not move the watermark back.
    expect(second.state!.watermark).toBe('2026-03-05');
  });

  it('prunes the remembered files to the lookback partitions (and the lateCheck ones behind them)', () => {
    const zone = ['01', '02', '03', '04', '05', '06'].map((d) => file(`2026/03/${d}/f.csv`));
    expect(
      run(lookbackOnly, '2026-03-06T12:00:00Z', zone, null).state!.loaded.map((e) => e.partition),
    ).toEqual(['2026-03-04', '2026-03-05', '2026-03-06']);
    expect(
      run(daily, '2026-03-06T12:00:00Z', zone, null).state!.loaded.map((e) => e.partition),
    ).toEqual(['2026-03-02', '2026-03-03', '2026-03-04', '2026-03-05', '2026-03-06']);
  });

  it('a larger lookback does not reload partitions the state no longer remembers', () => {
    const zone = ['01', '02', '03', '04', '05', '06'].map((d) => file(`2026/03/${d}/f.csv`));
    const { state } = run(lookbackOnly, '2026-03-06T12:00:00Z', zone, null);
    const wider = partitionSettings({ layout: '{yyyy}/{mm}/{dd}', lookback: 5, lateCheck: 0 });
    const { plan } = run(wider, '2026-03-06T13:00:00Z', zone, state);
    expect(plan.files).toEqual([]);
    expect(plan.window).toMatchObject({ from: '2026-03-04' });
  });

  it('hour partitions in a zone step back over a DST gap', () => {
    const hourly = partitionSettings({
      layout: 'dt={yyyy}-{mm}-{dd}/hour={HH}',
      lookback: 1,
      lateCheck: 0,
      timezone: 'America/New_York',
    });
    const zone = [file('dt=2026-03-08/hour=01/a.json'), file('dt=2026-03-08/hour=03/b.json')];
    // 07:30Z is 03:30 EDT: the open partition is hour 03; one hour back is 01 (02 does not exist).
    const first = run(hourly, '2026-03-08T07:30:00Z', zone, null);
    expect(first.state).toMatchObject({
      watermark: '2026-03-08T03',
      rememberedFrom: '2026-03-08T01',
    });
    const second = run(
      hourly,
      '2026-03-08T07:40:00Z',
      [...zone, file('dt=2026-03-08/hour=01/late.json')],
      first.state,
    );
    expect(loadedKeys(second.plan)).toEqual(['dt=2026-03-08/hour=01/late.json']);
  });
});

describe('partition discovery: the late check behind the lookback window', () => {
  const days = (ds: string[]) => ds.map((d) => file(`2026/03/${d}/f.csv`));

  it('reports a file that landed behind the window by name, loads nothing from there, and a larger lookback loads it once', () => {
    const first = run(
      daily,
      '2026-03-06T12:00:00Z',
      days(['01', '02', '03', '04', '05', '06']),
      null,
    );
    const second = run(
      daily,
      '2026-03-08T12:00:00Z',
      days(['01', '02', '03', '04', '05', '06', '07', '08']),
      first.state,
    );
    expect(loadedKeys(second.plan)).toEqual(['2026/03/07/f.csv', '2026/03/08/f.csv']);
    expect(second.state).toMatchObject({ watermark: '2026-03-08', rememberedFrom: '2026-03-04' });

    // Then files land in days 04 and 05, behind the window (06..08), and one in day 03.
    const zone = [
      ...days(['01', '02', '03', '05', '06', '07', '08']),
      file('2026/03/04/f.csv', '2026-03-08T12:30:00Z', 'rewritten'),
      file('2026/03/05/late.csv'),
      file('2026/03/04/late.csv'),
      file('2026/03/03/too-late.csv'),
    ];
    const third = run(daily, '2026-03-08T13:00:00Z', zone, second.state);
    expect(third.plan.files).toEqual([]);
    expect(third.plan.window).toEqual({
      mode: 'partition',
      from: '2026-03-06',
      until: '2026-03-08',
      checkedFrom: '2026-03-04',
    });
    const behind = Object.entries(reasons(third.plan)).filter(([key]) => key < '2026/03/06/');
    expect(behind.sort()).toEqual([
      ['2026/03/04/f.csv', 'overwritten behind the lookback window'],
      ['2026/03/04/late.csv', 'late, behind the lookback window'],
      ['2026/03/05/late.csv', 'late, behind the lookback window'],
    ]);
    // Below what the state remembers (day 03): not listed, nothing said (the late check's reach).
    expect(third.plan.partitionsListed).toEqual([
      '2026/03/04/',
      '2026/03/05/',
      '2026/03/06/',
      '2026/03/07/',
      '2026/03/08/',
    ]);
    expect(third.plan.nextState).toEqual(second.state);

    // A lookback reaching day 04 loads what is new there, and nothing it remembers again.
    const wider = partitionSettings({ layout: '{yyyy}/{mm}/{dd}', lookback: 4 });
    const fourth = run(wider, '2026-03-08T14:00:00Z', zone, second.state);
    expect(loadedKeys(fourth.plan).sort()).toEqual([
      '2026/03/04/f.csv',
      '2026/03/04/late.csv',
      '2026/03/05/late.csv',
    ]);
  });

  it('under onOverwrite: ignore an overwrite behind the window is not reported (it would not load inside it either)', () => {
    const ignore = partitionSettings({ layout: '{yyyy}/{mm}/{dd}', onOverwrite: 'ignore' });
    const first = run(ignore, '2026-03-08T12:00:00Z', days(['04', '05', '06', '07', '08']), null);
    const second = run(
      ignore,
      '2026-03-08T13:00:00Z',
      [
        ...days(['05', '06', '07', '08']),
        file('2026/03/04/f.csv', '2026-03-08T12:30:00Z', 'rewritten'),
      ],
      first.state,
    );
    expect(second.plan.decisions.filter((d) => d.partition === '2026-03-04')).toEqual([]);
  });
});

describe('partition discovery: hour folders around DST (America/New_York)', () => {
  const hourly = partitionSettings({
    layout: '{yyyy}/{mm}/{dd}/{HH}',
    lookback: 1,
    lateCheck: 0,
    timezone: 'America/New_York',
  });

  it('a folder naming an hour that DST skipped is still loaded: data is never dropped for a clock quirk', () => {
    const zone = [
      file('2026/03/08/01/a.csv'),
      file('2026/03/08/02/written-in-utc.csv'),
      file('2026/03/08/03/b.csv'),
    ];
    const { plan } = run(hourly, '2026-03-08T07:30:00Z', zone, null);
    expect(loadedKeys(plan)).toEqual([
      '2026/03/08/01/a.csv',
      '2026/03/08/02/written-in-utc.csv',
      '2026/03/08/03/b.csv',
    ]);
  });

  it('the repeated hour 01 stays the open partition for both of its hours', () => {
    const a = file('2026/11/01/01/a.csv', '2026-11-01T05:10:00Z');
    const first = run(hourly, '2026-11-01T05:30:00Z', [a], null); // 01:30 EDT
    expect(first.plan.window).toMatchObject({ until: '2026-11-01T01' });
    const b = file('2026/11/01/01/b.csv', '2026-11-01T06:10:00Z');
    const second = run(hourly, '2026-11-01T06:30:00Z', [a, b], first.state); // 01:30 EST
    expect(second.plan.window).toMatchObject({ until: '2026-11-01T01' });
    expect(loadedKeys(second.plan)).toEqual(['2026/11/01/01/b.csv']);
    const c = file('2026/11/01/02/c.csv', '2026-11-01T07:10:00Z');
    const third = run(hourly, '2026-11-01T07:30:00Z', [a, b, c], second.state); // 02:30 EST
    expect(loadedKeys(third.plan)).toEqual(['2026/11/01/02/c.csv']);
    expect(third.plan.window).toEqual({
      mode: 'partition',
      from: '2026-11-01T00',
      until: '2026-11-01T02',
    });
  });
});

describe('partition discovery: file rules', () => {
  it('files starting with _ or . anywhere below the partition are not data', () => {
    const zone = [
      file('2026/03/05/data.csv'),
      file('2026/03/05/sub/part-0.parquet'),
      file('2026/03/05/_SUCCESS'),
      file('2026/03/05/.data.csv.crc'),
      file('2026/03/05/_temporary/0/part-1.parquet'),
      file('2026/03/05/sub/.hidden/x.csv'),
      file('2026/03/05/folder/'),
      file('2026/README.md'),
      file('2026/_SUCCESS'),
    ];
    const { plan } = run(daily, '2026-03-05T12:00:00Z', zone, null);
    expect(loadedKeys(plan)).toEqual(['2026/03/05/data.csv', '2026/03/05/sub/part-0.parquet']);
    expect(reasons(plan)).toEqual({
      '2026/03/05/data.csv': 'new',
      '2026/03/05/sub/part-0.parquet': 'new',
      '2026/03/05/_SUCCESS': 'not data',
      '2026/03/05/.data.csv.crc': 'not data',
      '2026/03/05/_temporary/0/part-1.parquet': 'not data',
      '2026/03/05/sub/.hidden/x.csv': 'not data',
      '2026/03/05/folder/': 'not data',
      '2026/README.md': 'not in a partition folder',
      '2026/_SUCCESS': 'not data',
    });
  });

  it('with requireSuccessMarker a partition loads only once _SUCCESS exists', () => {
    const settings = partitionSettings({ layout: '{yyyy}/{mm}/{dd}', requireSuccessMarker: true });
    const zone = [file('2026/03/04/a.csv'), file('2026/03/04/_SUCCESS'), file('2026/03/05/b.csv')];
    const first = run(settings, '2026-03-05T12:00:00Z', zone, null);
    expect(loadedKeys(first.plan)).toEqual(['2026/03/04/a.csv']);
    expect(reasons(first.plan)['2026/03/05/b.csv']).toBe('no success marker');

    const second = run(
      settings,
      '2026-03-05T13:00:00Z',
      [...zone, file('2026/03/05/_SUCCESS')],
      first.state,
    );
    expect(loadedKeys(second.plan)).toEqual(['2026/03/05/b.csv']);
    expect(reasons(second.plan)['2026/03/04/a.csv']).toBe('already loaded');
  });

  it('a marker in a sub-folder does not count for the partition', () => {
    const settings = partitionSettings({ layout: '{yyyy}/{mm}/{dd}', requireSuccessMarker: true });
    const { plan } = run(
      settings,
      '2026-03-05T12:00:00Z',
      [file('2026/03/05/sub/a.csv'), file('2026/03/05/sub/_SUCCESS')],
      null,
    );
    expect(reasons(plan)['2026/03/05/sub/a.csv']).toBe('no success marker');
  });

  it.each([
    ['reload', 'load', 'overwritten, reloading'],
    ['ignore', 'skip', 'overwritten, ignored'],
  ] as const)(
    'a file overwritten in place (new ETag) with onOverwrite %s',
    (onOverwrite, action, reason) => {
      const settings = partitionSettings({ layout: '{yyyy}/{mm}/{dd}', onOverwrite });
      const first = run(
        settings,
        '2026-03-05T12:00:00Z',
        [file('2026/03/05/a.csv', '2026-03-05T08:00:00Z', 'v1')],
        null,
      );
      const overwritten = [file('2026/03/05/a.csv', '2026-03-05T13:00:00Z', 'v2')];
      const second = run(settings, '2026-03-05T14:00:00Z', overwritten, first.state);
      expect(second.plan.decisions).toEqual([
        { key: '2026/03/05/a.csv', action, reason, partition: '2026-03-05' },
      ]);
      const third = run(settings, '2026-03-05T15:00:00Z', overwritten, second.state);
      expect(reasons(third.plan)['2026/03/05/a.csv']).toBe(
        onOverwrite === 'reload' ? 'already loaded' : 'overwritten, ignored',
      );
      expect(third.plan.files).toEqual([]);
    },
  );
});

describe('partition discovery: batches', () => {
  const zone = [
    file('2026/03/03/a.csv', '2026-03-03T01:00:00Z'),
    file('2026/03/04/b.csv', '2026-03-04T01:00:00Z'),
    file('2026/03/04/c.csv', '2026-03-04T02:00:00Z'),
    file('2026/03/05/d.csv', '2026-03-05T01:00:00Z'),
    file('2026/03/05/e.csv', '2026-03-05T02:00:00Z'),
  ];
  const now = '2026-03-05T12:00:00Z';

  it('folding batches one by one gives the state of the whole plan', () => {
    const { plan } = run(daily, now, zone, null);
    let state = plan.prevState;
    for (const batch of [plan.files.slice(0, 2), plan.files.slice(2, 4), plan.files.slice(4)]) {
      state = nextStateFor(state, plan, batch);
    }
    expect(state).toEqual(plan.nextState);
  });

  it.each([1, 2, 3, 4])(
    'a crash after committing the first %i files loses nothing and loads nothing twice',
    (done) => {
      const { plan } = run(daily, now, zone, null);
      const committed = nextStateFor(null, plan, plan.files.slice(0, done)) as PartitionState;
      const rerun = run(daily, now, zone, committed);
      expect(loadedKeys(rerun.plan)).toEqual(loadedKeys(plan).slice(done));
      expect(rerun.state).toEqual(plan.nextState);
    },
  );
});
