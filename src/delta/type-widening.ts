/**
 * Type widening (PROTOCOL.md "Type Widening"): a column's type was widened (integer → long,
 * float → double, date → timestamp_ntz, wider decimals) without rewriting the files, so older
 * files hold the narrower type. Readers cast every file to the current type (the scan always
 * does); writers write the current type and keep `delta.typeChanges` when they re-emit metaData.
 * This module decides whether every recorded change is one tidemark reads correctly.
 */
import type { DataType, StructField, StructType } from './schema.js';

const TYPE_CHANGES = 'delta.typeChanges';
const INTEGER_RANK: Readonly<Record<string, number>> = { byte: 1, short: 2, integer: 3, long: 4 };
/** Decimal digits an integer type needs (Spark: byte 3, short 5, int 10, long 20). */
const INTEGER_DIGITS: Readonly<Record<string, number>> = {
  byte: 3,
  short: 5,
  integer: 10,
  long: 20,
};
const DECIMAL = /^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$/;

/**
 * Why a recorded type change cannot be read, or null when every one is a widening the protocol
 * allows: integer → wider integer, float → double, byte/short/integer → double, date →
 * timestamp_ntz, decimal → decimal with no fewer integer or fraction digits, integer → decimal
 * with room for every value. A widened partition column must still parse its old values, so
 * only integer widenings are accepted there.
 */
export function typeWideningProblem(
  schema: StructType,
  partitionColumns: readonly string[],
): string | null {
  const partitions = new Set(partitionColumns.map((c) => c.toLowerCase()));
  for (const { field, path } of fieldsWithChanges(schema)) {
    const changes = field.metadata[TYPE_CHANGES];
    if (!Array.isArray(changes)) return `column '${path}' has a malformed ${TYPE_CHANGES}`;
    for (const change of changes as unknown[]) {
      const { fromType, toType } = (change ?? {}) as { fromType?: unknown; toType?: unknown };
      if (
        typeof fromType !== 'string' ||
        typeof toType !== 'string' ||
        !isWidening(fromType, toType)
      ) {
        return `column '${path}' changed type from ${String(fromType)} to ${String(toType)}, which tidemark cannot read`;
      }
      if (partitions.has(path.toLowerCase()) && !(fromType in INTEGER_RANK)) {
        return `partition column '${path}' changed type from ${fromType} to ${toType}`;
      }
    }
  }
  return null;
}

/** True when a value of type `from` converts exactly to type `to` (a widening). */
export function isWidening(from: string, to: string): boolean {
  const fromRank = INTEGER_RANK[from];
  if (fromRank !== undefined && INTEGER_RANK[to] !== undefined) return INTEGER_RANK[to]! > fromRank;
  if (from === 'float' && to === 'double') return true;
  if (to === 'double') return fromRank !== undefined && from !== 'long';
  if (from === 'date' && to === 'timestamp_ntz') return true;
  const target = DECIMAL.exec(to);
  if (!target) return false;
  const [p, s] = [Number(target[1]), Number(target[2])];
  if (fromRank !== undefined) return p - s >= INTEGER_DIGITS[from]!;
  const source = DECIMAL.exec(from);
  if (!source) return false;
  const [fp, fs] = [Number(source[1]), Number(source[2])];
  return s >= fs && p - s >= fp - fs;
}

/** Fields (at any depth) whose metadata records type changes, with their dotted logical path. */
function fieldsWithChanges(
  type: DataType,
  prefix = '',
): Array<{ field: StructField; path: string }> {
  if (typeof type === 'string') return [];
  if (type.type === 'array') return fieldsWithChanges(type.elementType, prefix);
  if (type.type === 'map')
    return [
      ...fieldsWithChanges(type.keyType, prefix),
      ...fieldsWithChanges(type.valueType, prefix),
    ];
  return type.fields.flatMap((field) => [
    ...(field.metadata && TYPE_CHANGES in field.metadata
      ? [{ field, path: prefix + field.name }]
      : []),
    ...fieldsWithChanges(field.type, `${prefix}${field.name}.`),
  ]);
}
