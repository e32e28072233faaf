/**
 * Text into typed columns (../../src/engine/text-cast.ts), evaluated by real DuckDB: a text
 * converts only when it spells a value of the type exactly. Each refused text here is one DuckDB
 * casts without a word (`' 42 '`, `1_000`, `1e3` and `0x10` to integers, `1.505` rounded, `26`
 * as the year 26, blanks skipped by strptime).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDuckType } from '../../src/engine/duck-type.js';
import { DuckSession } from '../../src/engine/duckdb.js';
import { str } from '../../src/engine/sql.js';
import {
  ambiguitySql,
  formatPattern,
  textMisfitSql,
  textValueSql,
  type TemporalFormats,
} from '../../src/engine/text-cast.js';

let session: DuckSession;
beforeAll(async () => {
  session = await DuckSession.open({ threads: 1 });
});
afterAll(() => session.close());

/** The text's value in `type` (JSON text), 'refused', or 'ambiguous: a | b'. */
async function convert(
  text: string,
  type: string,
  formats: TemporalFormats = {},
): Promise<unknown> {
  const t = parseDuckType(type);
  const col = str(text);
  const misfit = textMisfitSql(col, t, formats) ?? 'false';
  const ambiguity = ambiguitySql(col, t, formats);
  const amb = ambiguity
    ? `${ambiguity.predicate} AS a, CAST(${ambiguity.first} AS VARCHAR) AS f, CAST(${ambiguity.second} AS VARCHAR) AS s`
    : 'false AS a';
  const row = (
    await session.allJson(`SELECT ${misfit} AS m, ${amb}, ${textValueSql(col, t, formats)} AS v`)
  )[0]!;
  if (row['a'] === true) return `ambiguous: ${String(row['f'])} | ${String(row['s'])}`;
  if (row['m'] === true) return 'refused';
  return row['v'];
}

describe('numbers', () => {
  it.each([
    ['42', 'BIGINT', '42'],
    ['-42', 'BIGINT', '-42'],
    ['+42', 'BIGINT', '42'],
    ['007', 'INTEGER', 7],
    ['9223372036854775807', 'BIGINT', '9223372036854775807'],
    ['12345678901234567890', 'DECIMAL(38,0)', '12345678901234567890'],
    ['12345678901234567890.123456789', 'DECIMAL(38,9)', '12345678901234567890.123456789'],
    ['-12.50', 'DECIMAL(10,2)', '-12.50'],
    ['1.500', 'DECIMAL(10,2)', '1.50'],
    ['.5', 'DECIMAL(10,2)', '0.50'],
    ['5', 'DECIMAL(10,2)', '5.00'],
    ['1.5', 'DOUBLE', 1.5],
    ['1e3', 'DOUBLE', 1000],
    ['-2.5E-3', 'DOUBLE', -0.0025],
    ['2.2250738585072014e-308', 'DOUBLE', 2.2250738585072014e-308],
    ['0e-999', 'DOUBLE', 0],
    ['0.000e5', 'FLOAT', 0],
    ['1e-37', 'FLOAT', 9.99999991097579e-38],
    [`0.${'0'.repeat(40)}`, 'FLOAT', 0],
    [`0.${'0'.repeat(30)}1`, 'DOUBLE', 1e-31],
    ['TRUE', 'BOOLEAN', true],
    ['false', 'BOOLEAN', false],
  ])('%j into %s is %j', async (text, type, expected) => {
    expect(await convert(text, type)).toEqual(expected);
  });

  it.each([
    [' 42 ', 'BIGINT'],
    ['42 ', 'BIGINT'],
    ['1_000', 'BIGINT'],
    ['1e3', 'BIGINT'],
    ['0x10', 'BIGINT'],
    ['12.5', 'BIGINT'],
    ['1.0', 'BIGINT'],
    ['9223372036854775808', 'BIGINT'],
    ['', 'BIGINT'],
    ['-', 'BIGINT'],
    ['1.505', 'DECIMAL(10,2)'],
    ['123456789.5', 'DECIMAL(10,2)'],
    ['1e3', 'DECIMAL(10,2)'],
    ['1_000.5', 'DECIMAL(10,2)'],
    ['.', 'DECIMAL(10,2)'],
    [' 1.5', 'DOUBLE'],
    ['1_000.5', 'DOUBLE'],
    ['inf', 'DOUBLE'],
    ['NaN', 'DOUBLE'],
    ['1e400', 'DOUBLE'],
    // Below the smallest normal double: 0, or a subnormal holding fewer digits.
    ['1e-400', 'DOUBLE'],
    ['-2.5e-320', 'DOUBLE'],
    ['1e-50', 'FLOAT'],
    [`0.${'0'.repeat(40)}1`, 'FLOAT'],
    [`-0.${'0'.repeat(320)}1`, 'DOUBLE'],
    ['1e39', 'FLOAT'],
    ['t', 'BOOLEAN'],
    ['1', 'BOOLEAN'],
    ['yes', 'BOOLEAN'],
    ['{"x": 1}', 'STRUCT(x BIGINT)'],
    ['[1]', 'BIGINT[]'],
  ])('%j into %s is refused', async (text, type) => {
    expect(await convert(text, type)).toBe('refused');
  });

  it('text, and the text bytes of binary, take anything as it is', async () => {
    expect(await convert(' 1e3 ', 'VARCHAR')).toBe(' 1e3 ');
    const blob = textValueSql(str('\\x41'), parseDuckType('BLOB'));
    expect((await session.one(`SELECT hex(${blob}) AS h`))!['h']).toBe('5C783431');
  });
});

