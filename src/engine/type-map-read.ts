/**
 * Delta schema types to DuckDB SQL types, for reading (docs/delta-protocol.md, Schema and types).
 * `timestamp` is a UTC instant (TIMESTAMPTZ); `timestamp_ntz` is a wall clock (TIMESTAMP).
 */
import { SchemaError } from '../errors.js';
import type { DataType } from '../delta/schema.js';
import { ident } from './sql.js';

const PRIMITIVES: Readonly<Record<string, string>> = {
  long: 'BIGINT',
  integer: 'INTEGER',
  short: 'SMALLINT',
  byte: 'TINYINT',
  float: 'FLOAT',
  double: 'DOUBLE',
  string: 'VARCHAR',
  binary: 'BLOB',
  boolean: 'BOOLEAN',
  date: 'DATE',
  timestamp: 'TIMESTAMPTZ',
  timestamp_ntz: 'TIMESTAMP',
  // `void` columns are never stored and always null: DuckDB's own NULL type.
  void: '"NULL"',
};

/** `decimal(p,s)`, also with spaces as some writers emit (`decimal(10, 2)`). */
const DECIMAL = /^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$/;

/**
 * The DuckDB type for a Delta type, recursively for array, map and struct.
 * Throws SchemaError for types tidemark cannot read (e.g. `variant`) or malformed ones.
 */
export function deltaTypeToDuck(type: DataType): string {
  if (typeof type === 'string') return primitiveToDuck(type);
  switch (type.type) {
    case 'array':
      return `${deltaTypeToDuck(type.elementType)}[]`;
    case 'map':
      return `MAP(${deltaTypeToDuck(type.keyType)}, ${deltaTypeToDuck(type.valueType)})`;
    case 'struct':
      if (type.fields.length === 0)
        throw new SchemaError('[delta] a struct type must have at least one field');
      return `STRUCT(${type.fields.map((f) => `${ident(f.name)} ${deltaTypeToDuck(f.type)}`).join(', ')})`;
    default:
      throw new SchemaError(`[delta] unknown schema type ${JSON.stringify(type)}`);
  }
}

function primitiveToDuck(type: string): string {
  const known = PRIMITIVES[type];
  if (known) return known;
  if (type === 'decimal') return 'DECIMAL(10,0)'; // Spark's default precision and scale
  const m = DECIMAL.exec(type);
  if (m) {
    const precision = Number(m[1]);
    const scale = Number(m[2]);
    if (precision < 1 || precision > 38 || scale > precision) {
      throw new SchemaError(
        `[delta] invalid decimal type ${type}: precision must be 1..38 and scale at most the precision`,
      );
    }
    return `DECIMAL(${precision},${scale})`;
  }
  throw new SchemaError(
    `[delta] the schema type ${JSON.stringify(type)} is not supported for reading`,
  );
}
