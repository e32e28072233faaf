import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareKeys } from '../../src/storage/driver-helpers.js';

const utf8Order = (a: string, b: string) =>
  Math.sign(Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')));

// Keys drawn from characters around the places UTF-16 and UTF-8 orders part: ASCII, U+D7FF, the
// private use area above the surrogates (U+E000..U+FFFF), and characters beyond U+FFFF (pairs).
const char = fc.constantFrom(
  'a',
  'b',
  '/',
  '-',
  '0',
  'é',
  '\uD7FF',
  '\uE000',
  '\uFFFD',
  '😀',
  '𝄞',
  '\uFFFF',
);
const key = fc.array(char, { maxLength: 8 }).map((cs) => cs.join(''));

describe('compareKeys', () => {
  it('orders keys by their UTF-8 bytes, as S3 does (property)', () => {
    fc.assert(
      fc.property(key, key, (a, b) => {
        expect(Math.sign(compareKeys(a, b))).toBe(utf8Order(a, b));
      }),
      { numRuns: 2000 },
    );
  });

  it('puts a character beyond U+FFFF after U+E000..U+FFFF, unlike UTF-16 order', () => {
    expect(compareKeys('a\uFFFD', 'a😀')).toBeLessThan(0);
    expect('a\uFFFD' < 'a😀').toBe(false);
    expect(compareKeys('x', 'x')).toBe(0);
    expect(compareKeys('x', 'x/')).toBeLessThan(0);
  });
});
