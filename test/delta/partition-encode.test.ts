import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  encodeLogPath,
  escapePartitionName,
  hivePartitionFolder,
} from '../../src/delta/partition-encode.js';
import { SchemaError } from '../../src/errors.js';
import { sharedTablesDir } from '../helpers/shared-tables.js';

describe('delta-notes §5 examples, exactly', () => {
  it('timestamp 2021-09-08 11:11:11: folder escapes ":", log path encodes the folder again', () => {
    const folder = hivePartitionFolder(['as_timestamp'], { as_timestamp: '2021-09-08 11:11:11' });
    expect(folder).toBe('as_timestamp=2021-09-08 11%3A11%3A11');
    expect(encodeLogPath(`${folder}/part-00000.parquet`)).toBe(
      'as_timestamp=2021-09-08%2011%253A11%253A11/part-00000.parquet',
    );
  });

  it('bar+%21: "+" is kept, "%" escaped in the folder and again in the log', () => {
    const folder = hivePartitionFolder(['_2'], { _2: 'bar+%21' });
    expect(folder).toBe('_2=bar+%2521');
    expect(encodeLogPath(folder)).toBe('_2=bar+%252521');
  });
});

describe('hivePartitionFolder', () => {
  it('escapes Spark’s set with upper-case hex and keeps space, "+" and non-ASCII', () => {
    const values = { p: 'a/b x=y 100% : é€ "q" #1 ?*\\{[]}^\'' };
    expect(hivePartitionFolder(['p'], values)).toBe(
      'p=a%2Fb x%3Dy 100%25 %3A é€ %22q%22 %231 %3F%2A%5C%7B%5B%5D}%5E%27',
    );
  });

  it('escapes control characters and DEL', () => {
    expect(escapePartitionName('a\u0001b\u001fc\u007fd\te')).toBe('a%01b%1Fc%7Fd%09e');
  });

  it('nests columns in partitionColumns order and escapes the column names too', () => {
    expect(hivePartitionFolder(['year', 'a=b'], { 'a=b': 'x', year: '2024' })).toBe(
      'year=2024/a%3Db=x',
    );
  });

  it('writes null and the empty string (which Delta reads as null) as __HIVE_DEFAULT_PARTITION__', () => {
    expect(hivePartitionFolder(['a', 'b'], { a: null, b: '' })).toBe(
      'a=__HIVE_DEFAULT_PARTITION__/b=__HIVE_DEFAULT_PARTITION__',
    );
  });

  it('keeps the literal string "null" as a value', () => {
    expect(hivePartitionFolder(['a'], { a: 'null' })).toBe('a=null');
  });

  it('is empty for an unpartitioned table', () => {
    expect(hivePartitionFolder([], {})).toBe('');
  });
});

describe('encodeLogPath', () => {
  const tricky = [
    'p=a%2Fb/part-0.parquet',
    'p=100%25 off/x.parquet',
    'p=#hash?q/x.parquet',
    'p=é€😀/x.parquet',
    'p=plus+sign/x.parquet',
    'p=%2525/x.parquet',
    'a=1/b=2/c=__HIVE_DEFAULT_PARTITION__/x.parquet',
    'p=tab\there/x.parquet',
    'p=x%3Ay/x.parquet',
    'p=quote\'s "dq"/x.parquet',
    'p=[br]{ce}^`|<>/x.parquet',
  ];
  for (const p of tricky) {
    it(`one decodeURIComponent gives back ${JSON.stringify(p)}`, () => {
      expect(decodeURIComponent(encodeLogPath(p))).toBe(p);
    });
  }

  it('encodes %, space, #, ?, : and non-ASCII as UTF-8; keeps / = +', () => {
    expect(encodeLogPath('k=a b#c?d%e:f/é+g')).toBe('k=a%20b%23c%3Fd%25e%3Af/%C3%A9+g');
  });

  it('refuses a lone surrogate, which has no UTF-8 form', () => {
    expect(() => encodeLogPath('p=\ud800/x')).toThrow(SchemaError);
  });
});

/** Spark-written test tables whose folders follow from their partitionValues (delta-tables README). */
const SPARK_TABLES = [
  'partition-all-types-nulls',
  'partition-escaped-chars',
  'decimal-partitioned',
  'timestamp-ntz',
  'partition-timestamp-int96',
];
const TABLES_DIR = sharedTablesDir();

interface LogLine {
  add?: { path: string; partitionValues: Record<string, string | null> };
  metaData?: { partitionColumns: string[] };
}

describe('folders and log paths match what Spark wrote for the same partition values', () => {
  for (const table of SPARK_TABLES) {
    it(table, () => {
      const logDir = path.join(TABLES_DIR, table, '_delta_log');
      const actions = readdirSync(logDir)
        .filter((f) => /^\d{20}\.json$/.test(f))
        .flatMap((f) =>
          readFileSync(path.join(logDir, f), 'utf8')
            .split('\n')
            .filter((l) => l.trim() !== ''),
        )
        .map((l) => JSON.parse(l) as LogLine);
      const columns = actions.find((a) => a.metaData)!.metaData!.partitionColumns;
      const adds = actions.flatMap((a) => (a.add ? [a.add] : []));
      expect(adds.length).toBeGreaterThan(0);
      for (const add of adds) {
        const logFolder = add.path.split('/').slice(0, -1).join('/');
        expect(encodeLogPath(hivePartitionFolder(columns, add.partitionValues))).toBe(logFolder);
      }
    });
  }
});
