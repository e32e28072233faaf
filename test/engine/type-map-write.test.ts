import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SchemaError } from '../../src/errors.js';
import { DuckSession } from '../../src/engine/duckdb.js';
import { ident } from '../../src/engine/sql.js';
import {
  castExprForDelta,
  castToDeltaSql,
  deltaTypeToDuckForWrite,
  duckSchemaToDelta,
  duckTypeToDelta,
} from '../../src/engine/type-map-write.js';

let session: DuckSession;
beforeAll(async () => {
  session = await DuckSession.open({ threads: 2 });
});
afterAll(() => session.close());

/** Column types exactly as DuckDB's DESCRIBE prints them for a table created from `ddl`. */
async function describeTypes(ddl: string): Promise<{ name: string; type: string }[]> {
  await session.run(`CREATE OR REPLACE TABLE t AS SELECT * FROM (${ddl})`);
  const rows = await session.all('DESCRIBE t');
  return rows.map((r) => ({ name: String(r['column_name']), type: String(r['column_type']) }));
}

describe('duckTypeToDelta: one DuckDB column of each type, as DESCRIBE prints it', () => {
  const cases: [string, unknown][] = [
    ['true', 'boolean'],
    ['1::TINYINT', 'byte'],
    ['1::SMALLINT', 'short'],
    ['1::INTEGER', 'integer'],
    ['1::BIGINT', 'long'],
    ['1::HUGEINT', 'decimal(38,0)'],
    ['1::UTINYINT', 'short'],
    ['1::USMALLINT', 'integer'],
    ['1::UINTEGER', 'long'],
    ['1::UBIGINT', 'decimal(20,0)'],
    ['1::FLOAT', 'float'],
    ['1::DOUBLE', 'double'],
    ['1::DECIMAL(10,2)', 'decimal(10,2)'],
    ['1::DECIMAL(38,10)', 'decimal(38,10)'],
    ["'x'", 'string'],
    ["'x'::ENUM('x', 'y''s')", 'string'],
    [`'{"a":1}'::JSON`, 'string'],
    ['uuid()', 'string'],
    ["'x'::BLOB", 'binary'],
    ["DATE '2020-01-01'", 'date'],
    ["TIMESTAMPTZ '2020-01-01 00:00:00+00'", 'timestamp'],
    ["TIMESTAMP '2020-01-01 00:00:00'", 'timestamp'],
    ["TIMESTAMP_NS '2020-01-01 00:00:00'", 'timestamp'],
    ["TIMESTAMP_MS '2020-01-01 00:00:00'", 'timestamp'],
    ["TIMESTAMP_S '2020-01-01 00:00:00'", 'timestamp'],
    ['[1, 2]::INTEGER[]', { type: 'array', elementType: 'integer', containsNull: true }],
    ['[1, 2]::INTEGER[2]', { type: 'array', elementType: 'integer', containsNull: true }],
    [
      "MAP {'k': [1.5::DECIMAL(4,1)]}",
      {
        type: 'map',
        keyType: 'string',
        valueType: { type: 'array', elementType: 'decimal(4,1)', containsNull: true },
        valueContainsNull: true,
      },
    ],
    [
      `{'a': 1::BIGINT, 'b c': [TIMESTAMP '2020-01-01'], 'd"e': {'x': true}}`,
      {
        type: 'struct',
        fields: [
          { name: 'a', type: 'long', nullable: true, metadata: {} },
          {
            name: 'b c',
            type: { type: 'array', elementType: 'timestamp', containsNull: true },
            nullable: true,
            metadata: {},
          },
          {
            name: 'd"e',
            type: {
              type: 'struct',
              fields: [{ name: 'x', type: 'boolean', nullable: true, metadata: {} }],
            },
            nullable: true,
            metadata: {},
          },
        ],
      },
    ],
  ];
  for (const [expr, expected] of cases) {
    it(`${expr} -> ${JSON.stringify(expected)}`, async () => {
      const [col] = await describeTypes(`SELECT ${expr} AS c`);
      expect(duckTypeToDelta(col!.type, 'c')).toEqual(expected);
    });
  }
});

