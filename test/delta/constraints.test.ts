/** The rules a table's metadata sets for every written row: CHECK constraints, invariants, NOT NULL. */
import { describe, expect, it } from 'vitest';
import { describeConstraint, tableConstraints } from '../../src/delta/constraints.js';
import type { StructType } from '../../src/delta/schema.js';
import { DeltaLogError } from '../../src/errors.js';

const field = (
  name: string,
  type: StructType['fields'][number]['type'],
  extra: Partial<StructType['fields'][number]> = {},
) => ({
  name,
  type,
  nullable: true,
  metadata: {},
  ...extra,
});

const schema: StructType = {
  type: 'struct',
  fields: [
    field('id', 'long', { nullable: false }),
    field('v', 'long', {
      metadata: { 'delta.invariants': '{"expression":{"expression":"v > 0"}}' },
    }),
    field('s', {
      type: 'struct',
      fields: [field('a', 'string', { nullable: false }), field('b', 'string')],
    }),
    field('tags', { type: 'array', elementType: 'string', containsNull: false }),
    field('attrs', {
      type: 'map',
      keyType: 'string',
      valueType: 'string',
      valueContainsNull: false,
    }),
    field('loose', {
      type: 'array',
      elementType: { type: 'struct', fields: [field('x', 'long', { nullable: false })] },
      containsNull: true,
    }),
  ],
};

describe('tableConstraints', () => {
  it('lists CHECK constraints by name, then invariants and NOT NULLs in schema order', () => {
    const rules = tableConstraints(
      schema,
      {
        configuration: {
          'delta.constraints.zeta': 'id < 9',
          'delta.constraints.alpha': 'id > 0',
          other: 'x',
        },
      },
      'u',
    );
    expect(rules.map(describeConstraint)).toEqual([
      'CHECK constraint alpha',
      'CHECK constraint zeta',
      'NOT NULL column id',
      'invariant on column v',
      'NOT NULL column s.a',
      'NOT NULL elements of column tags',
      'NOT NULL values of column attrs',
    ]);
    expect(rules[0]).toEqual({ kind: 'check', name: 'alpha', expression: 'id > 0' });
    expect(rules[3]).toEqual({ kind: 'invariant', column: ['v'], expression: 'v > 0' });
  });

  it('does not look inside arrays and maps for NOT NULL fields (as Spark)', () => {
    expect(
      tableConstraints(schema, { configuration: {} }, 'u').some(
        (c) => 'column' in c && c.column[0] === 'loose',
      ),
    ).toBe(false);
  });

  it('a malformed delta.invariants is a DeltaLogError naming the column', () => {
    const bad: StructType = {
      type: 'struct',
      fields: [field('v', 'long', { metadata: { 'delta.invariants': '{"expr":1}' } })],
    };
    expect(() => tableConstraints(bad, { configuration: {} }, 'u')).toThrow(DeltaLogError);
    expect(() => tableConstraints(bad, { configuration: {} }, 'u')).toThrow(
      /column v has a delta.invariants value/,
    );
  });
});
