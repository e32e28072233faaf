/**
 * Casting source values into table column types: widening casts pass every value, checked
 * casts pass values that fit exactly and reject the rest (DuckDB alone would round 1.5 to 2,
 * or cut a timestamp down to a date, without a word). Evaluated by real DuckDB.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataType } from '../../src/delta/schema.js';
import { DuckSession } from '../../src/engine/duckdb.js';
import { castClass, fitCastSql, misfitSql } from '../../src/engine/fit-cast.js';

let session: DuckSession;
beforeAll(async () => {
  session = await DuckSession.open({ threads: 1 });
});
afterAll(() => session.close());

/** Cast the literal `value` (typed `sourceType`) into `target`; the result as JSON text, or the error. */
async function castValue(
  value: string,
  sourceType: string,
  target: DataType,
): Promise<{ value?: unknown; misfit: boolean; error?: string }> {
  const col = `CAST(${value} AS ${sourceType})`;
  const misfit = misfitSql(col, sourceType, target);
  const flag =
    misfit === null ? false : Boolean((await session.one(`SELECT ${misfit} AS m`))!['m']);
  try {
    const row = (
      await session.allJson(`SELECT ${fitCastSql(col, sourceType, target, 'c')} AS v`)
    )[0]!;
    return { value: row['v'], misfit: flag };
  } catch (err) {
    return { misfit: flag, error: (err as Error).message };
  }
}

describe('castClass', () => {
  it.each([
    ['INTEGER', 'long', 'lossless'],
    ['SMALLINT', 'integer', 'lossless'],
    ['UINTEGER', 'long', 'lossless'],
    ['UINTEGER', 'integer', 'checked'],
    ['FLOAT', 'double', 'lossless'],
    ['INTEGER', 'double', 'lossless'],
    ['UINTEGER', 'double', 'lossless'],
    ['SMALLINT', 'float', 'lossless'],
    ['DECIMAL(15,2)', 'double', 'lossless'],
    // A double holds 15 significant digits for sure, a float 6: wider values are checked.
    ['BIGINT', 'double', 'checked'],
    ['UBIGINT', 'double', 'checked'],
    ['INTEGER', 'float', 'checked'],
    ['DECIMAL(18,2)', 'double', 'checked'],
    ['DECIMAL(7,2)', 'float', 'checked'],
    ['DECIMAL(10,2)', 'decimal(12,2)', 'lossless'],
    ['DECIMAL(10,2)', 'decimal(12,4)', 'lossless'],
    ['DECIMAL(12,2)', 'decimal(10,2)', 'checked'],
    ['DECIMAL(12,4)', 'decimal(12,2)', 'checked'],
    ['INTEGER', 'decimal(12,2)', 'lossless'],
    ['BIGINT', 'decimal(12,2)', 'checked'],
    ['DATE', 'timestamp', 'lossless'],
    ['TIMESTAMP', 'timestamp', 'lossless'],
    ['TIMESTAMP_NS', 'timestamp', 'checked'],
    ['TIMESTAMP_NS', 'timestamp_ntz', 'checked'],
    ['BIGINT', 'string', 'lossless'],
    // DuckDB's CAST of binary to text writes escapes: checked, decoded as UTF-8.
    ['BLOB', 'string', 'checked'],
    ['BIGINT', 'integer', 'checked'],
    ['DOUBLE', 'long', 'checked'],
    ['DOUBLE', 'float', 'checked'],
    ['VARCHAR', 'long', 'checked'],
    ['VARCHAR', 'string', 'lossless'],
    ['"NULL"', 'long', 'lossless'],
    ['TIMESTAMP WITH TIME ZONE', 'date', 'checked'],
  ] as const)('%s into %s is %s', (source, target, expected) => {
    expect(castClass(source, target)).toBe(expected);
  });
});

