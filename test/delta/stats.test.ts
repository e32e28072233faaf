import { describe, expect, it } from 'vitest';
import { parseStats, quoteImpreciseNumbers, statsBounds } from '../../src/delta/stats.js';

describe('parseStats', () => {
  it('parses Spark stats text', () => {
    const stats = parseStats(
      '{"numRecords":10,"minValues":{"a":1,"s":{"x":"k"},"t":"2020-02-01T08:09:10.000Z"},"maxValues":{"a":9},"nullCount":{"a":0,"s":{"x":2}},"tightBounds":false}',
    );
    expect(stats).toEqual({
      numRecords: 10,
      minValues: { a: 1, s: { x: 'k' }, t: '2020-02-01T08:09:10.000Z' },
      maxValues: { a: 9 },
      nullCount: { a: 0, s: { x: 2 } },
      tightBounds: false,
    });
  });

  it('keeps numbers a double cannot hold as exact text', () => {
    const stats = parseStats(
      '{"numRecords":1,"minValues":{"d":-9999999999.9999999999,"z":0E-10,"big":12345678901234567890,"f":1.5}}',
    );
    expect(stats?.minValues).toEqual({
      d: '-9999999999.9999999999',
      z: 0,
      big: '12345678901234567890',
      f: 1.5,
    });
  });

  it('leaves digits inside strings alone', () => {
    const text = '{"minValues":{"s":"12345678901234567890 \\" 1.000000000000000001"}}';
    expect(quoteImpreciseNumbers(text)).toBe(text);
  });

  it('missing or malformed stats are null (the file just cannot be skipped)', () => {
    expect(parseStats(undefined)).toBeNull();
    expect(parseStats(null)).toBeNull();
    expect(parseStats('')).toBeNull();
    expect(parseStats('{"numRecords":')).toBeNull();
    expect(parseStats('[1,2]')).toBeNull();
  });
});

describe('statsBounds', () => {
  const file = {
    parsedStats: parseStats(
      '{"numRecords":5,"minValues":{"a":1,"s":{"x":"k"}},"maxValues":{"a":9,"s":{"x":"z"}},"nullCount":{"a":0,"b":5,"s":{"x":1}}}',
    ),
  };

  it('gives min, max, null count and rows for top-level and nested columns', () => {
    expect(statsBounds(file, 'a')).toEqual({
      min: 1,
      max: 9,
      nullCount: 0,
      numRecords: 5,
      tightBounds: true,
    });
    expect(statsBounds(file, ['s', 'x'])).toEqual({
      min: 'k',
      max: 'z',
      nullCount: 1,
      numRecords: 5,
      tightBounds: true,
    });
  });

  it('an all-null or unknown column has no bounds; a file without stats gives null', () => {
    expect(statsBounds(file, 'b')).toMatchObject({ min: undefined, max: undefined, nullCount: 5 });
    expect(statsBounds(file, 'nope')).toMatchObject({
      min: undefined,
      max: undefined,
      nullCount: undefined,
    });
    expect(statsBounds({ parsedStats: null }, 'a')).toBeNull();
  });
});