describe('dates and timestamps without a format', () => {
  it.each([
    ['2026-01-02', 'DATE', '2026-01-02'],
    ['2026-1-2', 'DATE', '2026-01-02'],
    ['2026-01-02 00:00:00', 'DATE', '2026-01-02'],
    ['13/02/2026', 'DATE', '2026-02-13'],
    ['02/13/2026', 'DATE', '2026-02-13'],
    ['13.02.2026', 'DATE', '2026-02-13'],
    ['02-02-2026', 'DATE', '2026-02-02'],
    ['2026/02/13', 'DATE', '2026-02-13'],
    ['2026-01-02T10:00:00', 'TIMESTAMP WITH TIME ZONE', '2026-01-02 10:00:00+00'],
    ['2026-01-02 10:00', 'TIMESTAMP WITH TIME ZONE', '2026-01-02 10:00:00+00'],
    [
      '2026-01-02T10:00:00.123456+02:00',
      'TIMESTAMP WITH TIME ZONE',
      '2026-01-02 08:00:00.123456+00',
    ],
    ['2026-01-02T10:00:00Z', 'TIMESTAMP WITH TIME ZONE', '2026-01-02 10:00:00+00'],
    ['2026-01-02', 'TIMESTAMP WITH TIME ZONE', '2026-01-02 00:00:00+00'],
    ['13/02/2026 10:30:00', 'TIMESTAMP WITH TIME ZONE', '2026-02-13 10:30:00+00'],
    ['2026-01-02 10:00:00', 'TIMESTAMP', '2026-01-02 10:00:00'],
  ])('%j into %s is %j', async (text, type, expected) => {
    expect(await convert(text, type)).toBe(expected);
  });

  it.each([
    ['01/02/2026', 'DATE', 'ambiguous: 2026-01-02 | 2026-02-01'],
    ['01.02.2026', 'DATE', 'ambiguous: 2026-01-02 | 2026-02-01'],
    [
      '01/02/2026 10:00',
      'TIMESTAMP WITH TIME ZONE',
      'ambiguous: 2026-01-02 10:00 | 2026-02-01 10:00',
    ],
  ])('%j into %s reads two ways', async (text, type, expected) => {
    expect(await convert(text, type)).toBe(expected);
  });

  it.each([
    [' 2026-01-02', 'DATE'],
    ['2026-01-02 ', 'DATE'],
    ['2026-02-30', 'DATE'],
    ['01/02/26', 'DATE'],
    ['26-01-02', 'DATE'],
    ['01/02-2026', 'DATE'],
    ['2026-01-02 10:00', 'DATE'],
    ['20260102', 'DATE'],
    ['2026-01-02 10:00:00.1234567', 'TIMESTAMP WITH TIME ZONE'],
    ['2026-01-02 10:00:00+02', 'TIMESTAMP'],
    ['2026-01-02 25:00', 'TIMESTAMP WITH TIME ZONE'],
    ['10:30:00', 'TIMESTAMP WITH TIME ZONE'],
  ])('%j into %s is refused', async (text, type) => {
    expect(await convert(text, type)).toBe('refused');
  });
});

describe('dates and timestamps with the job formats', () => {
  const formats = { date: '%d/%m/%Y', timestamp: '%d/%m/%Y %H:%M' };
  it.each([
    ['01/02/2026', 'DATE', '2026-02-01'],
    ['1/2/2026', 'DATE', '2026-02-01'],
    ['2026-02-01', 'DATE', '2026-02-01'],
    ['01/02/2026 10:30', 'TIMESTAMP WITH TIME ZONE', '2026-02-01 10:30:00+00'],
  ])('%j into %s is %j', async (text, type, expected) => {
    expect(await convert(text, type, formats)).toBe(expected);
  });

  it.each([
    ['02/13/2026', 'DATE'],
    ['01/02/26', 'DATE'],
    [' 01/02/2026', 'DATE'],
    ['01/02/2026', 'TIMESTAMP WITH TIME ZONE'],
  ])('%j into %s is refused', async (text, type) => {
    expect(await convert(text, type, formats)).toBe('refused');
  });

  it('a format with %z gives instants, which a wall-clock column refuses', async () => {
    const zoned = { timestamp: '%d/%m/%Y %H:%M %z' };
    expect(await convert('01/02/2026 10:30 +0100', 'TIMESTAMP WITH TIME ZONE', zoned)).toBe(
      '2026-02-01 09:30:00+00',
    );
    expect(await convert('01/02/2026 10:30 +0100', 'TIMESTAMP', zoned)).toBe('refused');
  });

  it('formatPattern: four-digit %Y, nothing around the value, literals escaped', () => {
    expect(formatPattern('%d/%m/%Y')).toBe('[0-9]{1,2}\\/[0-9]{1,2}\\/[0-9]{4}');
    expect(formatPattern('%-d.%-m.%Y %H:%M')).toBe(
      '[0-9]{1,2}\\.[0-9]{1,2}\\.[0-9]{4} [0-9]{1,2}:[0-9]{2}',
    );
  });
});