describe('checked casts pass values that fit and reject the rest', () => {
  it.each([
    ['42', 'BIGINT', 'integer', 42],
    ["'12'", 'VARCHAR', 'long', '12'],
    ['2.0', 'DOUBLE', 'long', '2'],
    ["'2.50'", 'VARCHAR', 'decimal(12,2)', '2.50'],
    ['1.20', 'DECIMAL(12,4)', 'decimal(12,2)', '1.20'],
    ["'2024-03-01'", 'VARCHAR', 'date', '2024-03-01'],
    ["'2024-03-01 00:00:00'", 'VARCHAR', 'date', '2024-03-01'],
    ["TIMESTAMP '2024-03-01 00:00:00'", 'TIMESTAMP', 'date', '2024-03-01'],
    ["'true'", 'VARCHAR', 'boolean', true],
    ['9007199254740992', 'BIGINT', 'double', 9007199254740992],
    ['800000000.30', 'DECIMAL(18,2)', 'double', 800000000.3],
    ['0.00000010', 'DECIMAL(18,8)', 'double', 1e-7],
    ['16777216', 'INTEGER', 'float', 16777216],
    ["'ab\\xC3\\xA9'", 'BLOB', 'string', 'abé'],
  ] as const)('%s (%s) into %s gives %s', async (value, source, target, expected) => {
    const r = await castValue(value, source, target);
    expect(r.error).toBeUndefined();
    expect(r.misfit).toBe(false);
    expect(r.value).toEqual(expected);
  });

  it.each([
    ['3000000000', 'BIGINT', 'integer'],
    ["'abc'", 'VARCHAR', 'long'],
    ["' 7 '", 'VARCHAR', 'long'],
    ["'1.5'", 'VARCHAR', 'long'],
    ['1.5', 'DOUBLE', 'long'],
    ['1.234', 'DECIMAL(12,4)', 'decimal(12,2)'],
    ["'1.234'", 'VARCHAR', 'decimal(12,2)'],
    ['12345678901.5', 'DECIMAL(13,1)', 'decimal(10,1)'],
    ["'2024-03-01 10:00'", 'VARCHAR', 'date'],
    ["TIMESTAMP '2024-03-01 10:00:00'", 'TIMESTAMP', 'date'],
    ["'not a date'", 'VARCHAR', 'timestamp'],
    ['1e300', 'DOUBLE', 'float'],
    // A double would store these as 9007199254740992, 9223372036854775808, 1234567890123456.75.
    ['9007199254740993', 'BIGINT', 'double'],
    ['9223372036854775807', 'BIGINT', 'double'],
    ['18446744073709551615', 'UBIGINT', 'double'],
    ['1234567890123456.78', 'DECIMAL(18,2)', 'double'],
    ['16777217', 'INTEGER', 'float'],
    // Not UTF-8: as text it would be the 8 characters \xFF\x00, not these two bytes.
    ["'\\xFF\\x00'", 'BLOB', 'string'],
    // Delta timestamps hold microseconds: DuckDB's cast would drop the nanoseconds.
    ["TIMESTAMP_NS '2024-03-01 10:00:00.123456789'", 'TIMESTAMP_NS', 'timestamp'],
    ["TIMESTAMP_NS '1969-12-31 23:59:59.999999999'", 'TIMESTAMP_NS', 'timestamp_ntz'],
  ] as const)(
    '%s (%s) does not fit %s: flagged, and the cast raises',
    async (value, source, target) => {
      const r = await castValue(value, source, target);
      expect(r.misfit).toBe(true);
      expect(r.error).toMatch(/does not fit the table's type/);
    },
  );

  it('a binary field into a string field of a struct passes only as plain ASCII (the struct CAST would write escapes)', async () => {
    const target: DataType = {
      type: 'struct',
      fields: [{ name: 'b', type: 'string', nullable: true, metadata: {} }],
    };
    const plain = await castValue("{'b': 'plain'::BLOB}", 'STRUCT(b BLOB)', target);
    expect(plain).toEqual({ value: { b: 'plain' }, misfit: false });
    const accented = await castValue("{'b': 'ab\\xC3\\xA9'::BLOB}", 'STRUCT(b BLOB)', target);
    expect(accented.misfit).toBe(true);
    expect(accented.error).toMatch(/does not fit the table's type/);
  });

  it('passes NULL through every cast', async () => {
    for (const [source, target] of [
      ['VARCHAR', 'long'],
      ['DOUBLE', 'integer'],
      ['VARCHAR', 'date'],
    ] as const) {
      const r = await castValue('NULL', source, target);
      expect(r).toEqual({ value: null, misfit: false });
    }
  });
});
