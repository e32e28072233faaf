import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { PartitionClock } from '../../src/discovery/zone.js';

const utc = (iso: string) => new Date(iso);

/** Every partition id from `first` while it starts with `dayPrefix`, stepping one by one. */
function partitionsOfDay(clock: PartitionClock, first: string, dayPrefix: string): string[] {
  const ids: string[] = [];
  for (let id = first; id.startsWith(dayPrefix); id = clock.step(id, 1)) ids.push(id);
  return ids;
}

describe('UTC partitions', () => {
  const clock = new PartitionClock();

  it('maps instants to day and hour partitions', () => {
    expect(clock.partitionOf(utc('2026-03-05T23:59:59.999Z'), 'day')).toBe('2026-03-05');
    expect(clock.partitionOf(utc('2026-03-06T00:00:00Z'), 'day')).toBe('2026-03-06');
    expect(clock.partitionOf(utc('2026-03-05T07:30:00Z'), 'hour')).toBe('2026-03-05T07');
  });

  it('steps across month, year and leap-day boundaries', () => {
    expect(clock.step('2026-03-01', -1)).toBe('2026-02-28');
    expect(clock.step('2028-03-01', -1)).toBe('2028-02-29');
    expect(clock.step('2026-12-31', 1)).toBe('2027-01-01');
    expect(clock.step('2027-01-01T01', -2)).toBe('2026-12-31T23');
    expect(clock.step('2026-03-05', 0)).toBe('2026-03-05');
    expect(clock.step('2026-03-05', -30)).toBe('2026-02-03');
  });

  it('starts each partition at its wall-clock time', () => {
    expect(clock.startOf('2026-03-05T07')).toEqual(utc('2026-03-05T07:00:00Z'));
    expect(clock.instantsOf('2026-03-05')).toEqual([utc('2026-03-05T00:00:00Z')]);
  });
});

describe('America/New_York hour partitions around DST', () => {
  const clock = new PartitionClock('America/New_York');

  it('spring forward: hour 02 does not exist and is stepped over', () => {
    expect(clock.exists('2026-03-08T02')).toBe(false);
    expect(clock.instantsOf('2026-03-08T02')).toEqual([]);
    expect(clock.startOf('2026-03-08T02')).toBeNull();
    expect(clock.step('2026-03-08T01', 1)).toBe('2026-03-08T03');
    expect(clock.step('2026-03-08T03', -1)).toBe('2026-03-08T01');
    expect(clock.partitionOf(utc('2026-03-08T06:59:59Z'), 'hour')).toBe('2026-03-08T01');
    expect(clock.partitionOf(utc('2026-03-08T07:00:00Z'), 'hour')).toBe('2026-03-08T03');
    expect(partitionsOfDay(clock, '2026-03-08T00', '2026-03-08')).toHaveLength(23);
  });

  it('fall back: the repeated hour 01 is one folder covering two distinct instants', () => {
    expect(clock.instantsOf('2026-11-01T01')).toEqual([
      utc('2026-11-01T05:00:00Z'),
      utc('2026-11-01T06:00:00Z'),
    ]);
    expect(clock.startOf('2026-11-01T01')).toEqual(utc('2026-11-01T05:00:00Z'));
    expect(clock.partitionOf(utc('2026-11-01T05:30:00Z'), 'hour')).toBe('2026-11-01T01');
    expect(clock.partitionOf(utc('2026-11-01T06:30:00Z'), 'hour')).toBe('2026-11-01T01');
    expect(clock.partitionOf(utc('2026-11-01T07:00:00Z'), 'hour')).toBe('2026-11-01T02');
    expect(clock.step('2026-11-01T01', 1)).toBe('2026-11-01T02');
    // 25 real hours, 24 folders.
    expect(partitionsOfDay(clock, '2026-11-01T00', '2026-11-01')).toHaveLength(24);
  });

  it('day partitions start at local midnight', () => {
    expect(clock.startOf('2026-03-08')).toEqual(utc('2026-03-08T05:00:00Z'));
    expect(clock.startOf('2026-03-09')).toEqual(utc('2026-03-09T04:00:00Z'));
    expect(clock.partitionOf(utc('2026-03-09T03:59:59Z'), 'day')).toBe('2026-03-08');
  });
});

describe('Europe/Berlin hour partitions around DST', () => {
  const clock = new PartitionClock('Europe/Berlin');

  it('spring forward on 2026-03-29 skips hour 02', () => {
    expect(clock.exists('2026-03-29T02')).toBe(false);
    expect(clock.step('2026-03-29T01', 1)).toBe('2026-03-29T03');
    expect(clock.startOf('2026-03-29T03')).toEqual(utc('2026-03-29T01:00:00Z'));
    expect(clock.partitionOf(utc('2026-03-29T00:59:59Z'), 'hour')).toBe('2026-03-29T01');
  });

  it('fall back on 2026-10-25 repeats hour 02', () => {
    expect(clock.instantsOf('2026-10-25T02')).toEqual([
      utc('2026-10-25T00:00:00Z'),
      utc('2026-10-25T01:00:00Z'),
    ]);
    expect(clock.partitionOf(utc('2026-10-25T01:59:59Z'), 'hour')).toBe('2026-10-25T02');
    expect(clock.partitionOf(utc('2026-10-25T02:00:00Z'), 'hour')).toBe('2026-10-25T03');
    expect(clock.step('2026-10-25T03', -1)).toBe('2026-10-25T02');
  });
});

describe('days that do not exist or start late', () => {
  it('Pacific/Apia skipped 2011-12-30 entirely', () => {
    const clock = new PartitionClock('Pacific/Apia');
    expect(clock.exists('2011-12-30')).toBe(false);
    expect(clock.step('2011-12-29', 1)).toBe('2011-12-31');
    expect(clock.step('2011-12-31', -1)).toBe('2011-12-29');
    expect(clock.startOf('2011-12-31')).toEqual(utc('2011-12-30T10:00:00Z'));
  });

  it('America/Santiago has no midnight on 2026-09-06: the day starts at 01:00', () => {
    const clock = new PartitionClock('America/Santiago');
    expect(clock.instantsOf('2026-09-06')).toEqual([]);
    expect(clock.exists('2026-09-06')).toBe(true);
    expect(clock.startOf('2026-09-06')).toEqual(utc('2026-09-06T04:00:00Z'));
    expect(clock.partitionOf(utc('2026-09-06T04:00:00Z'), 'hour')).toBe('2026-09-06T01');
  });
});

describe('time zone names', () => {
  it('rejects an unknown zone with the field named', () => {
    expect(() => new PartitionClock('Mars/Olympus')).toThrow(ConfigError);
    try {
      new PartitionClock('Mars/Olympus');
    } catch (err) {
      expect((err as ConfigError).context.field).toBe('discover.timezone');
      expect((err as Error).message).toContain('"Mars/Olympus"');
    }
  });
});
