/**
 * Log paths decode exactly once; partition values become typed literals (evaluated by DuckDB).
 */
import { describe, expect, it } from 'vitest';
import { DeltaLogError } from '../../src/errors.js';
import { decodeLogPath } from '../../src/delta/partition-decode.js';

describe('decodeLogPath', () => {
  it('decodes exactly once and keeps +', () => {
    expect(decodeLogPath('_2=bar+%252521/part-0.parquet')).toBe('_2=bar+%2521/part-0.parquet');
    expect(decodeLogPath('as_timestamp=2021-09-08%2011%253A11%253A11/p.parquet')).toBe(
      'as_timestamp=2021-09-08 11%3A11%3A11/p.parquet',
    );
    expect(decodeLogPath('a%20b/%C3%A9.parquet')).toBe('a b/é.parquet');
    expect(decodeLogPath('plain.parquet')).toBe('plain.parquet');
  });

  it('accepts absolute URIs inside the table root, in encoded or Hadoop form', () => {
    expect(decodeLogPath('file:///data/my%20table/x=1/p.parquet', 'file:///data/my%20table/')).toBe(
      'x=1/p.parquet',
    );
    expect(decodeLogPath('file:/data/t/p.parquet', 'file:///data/t/')).toBe('p.parquet');
    expect(decodeLogPath('s3://bucket/t/a%2520b.parquet', 's3://bucket/t')).toBe('a%20b.parquet');
  });

  it('refuses absolute URIs elsewhere, bad escapes and keys leaving the root', () => {
    expect(() => decodeLogPath('s3://other/t/p.parquet', 's3://bucket/t/')).toThrow(
      /absolute URI outside the table root/,
    );
    expect(() => decodeLogPath('s3://bucket/t/p.parquet')).toThrow(DeltaLogError);
    expect(() => decodeLogPath('bad%zz.parquet')).toThrow(/not valid percent-encoding/);
    for (const path of ['../x.parquet', '%2E%2E/x.parquet', '/etc/passwd', 'a//b.parquet', '']) {
      expect(() => decodeLogPath(path), path).toThrow(DeltaLogError);
    }
  });
});
