import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { Layout } from '../../src/discovery/layout.js';

describe('layout parsing', () => {
  it.each([
    ['{yyyy}/{mm}/{dd}', 'day', 3, '2026/03/05/'],
    ['{yyyy}/{mm}/{dd}/{HH}', 'hour', 4, '2026/03/05/07/'],
    ['dt={yyyy}-{mm}-{dd}/hour={HH}', 'hour', 2, 'dt=2026-03-05/hour=07/'],
    ['dt={yyyy}-{mm}-{dd}', 'day', 1, 'dt=2026-03-05/'],
    ['region=eu/{yyyy}{mm}{dd}/data', 'day', 3, 'region=eu/20260305/data/'],
  ])('%s has %s partitions in %i levels', (text, granularity, levels, prefix) => {
    const layout = Layout.parse(text);
    expect(layout.granularity).toBe(granularity);
    expect(layout.levels).toHaveLength(levels);
    const id = granularity === 'hour' ? '2026-03-05T07' : '2026-03-05';
    expect(layout.prefixOf(id)).toBe(prefix);
    expect(layout.parsePrefix(prefix)).toEqual({ id });
  });

  it.each([
    ['{dd}/{mm}/{yyyy}', /must start with \{yyyy\} before \{dd\}/],
    ['{yyyy}/{dd}', /\{dd\} needs \{mm\} before it/],
    ['{yyyy}/{mm}/{HH}', /\{HH\} needs \{dd\} before it/],
    ['{yyyy}/{mm}', /at least \{yyyy\}, \{mm\} and \{dd\}/],
    ['{yyyy}/{MM}/{dd}', /unknown placeholder \{MM\}/],
    ['{yyyy}/{mm}/{dd}/{hh}', /unknown placeholder \{hh\}/],
    ['{yyyy}/{mm}/{dd}/{yyyy}', /\{yyyy\} appears twice/],
    ['{yyyy/{mm}/{dd}', /unbalanced '\{'/],
    ['/{yyyy}/{mm}/{dd}', /empty folder level/],
    ['{yyyy}//{mm}/{dd}', /empty folder level/],
    ['', /empty/],
  ])('rejects %j', (text, message) => {
    let error: unknown;
    try {
      Layout.parse(text);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).context.field).toBe('discover.layout');
    expect((error as Error).message).toMatch(message);
  });

  it('accepts a trailing slash', () => {
    expect(Layout.parse('{yyyy}/{mm}/{dd}/').prefixOf('2026-01-02')).toBe('2026/01/02/');
  });

  it('escapes regex characters in literal text', () => {
    const layout = Layout.parse('d.{yyyy}+{mm}({dd})');
    expect(layout.parsePrefix('d.2026+03(05)/')).toEqual({ id: '2026-03-05' });
    expect(layout.parsePrefix('dx2026+03(05)/')).toHaveProperty('reason');
  });
});

describe('folder names that are not partitions', () => {
  const daily = Layout.parse('{yyyy}/{mm}/{dd}');
  const hourly = Layout.parse('dt={yyyy}-{mm}-{dd}/hour={HH}');

  it.each([
    ['2026/13/45/', 'impossible date: month 13 does not exist'],
    ['2026/02/30/', 'impossible date: 2026-02-30 does not exist'],
    ['2026/04/31/', 'impossible date: 2026-04-31 does not exist'],
    ['2026/00/01/', 'impossible date: month 00 does not exist'],
    ['0000/01/01/', 'impossible date: year 0000 does not exist'],
    ['2026/3/05/', "does not match layout level '{mm}'"],
    ['2026/03/05x/', "does not match layout level '{dd}'"],
    ['latest/03/05/', "does not match layout level '{yyyy}'"],
    ['2026/03/', "does not have the 3 levels of '{yyyy}/{mm}/{dd}'"],
  ])('daily %s: %s', (prefix, reason) => {
    expect(daily.parsePrefix(prefix)).toEqual({ reason });
  });

  it('accepts leap days only in leap years', () => {
    expect(daily.parsePrefix('2028/02/29/')).toEqual({ id: '2028-02-29' });
    expect(daily.parsePrefix('2026/02/29/')).toEqual({
      reason: 'impossible date: 2026-02-29 does not exist',
    });
    expect(daily.parsePrefix('2000/02/29/')).toEqual({ id: '2000-02-29' });
    expect(daily.parsePrefix('2100/02/29/')).toHaveProperty('reason');
  });

  it('rejects hour 24 and names the level', () => {
    expect(hourly.parsePrefix('dt=2026-03-05/hour=24/')).toEqual({
      reason: 'impossible date: hour 24 does not exist',
    });
    expect(hourly.parsePrefix('dt=2026-03-05/hr=01/')).toEqual({
      reason: "does not match layout level 'hour={HH}'",
    });
    expect(hourly.parsePrefix('dt=2026-03-05/hour=23/')).toEqual({ id: '2026-03-05T23' });
  });

  it('checks each level with the levels above it', () => {
    expect(daily.matchLevel(1, '02', { year: 2026 })).toEqual({ fields: { year: 2026, month: 2 } });
    expect(daily.matchLevel(2, '29', { year: 2026, month: 2 })).toEqual({
      reason: 'impossible date: 2026-02-29 does not exist',
    });
  });
});