describe('types without a Delta equivalent are a SchemaError naming the column', () => {
  const cases: [string, string][] = [
    ["TIME '10:00'", 'TIME'],
    ["'10:00:00+02'::TIMETZ", 'TIME WITH TIME ZONE'],
    ['INTERVAL 1 DAY', 'INTERVAL'],
    ["'0101'::BIT", 'BIT'],
    ['1::VARINT', 'BIGNUM'],
    ['union_value(k := 1)', 'UNION'],
  ];
  for (const [expr, typeName] of cases) {
    it(`${typeName}`, async () => {
      const cols = await describeTypes(`SELECT 1 AS ok, ${expr} AS "bad col"`);
      const err = captureError(() => duckSchemaToDelta(cols));
      expect(err).toBeInstanceOf(SchemaError);
      expect((err as SchemaError).context.column).toBe('bad col');
      expect((err as SchemaError).message).toContain('"bad col"');
      expect((err as SchemaError).message).toContain(typeName);
      // tidemark has no source query: the way out is a declaration.
      expect((err as SchemaError).message).toContain('declare the column string in source.columns');
    });
  }

  it('names the nested field path of a TIME inside a struct inside a list', async () => {
    const cols = await describeTypes(`SELECT [{'at': TIME '10:00'}] AS events`);
    const err = captureError(() => duckSchemaToDelta(cols)) as SchemaError;
    expect(err).toBeInstanceOf(SchemaError);
    expect(err.context.column).toBe('events.element.at');
  });
});

describe('duckSchemaToDelta', () => {
  it('makes every field nullable with empty metadata, in column order', async () => {
    const cols = await describeTypes(`SELECT 1::BIGINT AS id, 'x' AS name`);
    expect(duckSchemaToDelta(cols)).toEqual({
      type: 'struct',
      fields: [
        { name: 'id', type: 'long', nullable: true, metadata: {} },
        { name: 'name', type: 'string', nullable: true, metadata: {} },
      ],
    });
  });

  it('refuses column names that differ only in case, naming both', () => {
    const err = captureError(() =>
      duckSchemaToDelta([
        { name: 'Id', type: 'INTEGER' },
        { name: 'id', type: 'BIGINT' },
      ]),
    ) as SchemaError;
    expect(err).toBeInstanceOf(SchemaError);
    expect(err.message).toContain('"Id"');
    expect(err.message).toContain('"id"');
  });

  it('refuses struct field names that differ only in case', () => {
    expect(() =>
      duckSchemaToDelta([{ name: 's', type: 'STRUCT("A" INTEGER, "a" INTEGER)' }]),
    ).toThrow(SchemaError);
  });
});

describe('deltaTypeToDuckForWrite', () => {
  it('maps timestamp to TIMESTAMPTZ and timestamp_ntz to TIMESTAMP, recursively', () => {
    expect(deltaTypeToDuckForWrite('timestamp')).toBe('TIMESTAMP WITH TIME ZONE');
    expect(deltaTypeToDuckForWrite('timestamp_ntz')).toBe('TIMESTAMP');
    expect(deltaTypeToDuckForWrite('decimal(10, 2)')).toBe('DECIMAL(10,2)');
    expect(
      deltaTypeToDuckForWrite({
        type: 'map',
        keyType: 'string',
        valueType: {
          type: 'struct',
          fields: [{ name: 'a b', type: 'timestamp', nullable: true, metadata: {} }],
        },
        valueContainsNull: true,
      }),
    ).toBe('MAP(VARCHAR, STRUCT("a b" TIMESTAMP WITH TIME ZONE))');
  });

  it('refuses void and variant columns by name', () => {
    const err = captureError(() => deltaTypeToDuckForWrite('void', 'gone')) as SchemaError;
    expect(err).toBeInstanceOf(SchemaError);
    expect(err.context.column).toBe('gone');
  });
});