describe('properties: a text converts to exactly the value it spells, or is refused', () => {
  // Generated integer texts (signs, leading zeros, any length up to 25 digits) into BIGINT:
  // the stored value is the text's value when it is in range, and the text is refused otherwise.
  it('integer texts into BIGINT', async () => {
    const text = fc.tuple(
      fc.constantFrom('', '+', '-'),
      fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: 1, maxLength: 25 }),
    );
    await fc.assert(
      fc.asyncProperty(text, async ([sign, digits]) => {
        const spelled = BigInt(`${sign === '-' ? '-' : ''}${digits}`);
        const inRange = spelled >= -(2n ** 63n) && spelled < 2n ** 63n;
        const got = await convert(`${sign}${digits}`, 'BIGINT');
        expect(got).toEqual(inRange ? spelled.toString() : 'refused'); // BIGINTs come back as JSON text
      }),
      { numRuns: 150, seed: 18 },
    );
  });

  // Generated decimal texts into DECIMAL(12,3): stored exactly when the digits fit (digits past
  // the scale only zeros), refused otherwise; never rounded.
  it('decimal texts into DECIMAL(12,3)', async () => {
    const digits = (max: number) =>
      fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: 0, maxLength: max });
    const text = fc
      .tuple(fc.constantFrom('', '-'), digits(11), digits(6))
      .filter(([, w, f]) => w.length + f.length > 0);
    await fc.assert(
      fc.asyncProperty(text, async ([sign, whole, frac]) => {
        const src = frac === '' ? `${sign}${whole}` : `${sign}${whole}.${frac}`;
        const wholeDigits = whole.replace(/^0+/, '');
        const fits = wholeDigits.length <= 9 && frac.slice(3).replace(/0/g, '') === '';
        const got = await convert(src, 'DECIMAL(12,3)');
        if (!fits) {
          expect(got).toBe('refused');
          return;
        }
        const scaled = BigInt(`${whole || '0'}${frac.slice(0, 3).padEnd(3, '0')}`);
        const expected = `${sign === '-' && scaled !== 0n ? '-' : ''}${scaled / 1000n}.${(scaled % 1000n).toString().padStart(3, '0')}`;
        expect(got).toBe(expected);
      }),
      { numRuns: 150, seed: 18 },
    );
  });
  // CSV type inference skips the date and timestamp checks of a column with a value that does not
  // start with a digit (src/engine/infer-text-types.ts): sound only while no such text reads as
  // either without a configured format. Texts of the characters the forms use, each with one
  // leading character that is not a digit, often a valid form after it; one statement per type.
  it('no text that starts with anything but a digit reads as a date or timestamp without a format', async () => {
    const form = fc.constantFrom(
      '2026-01-02',
      '13/02/2026',
      '01.02.2026',
      '2026/02/13',
      '2026-01-02T10:00:00Z',
      '2026-01-02 10:00:00+02:00',
      '13/02/2026 10:30',
    );
    const lead = fc.constantFrom(...' +-./:TZtz\tabc');
    const tail = fc.string({ unit: fc.constantFrom(...'0123456789/-.: TZ+'), maxLength: 22 });
    const texts = fc.sample(
      fc.tuple(lead, fc.oneof(form, tail)).map(([first, rest]) => `${first}${rest}`),
      { numRuns: 2000, seed: 7 },
    );
    const values = texts.map((t) => `(${str(t)})`).join(', ');
    for (const type of ['DATE', 'TIMESTAMP WITH TIME ZONE', 'TIMESTAMP']) {
      const t = parseDuckType(type);
      const ambiguity = ambiguitySql('t', t)?.predicate ?? 'false';
      const read = await session.all(
        `SELECT t FROM (VALUES ${values}) AS v(t) WHERE ${textValueSql('t', t)} IS NOT NULL OR ${ambiguity}`,
      );
      expect(read, type).toEqual([]);
    }
  });
});
