/**
 * Partition values in SQL: typed literals for values read from the log, and the log's strings
 * formatted from column values, both evaluated by DuckDB.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SchemaError } from '../../src/errors.js';
import { DuckSession } from '../../src/engine/duckdb.js';
import { partitionValueSql, partitionValueStringSql } from '../../src/engine/partition-sql.js';

describe('partitionValueSql', () => {
  let session: DuckSession;
  beforeAll(async () => {
    session = await DuckSession.open({ threads: 1 });
  });
  afterAll(() => session.close());

  /** The literal evaluated by DuckDB: its type and its value as text. */
  async function evaluate(value: string | null, type: string): Promise<[string, string | null]> {
    const sql = partitionValueSql(value, type, 'c');
    const row = (
      await session.allJson(`SELECT typeof(${sql}) AS t, CAST(${sql} AS VARCHAR) AS v`)
    )[0]!;
    return [String(row['t']), row['v'] as string | null];
  }

  it('null and the empty string are NULL; the string "null" is a string', async () => {
    expect(await evaluate(null, 'integer')).toEqual(['INTEGER', null]);
    expect(await evaluate('', 'string')).toEqual(['VARCHAR', null]);
    expect(await evaluate('null', 'string')).toEqual(['VARCHAR', 'null']);
    expect(await evaluate("it's", 'string')).toEqual(['VARCHAR', "it's"]);
  });

  it('numbers, booleans, dates and decimals keep their type', async () => {
    expect(await evaluate('-7', 'byte')).toEqual(['TINYINT', '-7']);
    expect(await evaluate('9223372036854775807', 'long')).toEqual([
      'BIGINT',
      '9223372036854775807',
    ]);
    expect(await evaluate('1.0', 'float')).toEqual(['FLOAT', '1.0']);
    expect(await evaluate('NaN', 'double')).toEqual(['DOUBLE', 'nan']);
    expect(await evaluate('-Infinity', 'double')).toEqual(['DOUBLE', '-inf']);
    expect(await evaluate('true', 'boolean')).toEqual(['BOOLEAN', 'true']);
    expect(await evaluate('2021-09-08', 'date')).toEqual(['DATE', '2021-09-08']);
    expect(await evaluate('234.00000', 'decimal(12,5)')).toEqual(['DECIMAL(12,5)', '234.00000']);
    expect(await evaluate('-2342342.23423', 'decimal(12, 5)')).toEqual([
      'DECIMAL(12,5)',
      '-2342342.23423',
    ]);
    expect(await evaluate('ab', 'binary')).toEqual(['BLOB', 'ab']);
  });

  it('timestamps: Spark form read as UTC, ISO form with its zone, NTZ as wall clock', async () => {
    const epoch = async (value: string, type: string) =>
      (await session.allJson(`SELECT epoch_us(${partitionValueSql(value, type)}) AS us`))[0]!['us'];
    expect(await epoch('2021-09-08 11:11:11', 'timestamp')).toBe('1631099471000000');
    expect(await epoch('2020-01-01 08:09:10.001', 'timestamp')).toBe('1577866150001000');
    expect(await epoch('2024-01-01T10:00:00.000000Z', 'timestamp')).toBe('1704103200000000');
    expect(await epoch('2024-01-01T12:00:00+02:00', 'timestamp')).toBe('1704103200000000');
    expect(await epoch('1969-01-01 00:00:00', 'timestamp')).toBe('-31536000000000');
    expect(await epoch('2021-11-18 02:30:00.123456', 'timestamp_ntz')).toBe('1637202600123456');
    expect(await evaluate('2021-09-08 11:11:11', 'timestamp')).toEqual([
      'TIMESTAMP WITH TIME ZONE',
      '2021-09-08 11:11:11+00',
    ]);
    expect((await evaluate('2021-11-18 02:30:00', 'timestamp_ntz'))[0]).toBe('TIMESTAMP');
  });

  it('a malformed value is a DeltaLogError naming value and column', () => {
    const cases: Array<[string, string]> = [
      ['1.5', 'integer'],
      ['yes', 'boolean'],
      ['2021/09/08', 'date'],
      ['12:00', 'timestamp'],
      ['2021-11-18 02:30:00Z', 'timestamp_ntz'],
      ['1e', 'double'],
      ["1'; DROP TABLE x; --", 'long'],
    ];
    for (const [value, type] of cases) {
      expect(() => partitionValueSql(value, type, 'col_x'), `${value} as ${type}`).toThrow(
        new RegExp(`partition value .* of column col_x is not a valid ${type}`),
      );
    }
  });
});

describe('partitionValueStringSql, evaluated by DuckDB', () => {
  let session: DuckSession;
  beforeAll(async () => {
    session = await DuckSession.open({ threads: 1 });
  });
  afterAll(() => session.close());

  const value = async (expr: string, type: string): Promise<unknown> =>
    (await session.one(
      `SELECT ${partitionValueStringSql('x', type)} AS v FROM (SELECT ${expr} AS x)`,
    ))!['v'];

  const cases: [string, string, string | null][] = [
    ["'a/b'", 'string', 'a/b'],
    ["''", 'string', null],
    ["'null'", 'string', 'null'],
    ['NULL::VARCHAR', 'string', null],
    ['-5::TINYINT', 'byte', '-5'],
    ['9223372036854775807::BIGINT', 'long', '9223372036854775807'],
    ['234::DECIMAL(12,5)', 'decimal(12,5)', '234.00000'],
    ['-0.5::DECIMAL(3,2)', 'decimal(3,2)', '-0.50'],
    ['1.0::DOUBLE', 'double', '1.0'],
    ['0.1::FLOAT', 'float', '0.1'],
    ["'nan'::DOUBLE", 'double', 'NaN'],
    ["'inf'::DOUBLE", 'double', 'Infinity'],
    ["'-inf'::FLOAT", 'float', '-Infinity'],
    ['true', 'boolean', 'true'],
    ['false', 'boolean', 'false'],
    ["DATE '2020-02-29'", 'date', '2020-02-29'],
    ["TIMESTAMPTZ '2021-09-08 11:11:11+00'", 'timestamp', '2021-09-08T11:11:11.000000Z'],
    ["TIMESTAMPTZ '2021-09-08 13:11:11.123456+02'", 'timestamp', '2021-09-08T11:11:11.123456Z'],
    ["TIMESTAMP '2021-09-08 11:11:11.5'", 'timestamp_ntz', '2021-09-08 11:11:11.500000'],
    ['NULL::DATE', 'date', null],
  ];
  for (const [expr, type, expected] of cases) {
    it(`${type} ${expr} -> ${JSON.stringify(expected)}`, async () => {
      expect(await value(expr, type)).toBe(expected);
    });
  }

  it('timestamps are written in UTC whatever the session time zone', async () => {
    await session.run(`SET TimeZone = 'Asia/Tokyo'`);
    try {
      expect(await value("TIMESTAMPTZ '2021-09-08 11:11:11+00'", 'timestamp')).toBe(
        '2021-09-08T11:11:11.000000Z',
      );
    } finally {
      await session.run(`SET TimeZone = 'UTC'`);
    }
  });

  it('refuses binary and nested partition columns, naming the column', () => {
    expect(() => partitionValueStringSql('x', 'binary', 'blob_col')).toThrow(/blob_col/);
    expect(() =>
      partitionValueStringSql(
        'x',
        { type: 'array', elementType: 'long', containsNull: true },
        'arr',
      ),
    ).toThrow(SchemaError);
  });
});