describe('castExprForDelta produces the physical type to write', () => {
  it('leaves native types alone', () => {
    expect(castExprForDelta('"x"', 'BIGINT')).toBe('"x"');
    expect(castExprForDelta('"x"', 'STRUCT(a INTEGER, "b c" VARCHAR[])')).toBe('"x"');
    expect(castExprForDelta('"x"', 'TIMESTAMP WITH TIME ZONE')).toBe('"x"');
  });

  it('reads a naive TIMESTAMP as UTC: the same wall-clock digits become the UTC instant', async () => {
    expect(castExprForDelta('"ts"', 'TIMESTAMP')).toBe(`timezone('UTC', "ts")`);
    await session.run(`SET TimeZone = 'America/New_York'`); // the cast must not depend on the session zone
    try {
      const row = await session.one(
        `SELECT epoch_us(${castExprForDelta(ident('ts'), 'TIMESTAMP')}) AS us FROM (SELECT TIMESTAMP '2021-09-08 11:11:11.123456' AS ts)`,
      );
      expect(row!['us']).toBe(1631099471123456n);
    } finally {
      await session.run(`SET TimeZone = 'UTC'`);
    }
  });

  it('converts every non-native type to the type its Delta type is written as', async () => {
    const cols = await describeTypes(
      `SELECT 12345678901234567890123456789::HUGEINT AS h, 200::UTINYINT AS ut, 18446744073709551615::UBIGINT AS ub,
              '6b1b2b86-8a1d-4c5b-9e48-9b8e4f2d6f10'::UUID AS u, 'y'::ENUM('x', 'y') AS e, '{"a": 1}'::JSON AS j,
              TIMESTAMP_NS '2020-01-01 00:00:00.123456789' AS tns, TIMESTAMP_MS '2020-01-01 00:00:00.123' AS tms,
              [1, 2]::INTEGER[2] AS arr, {'at': TIMESTAMP '2020-01-01 10:00:00', 'u': 1::UTINYINT} AS st`,
    );
    const select = cols
      .map((c) => `${castExprForDelta(ident(c.name), c.type, c.name)} AS ${ident(c.name)}`)
      .join(', ');
    await session.run(`CREATE OR REPLACE TABLE converted AS SELECT ${select} FROM t`);
    const written = await describeTypes('SELECT * FROM converted');
    expect(Object.fromEntries(written.map((c) => [c.name, c.type]))).toEqual({
      h: 'DECIMAL(38,0)',
      ut: 'SMALLINT',
      ub: 'DECIMAL(20,0)',
      u: 'VARCHAR',
      e: "ENUM('x', 'y')", // kept: Parquet gets an ENUM as UTF-8 strings (checked below)
      j: 'VARCHAR',
      tns: 'TIMESTAMP WITH TIME ZONE',
      tms: 'TIMESTAMP WITH TIME ZONE',
      arr: 'INTEGER[]',
      st: 'STRUCT("at" TIMESTAMP WITH TIME ZONE, u SMALLINT)',
    });
    const row = await session.one(
      `SELECT CAST(h AS VARCHAR) h, ut, CAST(ub AS VARCHAR) ub, u, e, j, epoch_us(tns) tns, epoch_us(st['at']) st_at FROM converted`,
    );
    expect(row).toEqual({
      h: '12345678901234567890123456789',
      ut: 200,
      ub: '18446744073709551615',
      u: '6b1b2b86-8a1d-4c5b-9e48-9b8e4f2d6f10',
      e: 'y',
      j: '{"a": 1}',
      tns: 1577836800123456n,
      st_at: 1577872800000000n,
    });
  });

  it('castToDeltaSql widens a source into a wider table column type', () => {
    expect(castToDeltaSql('"n"', 'INTEGER', 'long')).toBe('CAST("n" AS BIGINT)');
    expect(castToDeltaSql('"t"', 'TIMESTAMP_NS', 'timestamp')).toBe(
      `timezone('UTC', CAST("t" AS TIMESTAMP))`,
    );
  });
});

function captureError(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected an error');
}
