/**
 * Log paths decode exactly once; partition values become typed literals (evaluated by DuckDB).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeltaLogError } from '../../src/errors.js';
import { decodeLogPath, partitionValueSql } from '../../src/delta/partition-decode.js';
import { DuckSession } from '../../src/engine/duckdb.js';

describe('decodeLogPath', () => {
  it('decodes exactly once and keeps +', () => {
    expect(decodeLogPath('_2=bar+%252521/part-0.parquet')).toBe('_2=bar+%2521/part-0.parquet');
    expect(decodeLogPath('as_timestamp=2021-09-08%2011%253A11%253A11/p.parquet')).toBe('as_timestamp=2021-09-08 11%3A11%3A11/p.parquet');
    expect(decodeLogPath('a%20b/%C3%A9.parquet')).toBe('a b/é.parquet');
    expect(decodeLogPath('plain.parquet')).toBe('plain.parquet');
  });

  it('accepts absolute URIs inside the table root, in encoded or Hadoop form', () => {
    expect(decodeLogPath('file:///data/my%20table/x=1/p.parquet', 'file:///data/my%20table/')).toBe('x=1/p.parquet');
    expect(decodeLogPath('file:/data/t/p.parquet', 'file:///data/t/')).toBe('p.parquet');
    expect(decodeLogPath('s3://bucket/t/a%2520b.parquet', 's3://bucket/t')).toBe('a%20b.parquet');
  });

  it('refuses absolute URIs elsewhere, bad escapes and keys leaving the root', () => {
    expect(() => decodeLogPath('s3://other/t/p.parquet', 's3://bucket/t/')).toThrow(/absolute URI outside the table root/);
    expect(() => decodeLogPath('s3://bucket/t/p.parquet')).toThrow(DeltaLogError);
    expect(() => decodeLogPath('bad%zz.parquet')).toThrow(/not valid percent-encoding/);
    for (const path of ['../x.parquet', '%2E%2E/x.parquet', '/etc/passwd', 'a//b.parquet', '']) {
      expect(() => decodeLogPath(path), path).toThrow(DeltaLogError);
    }
  });
});

describe('partitionValueSql', () => {
  let session: DuckSession;
  beforeAll(async () => {
    session = await DuckSession.open({ threads: 1 });
  });
  afterAll(() => session.close());

  /** The literal evaluated by DuckDB: its type and its value as text. */
  async function evaluate(value: string | null, type: string): Promise<[string, string | null]> {
    const sql = partitionValueSql(value, type, 'c');
    const row = (await session.allJson(`SELECT typeof(${sql}) AS t, CAST(${sql} AS VARCHAR) AS v`))[0]!;
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
    expect(await evaluate('9223372036854775807', 'long')).toEqual(['BIGINT', '9223372036854775807']);
    expect(await evaluate('1.0', 'float')).toEqual(['FLOAT', '1.0']);
    expect(await evaluate('NaN', 'double')).toEqual(['DOUBLE', 'nan']);
    expect(await evaluate('-Infinity', 'double')).toEqual(['DOUBLE', '-inf']);
    expect(await evaluate('true', 'boolean')).toEqual(['BOOLEAN', 'true']);
    expect(await evaluate('2021-09-08', 'date')).toEqual(['DATE', '2021-09-08']);
    expect(await evaluate('234.00000', 'decimal(12,5)')).toEqual(['DECIMAL(12,5)', '234.00000']);
    expect(await evaluate('-2342342.23423', 'decimal(12, 5)')).toEqual(['DECIMAL(12,5)', '-2342342.23423']);
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
    expect(await evaluate('2021-09-08 11:11:11', 'timestamp')).toEqual(['TIMESTAMP WITH TIME ZONE', '2021-09-08 11:11:11+00']);
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
