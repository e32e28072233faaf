/**
 * Writing data files of a column-mapped table (PROTOCOL.md "Writer Requirements for Column
 * Mapping"): columns and nested struct fields named by their physical names, every struct field
 * given its column mapping id as Parquet field id (in both modes, as Spark does; list and map
 * levels get none), and the files placed in random two-character folders as current Spark
 * places them (partition folders named by logical names would leak display names into paths).
 */
import { randomInt } from 'node:crypto';
import {
  containsStruct,
  fieldIdOf,
  physicalName,
  type ColumnMappingMode,
} from '../delta/column-mapping.js';
import type { DataType, StructField } from '../delta/schema.js';
import { ident, str } from './sql.js';

/**
 * SQL turning a value of the logical type (struct fields under their display names, as the
 * writer casts it) into the value the file holds: struct fields renamed to physical names at
 * every depth. The expression itself when nothing needs renaming.
 */
export function physicalValueSql(
  expr: string,
  type: DataType,
  mode: ColumnMappingMode,
  depth = 0,
): string {
  if (mode === 'none' || typeof type === 'string' || !containsStruct(type)) return expr;
  const v = `__tm_w${depth}`;
  if (type.type === 'array')
    return `list_transform(${expr}, lambda ${v}: ${physicalValueSql(v, type.elementType, mode, depth + 1)})`;
  if (type.type === 'map') {
    const key = physicalValueSql(`struct_extract(${v}, 'key')`, type.keyType, mode, depth + 1);
    const value = physicalValueSql(
      `struct_extract(${v}, 'value')`,
      type.valueType,
      mode,
      depth + 1,
    );
    return `map_from_entries(list_transform(map_entries(${expr}), lambda ${v}: {'key': ${key}, 'value': ${value}}))`;
  }
  const fields = type.fields.map(
    (f) =>
      `${str(physicalName(f, mode))}: ${physicalValueSql(`struct_extract(${expr}, ${str(f.name)})`, f.type, mode, depth)}`,
  );
  // A struct literal of a NULL struct would be a struct of NULLs.
  return `CASE WHEN ${expr} IS NULL THEN NULL ELSE {${fields.join(', ')}} END`;
}

/** COPY's `FIELD_IDS {…}` option for the data columns (logical fields), or null when no field has an id. */
export function fieldIdsOption(
  fields: readonly StructField[],
  mode: ColumnMappingMode,
): string | null {
  if (mode === 'none') return null;
  const entries = fields.flatMap((f) => entry(physicalName(f, mode), fieldIdOf(f), f.type, mode));
  return entries.length > 0 ? `FIELD_IDS {${entries.join(', ')}}` : null;
}

/** `"name": id` or `"name": {__duckdb_field_id: id, <nested>}`; nothing when neither exists. */
function entry(
  name: string,
  id: number | undefined,
  type: DataType,
  mode: ColumnMappingMode,
): string[] {
  const nested = nestedEntries(type, mode);
  if (nested.length === 0) return id === undefined ? [] : [`${ident(name)}: ${id}`];
  const own = id === undefined ? [] : [`__duckdb_field_id: ${id}`];
  return [`${ident(name)}: {${[...own, ...nested].join(', ')}}`];
}

function nestedEntries(type: DataType, mode: ColumnMappingMode): string[] {
  if (typeof type === 'string') return [];
  if (type.type === 'struct')
    return type.fields.flatMap((f) => entry(physicalName(f, mode), fieldIdOf(f), f.type, mode));
  if (type.type === 'array') return entry('element', undefined, type.elementType, mode);
  return [
    ...entry('key', undefined, type.keyType, mode),
    ...entry('value', undefined, type.valueType, mode),
  ];
}

const PREFIX_CHARS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** A random two-character folder for a data file of a column-mapped table (Spark's layout). */
export function randomPrefixFolder(): string {
  return Array.from({ length: 2 }, () => PREFIX_CHARS[randomInt(PREFIX_CHARS.length)]).join('');
}
