/**
 * Partition values in SQL, both ways: the typed literal a scan projects for a value from the log,
 * and the expression that formats a column's value as the log's partition-value string. The rules
 * for the strings themselves are the Delta layer's (delta/partition-decode.ts, docs/delta-protocol.md).
 */
import { normalizePartitionValue } from '../delta/partition-decode.js';
import type { DataType } from '../delta/schema.js';
import { SchemaError } from '../errors.js';
import { str } from './sql.js';
import { deltaTypeToDuck } from './type-map-read.js';

/** A typed SQL literal for a partition value from the log (see normalizePartitionValue). */
export function partitionValueSql(
  value: string | null,
  deltaType: DataType,
  column?: string,
): string {
  const duckType = deltaTypeToDuck(deltaType);
  const text = normalizePartitionValue(value, deltaType, column);
  if (text === null) return `CAST(NULL AS ${duckType})`;
  if (deltaType === 'binary') return `encode(${str(text)})`;
  return `CAST(${str(text)} AS ${duckType})`;
}

const INTEGER_TYPES = new Set(['byte', 'short', 'integer', 'long']);

/**
 * SQL giving the Delta partition-value string for a column already cast to the physical type
 * of `deltaType` (see castToDeltaSql). NULL stays NULL, and so would the empty string, which Delta
 * reads as null: MERGE and append refuse a row holding one first (merge/partition-strings.ts).
 * Forms: integers and decimals as DuckDB prints them (decimals with the full scale, `234.00000`);
 * floats as shortest round-trip text with Java's `NaN`/`Infinity`; `true`/`false`; dates
 * `yyyy-MM-dd`; timestamps ISO-8601 UTC `yyyy-MM-ddTHH:mm:ss.ffffffZ`; timestamp_ntz
 * `yyyy-MM-dd HH:mm:ss.ffffff`. Binary and nested types cannot be partition columns.
 */
export function partitionValueStringSql(
  columnSql: string,
  deltaType: DataType,
  column = '?',
): string {
  const x = columnSql;
  if (typeof deltaType === 'string') {
    if (deltaType === 'string') return `NULLIF(${x}, '')`;
    if (INTEGER_TYPES.has(deltaType) || deltaType === 'boolean' || /^decimal\(/.test(deltaType)) {
      return `CAST(${x} AS VARCHAR)`;
    }
    if (deltaType === 'float' || deltaType === 'double') {
      return (
        `CASE WHEN isnan(${x}) THEN 'NaN' WHEN isinf(${x}) AND ${x} > 0 THEN 'Infinity' ` +
        `WHEN isinf(${x}) THEN '-Infinity' ELSE CAST(${x} AS VARCHAR) END`
      );
    }
    if (deltaType === 'date') return `strftime(${x}, '%Y-%m-%d')`;
    if (deltaType === 'timestamp')
      return `strftime(timezone('UTC', ${x}), '%Y-%m-%dT%H:%M:%S.%fZ')`;
    if (deltaType === 'timestamp_ntz') return `strftime(${x}, '%Y-%m-%d %H:%M:%S.%f')`;
  }
  const typeName = typeof deltaType === 'string' ? deltaType : deltaType.type;
  throw new SchemaError(
    `[partition] column "${column}" of type ${typeName} cannot be a partition column`,
    {
      context: { column },
    },
  );
}
