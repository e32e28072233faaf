/**
 * doubleLoss (./json-numbers.ts, issue 18's rules) answers most numbers from their length alone
 * (issue 25: the lexer runs over every JSON file's text). Property: for JSON number lexemes of every
 * shape, above all around the length limits of that shortcut (15 digits with a fraction, 18 without),
 * it refuses exactly what the rules refuse, computed here independently with BigInt arithmetic.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { doubleLoss } from '../../src/engine/json-numbers.js';

const INT64_MAX = 2n ** 63n - 1n;
const INT64_MIN = -(2n ** 63n);

/** The rules: an integer must fit 64 bits; any other number at most 15 significant digits and a double's normal range (or zero). */
function refused(lexeme: string): boolean {
  const m = /^(-?)(0|[1-9][0-9]*)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/.exec(lexeme)!;
  const [, sign = '', whole = '', fraction, exponent] = m;
  if (fraction === undefined && exponent === undefined) {
    const v = BigInt(`${sign}${whole}`);
    return v > INT64_MAX || v < INT64_MIN;
  }
  const significant = `${whole}${fraction ?? ''}`.replace(/^0+/, '').replace(/0+$/, '');
  if (significant.length > 15) return true;
  if (significant === '') return false;
  // The value's decimal exponent: significant digits d1.d2... × 10^e.
  const lead = `${whole}${fraction ?? ''}`.search(/[1-9]/);
  const e = whole.length - 1 - lead + Number(exponent ?? 0);
  if (e > 308 || e < -308) return true;
  const v = Math.abs(Number(lexeme));
  return !Number.isFinite(v) || v < 2.2250738585072014e-308;
}

const digits = (min: number, max: number) =>
  fc.stringMatching(new RegExp(`^[0-9]{${min},${max}}$`));
const whole = fc.oneof(
  fc.constant('0'),
  fc.tuple(fc.constantFrom('1', '5', '9'), digits(0, 21)).map(([a, b]) => a + b),
);
const lexeme = fc
  .tuple(
    fc.constantFrom('', '-'),
    whole,
    fc.option(digits(1, 20), { nil: undefined }),
    fc.option(
      fc.tuple(
        fc.constantFrom('e', 'E'),
        fc.constantFrom('', '+', '-'),
        fc.integer({ min: 0, max: 400 }),
      ),
      { nil: undefined },
    ),
  )
  .map(
    ([s, w, f, e]) =>
      `${s}${w}${f === undefined ? '' : `.${f}`}${e === undefined ? '' : `${e[0]}${e[1]}${e[2]}`}`,
  );

describe('doubleLoss', () => {
  it('refuses exactly the numbers the rules refuse, whatever their length', () => {
    fc.assert(
      fc.property(lexeme, (x) => {
        expect(doubleLoss(x) !== null).toBe(refused(x));
      }),
      { numRuns: 20_000 },
    );
  });

  it('at the limits: 15 and 16 digits with a fraction, 18 and 19 without, the 64-bit bounds', () => {
    for (const x of [
      '123456789012345.6',
      '12345678901234.5',
      '-1234567890123.45',
      '0.000000000000001',
      '0.123456789012345',
      '0.1234567890123456',
      '999999999999999999',
      '9223372036854775807',
      '9223372036854775808',
      '-9223372036854775808',
      '-9223372036854775809',
      '1e308',
      '1e309',
      '1e-308',
      '1e-320',
      '0.0',
      '-0',
    ]) {
      expect(doubleLoss(x) !== null, x).toBe(refused(x));
    }
  });
});
