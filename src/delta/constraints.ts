/**
 * The rules every row a writer stores must satisfy (PROTOCOL.md "Column Invariants", "CHECK
 * Constraints"; nullability from the schema), read from a table's metadata. Pure: the engine
 * translates and evaluates them (engine/merge/constraints.ts).
 *
 * - CHECK constraints: configuration `delta.constraints.<name>` = a Spark SQL boolean expression.
 * - Column invariants: field metadata `delta.invariants` = `{"expression":{"expression":"…"}}`.
 * - NOT NULL: `nullable: false` on a field reached through structs (a NULL parent struct counts as
 *   NULL, as in Spark), and `containsNull` / `valueContainsNull: false` on such an array or map.
 *   Fields inside arrays and maps are not checked, as Spark does not check them.
 *
 * A row passes only when every expression is true: false and NULL both violate (Spark's rule,
 * stricter than SQL's CHECK). They are enforced whatever the protocol lists: a stray property
 * without its feature can only make tidemark stricter.
 */
import { DeltaLogError } from '../errors.js';
import type { Metadata } from './actions.js';
import type { DataType, StructType } from './schema.js';

/** One rule. */
export type TableConstraint =
  | {
      kind: 'check';
      /** The constraint's name as configured (`delta.constraints.<name>`). */
      name: string;
      /** Spark SQL boolean expression over the table's columns. */
      expression: string;
    }
  | {
      kind: 'invariant';
      /** Path of the field that carries it. */
      column: string[];
      expression: string;
    }
  | {
      kind: 'notNull';
      column: string[];
      /** 'elements' / 'values': the array's elements or the map's values must not be NULL. */
      within?: 'elements' | 'values';
    };

const CONSTRAINT_PREFIX = 'delta.constraints.';

/** Every rule of the table: CHECK constraints (by name), then invariants and NOT NULLs in schema order. */
export function tableConstraints(
  schema: StructType,
  metadata: Pick<Metadata, 'configuration'>,
  uri: string,
): TableConstraint[] {
  const checks = Object.entries(metadata.configuration ?? {})
    .filter(([key]) => key.toLowerCase().startsWith(CONSTRAINT_PREFIX))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, expression]): TableConstraint => ({
      kind: 'check',
      name: key.slice(CONSTRAINT_PREFIX.length),
      expression,
    }));
  return [...checks, ...fieldConstraints(schema, [], uri)];
}

/** How messages name a rule: `CHECK constraint positive`, `invariant on column a.b`, `NOT NULL column a`. */
export function describeConstraint(c: TableConstraint): string {
  if (c.kind === 'check') return `CHECK constraint ${c.name}`;
  const path = c.column.join('.');
  if (c.kind === 'invariant') return `invariant on column ${path}`;
  return c.within
    ? `NOT NULL ${c.within === 'elements' ? 'elements of' : 'values of'} column ${path}`
    : `NOT NULL column ${path}`;
}

/** The table feature a rule belongs to (what a refusal names). */
export function constraintFeature(c: TableConstraint): 'checkConstraints' | 'invariants' {
  return c.kind === 'check' ? 'checkConstraints' : 'invariants';
}

function fieldConstraints(struct: StructType, parent: string[], uri: string): TableConstraint[] {
  return struct.fields.flatMap((field) => {
    const column = [...parent, field.name];
    const found: TableConstraint[] = [];
    if (field.nullable === false) found.push({ kind: 'notNull', column });
    const invariant = invariantExpression(field.metadata?.['delta.invariants'], column, uri);
    if (invariant !== null) found.push({ kind: 'invariant', column, expression: invariant });
    return [...found, ...nestedConstraints(field.type, column, uri)];
  });
}

/** Rules below a field: its struct's fields, and the NULL-freedom of its array elements or map values. */
function nestedConstraints(type: DataType, column: string[], uri: string): TableConstraint[] {
  if (typeof type === 'string') return [];
  if (type.type === 'struct') return fieldConstraints(type, column, uri);
  if (type.type === 'array')
    return type.containsNull === false ? [{ kind: 'notNull', column, within: 'elements' }] : [];
  return type.valueContainsNull === false ? [{ kind: 'notNull', column, within: 'values' }] : [];
}

/** The expression of a `delta.invariants` value (JSON text, or already parsed); null when there is none. */
function invariantExpression(value: unknown, column: string[], uri: string): string | null {
  if (value === undefined || value === null) return null;
  try {
    const parsed = (typeof value === 'string' ? JSON.parse(value) : value) as {
      expression?: { expression?: unknown };
    };
    const expression = parsed?.expression?.expression;
    if (typeof expression === 'string' && expression.trim() !== '') return expression;
  } catch {
    // reported below
  }
  throw new DeltaLogError(
    `[delta] table ${uri}: column ${column.join('.')} has a delta.invariants value that is not {"expression":{"expression":"…"}}: ` +
      JSON.stringify(value).slice(0, 200),
    { context: { uri, column: column.join('.') } },
  );
}
