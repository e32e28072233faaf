import { describe, expect, it } from 'vitest';
import { JsonNumber, statsJson } from '../../src/delta/stats.js';
import { truncateMaxString, truncateMinString } from '../../src/engine/file-stats.js';

const MAX = '\u{10FFFF}';

describe('string stat truncation (Spark truncateMin/MaxStringAgg, prefix 6 here)', () => {
  it('keeps strings up to the prefix length as they are', () => {
    expect(truncateMinString('abcdef', 6)).toBe('abcdef');
    expect(truncateMaxString('abcdef', 6)).toBe('abcdef');
  });

  it('min: a plain prefix, never splitting a surrogate pair', () => {
    expect(truncateMinString('abcdefgh', 6)).toBe('abcdef');
    expect(truncateMinString('abcde😀x', 6)).toBe('abcde😀');
  });

  it('max: U+007F after the prefix when the next character is ASCII below DEL', () => {
    expect(truncateMaxString('abcdefgh', 6)).toBe('abcdef\u007F');
  });

  it('max: U+10FFFF when the next character is DEL or non-ASCII', () => {
    expect(truncateMaxString('abcdefé', 6)).toBe(`abcdef${MAX}`);
    expect(truncateMaxString('abcdef\u007Fz', 6)).toBe(`abcdef${MAX}`);
  });

  it('max: extends the prefix past U+10FFFF characters, which nothing exceeds', () => {
    expect(truncateMaxString(`abcdef${MAX}gh`, 6)).toBe(`abcdef${MAX}\u007F`);
    expect(truncateMaxString(`abcdef${MAX}`, 6)).toBe(`abcdef${MAX}`);
  });

  it('max: left out when no bound fits in twice the prefix', () => {
    expect(truncateMaxString(`abcdef${MAX.repeat(4)}x`, 6)).toBeUndefined();
  });

  it('every bound is ≥ the original in UTF-8 byte order and min ≤ it', () => {
    const utf8 = (s: string) => Buffer.from(s, 'utf8');
    for (const s of ['abcdefgh', 'abcdefé', `abcdef${MAX}gh`, 'zzzzzz😀😀', 'aaaaaa\u0000b']) {
      const max = truncateMaxString(s, 6)!;
      expect(Buffer.compare(utf8(max), utf8(s))).toBeGreaterThanOrEqual(0);
      expect(Buffer.compare(utf8(truncateMinString(s, 6)), utf8(s))).toBeLessThanOrEqual(0);
    }
  });
});

describe('statsJson', () => {
  it('writes keys in Spark order, exact decimal text, and nested objects', () => {
    const json = statsJson({
      nullCount: { a: 0, s: { x: 1 } },
      maxValues: { a: new JsonNumber('12345678901234567890.1234567890'), s: { x: 'k"q' } },
      minValues: { a: new JsonNumber('-0.0000000001'), s: { x: 'a' } },
      numRecords: 2,
    });
    expect(json).toBe(
      '{"numRecords":2,"minValues":{"a":-0.0000000001,"s":{"x":"a"}},' +
        '"maxValues":{"a":12345678901234567890.1234567890,"s":{"x":"k\\"q"}},"nullCount":{"a":0,"s":{"x":1}}}',
    );
  });

  it('JSON.stringify still works on a JsonNumber (as a JS number)', () => {
    expect(JSON.stringify({ d: new JsonNumber('1.50') })).toBe('{"d":1.5}');
  });
});
