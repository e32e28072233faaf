/**
 * The pure pieces of the MERGE plan: the "not older" rule (evaluated by DuckDB over every NULL
 * combination), column planning, and typed stats bounds.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DuckSession } from '../../../src/engine/duckdb.js';
import { evolveSchema, newColumns, planColumns } from '../../../src/engine/merge/columns.js';
import { matchCondition, notOlder } from '../../../src/engine/merge/plan.js';
import { boundSql } from '../../../src/engine/merge/prune.js';
import { SchemaError } from '../../../src/errors.js';
import type { StructType } from '../../../src/delta/schema.js';

let session: DuckSession;
beforeAll(async () => {
  session = await DuckSession.open({ threads: 1 });
});
afterAll(() => session.close());

describe('notOlder', () => {
  it.each([
    [2, 1, true],
    [1, 1, true],
    [1, 2, false],
    [1, null, true],
    [null, 1, false],
    [null, null, true],
  ])('incoming %s vs stored %s -> %s', async (incoming, stored, expected) => {
    const lit = (v: number | null) => (v === null ? 'NULL::INTEGER' : String(v));
    const row = await session.one(`SELECT ${notOlder(lit(incoming), lit(stored))} AS r`);
    expect(row!['r']).toBe(expected);
  });
});

describe('matchCondition', () => {
  it('compares the key columns alone with =, quoting names', () => {
    expect(matchCondition({ keys: ['id', 'a"b'], orderBy: 'v' }, 't', 'b')).toBe(
      't."id" = b."id" AND t."a""b" = b."a""b"',
    );
  });
});

describe('planColumns', () => {
  const schema: StructType = {
    type: 'struct',
    fields: [
      { name: 'Id', type: 'long', nullable: true, metadata: {} },
      { name: 'at', type: 'timestamp', nullable: true, metadata: {} },
      { name: 'note', type: 'string', nullable: true, metadata: {} },
    ],
  };

  it('matches names ignoring case, keeps the table spelling and fills missing columns with NULL', () => {
    const plan = planColumns(
      [
        { name: 'id', type: 'INTEGER' },
        { name: 'AT', type: 'TIMESTAMP' },
        { name: '_lineage', type: 'VARCHAR' },
      ],
      schema,
      ['_lineage'],
      'file:///t/',
    );
    expect(plan.mappings.map((m) => [m.target, m.source, m.duckType])).toEqual([
      ['Id', 'id', 'BIGINT'],
      ['at', 'AT', 'TIMESTAMP WITH TIME ZONE'],
      ['note', null, 'VARCHAR'],
    ]);
    expect(plan.ignored).toEqual(['_lineage']);
  });

  it('names every batch column the table lacks', () => {
    const plan = () =>
      planColumns(
        [
          { name: 'x', type: 'INTEGER' },
          { name: 'y', type: 'INTEGER' },
        ],
        schema,
        [],
        'file:///t/',
      );
    expect(plan).toThrow(SchemaError);
    expect(plan).toThrow(
      `[merge] batch columns not in table file:///t/: "x", "y" (schemaEvolution is 'fail')`,
    );
  });

  it('finds new batch columns ignoring case and internal columns, and appends them as nullable fields', () => {
    const withMeta: StructType = {
      ...schema,
      fields: schema.fields.map((f, i) =>
        i === 0 ? { ...f, metadata: { comment: 'the id' } } : f,
      ),
    };
    const batch = [
      { name: 'ID', type: 'BIGINT' },
      { name: 'colour', type: 'VARCHAR' },
      { name: '_row', type: 'BIGINT' },
      { name: 'price', type: 'DECIMAL(12,2)' },
    ];
    const extra = newColumns(batch, withMeta, ['_row']);
    expect(extra.map((c) => c.name)).toEqual(['colour', 'price']);
    const evolved = evolveSchema(withMeta, extra);
    expect(evolved.fields.slice(0, 3)).toEqual(withMeta.fields);
    expect(evolved.fields.slice(3)).toEqual([
      { name: 'colour', type: 'string', nullable: true, metadata: {} },
      { name: 'price', type: 'decimal(12,2)', nullable: true, metadata: {} },
    ]);
  });
});

describe('boundSql', () => {
  it('types the bound with DuckDB and widens a timestamp max by 1 ms', async () => {
    const row = await session.one(
      `SELECT ${boundSql('2024-05-01T00:00:00.000Z', 'timestamp', 'max')} AS tmax, ${boundSql('2024-05-01T00:00:00.000-08:00', 'timestamp', 'min')} AS tmin,
              ${boundSql(12, 'long', 'min')} AS n, ${boundSql('12345678901234567', 'long', 'max')} AS big, ${boundSql(undefined, 'long', 'max')} AS missing,
              ${boundSql('not a date', 'date', 'min')} AS bad`,
    );
    expect(row).toMatchObject({ n: 12n, big: 12345678901234567n, missing: null, bad: null });
    expect((row!['tmax'] as Date).toISOString()).toBe('2024-05-01T00:00:00.001Z');
    expect((row!['tmin'] as Date).toISOString()).toBe('2024-05-01T08:00:00.000Z');
  });
});
