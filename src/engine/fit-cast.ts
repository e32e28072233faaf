/**
 * Casting a source column into a table column's type without losing values.
 *
 * A cast is *lossless* when every value of the source type has an exact image in the target
 * (INTEGER into BIGINT, FLOAT into DOUBLE, DECIMAL(10,2) into DECIMAL(12,2), DATE into
 * timestamp, anything but binary into string): a plain CAST. Every other cast (BIGINT into INTEGER,
 * DOUBLE into BIGINT, text into a number or a date, DECIMAL(12,4) into DECIMAL(12,2)) is
 * *checked*: a value fits when it casts and, for numbers and dates, casts back to itself.
 * DuckDB would otherwise round 1.5 to 2, or cut '2024-01-01 10:00' down to a date, silently.
 *
 * Text (a CSV field, a JSON string) converts only when it spells a value of the type exactly
 * (./text-cast.ts): no blanks, underscores or exponents into an integer, no rounding into a
 * decimal, dates read one way only. Accepted approximation: a fraction into float/double (a
 * float column is approximate by nature: 0.1 has no exact image). An integer or a decimal into
 * float/double is exact only up to the type's significant digits (a double's 53 bits hold every
 * 15-digit number; BIGINT 9007199254740993 would become ...992): beyond them it is checked by
 * casting back. tidemark never changes a table column's type (that needs Delta's typeWidening
 * feature).
 */
import type { DataType } from '../delta/schema.js';
import { parseDuckType, renderDuckType, type DuckType } from './duck-type.js';
import { isNestedDuck, leafChecks } from './nested-fit.js';
import { str } from './sql.js';
import { isTextType, textMisfitSql, textValueSql, type TemporalFormats } from './text-cast.js';
import { castToDeltaSql, deltaTypeToDuckForWrite } from './type-map-write.js';

/** Signed integer types and their widths; unsigned ones fit the next wider signed type. */
const INT_RANK: Record<string, number> = {
  TINYINT: 1,
  SMALLINT: 2,
  INTEGER: 3,
  BIGINT: 4,
  HUGEINT: 5,
};
const UINT_NEEDS_RANK: Record<string, number> = {
  UTINYINT: 2,
  USMALLINT: 3,
  UINTEGER: 4,
  UBIGINT: 5,
  UHUGEINT: 6,
};
/** Decimal digits each integer type needs (for integer into decimal). */
const INT_DIGITS: Record<string, number> = {
  TINYINT: 3,
  SMALLINT: 5,
  INTEGER: 10,
  BIGINT: 19,
  HUGEINT: 39,
  UTINYINT: 3,
  USMALLINT: 5,
  UINTEGER: 10,
  UBIGINT: 20,
  UHUGEINT: 39,
};
const FLOATS = new Set(['FLOAT', 'DOUBLE']);
/** Significant decimal digits every value of that many digits keeps through FLOAT and DOUBLE. */
const FLOAT_DIGITS: Record<string, number> = { FLOAT: 6, DOUBLE: 15 };
const TEMPORAL = new Set([
  'DATE',
  'TIMESTAMP',
  'TIMESTAMP_NS',
  'TIMESTAMP_MS',
  'TIMESTAMP_S',
  'TIMESTAMP WITH TIME ZONE',
]);

/** How a source type goes into a target type. */
export type CastClass = 'lossless' | 'checked';

/** Whether a cast from `sourceDuckType` to the Delta type `target` can lose or fail on values. */
export function castClass(sourceDuckType: string, target: DataType): CastClass {
  const source = parseDuckType(sourceDuckType);
  const targetDuck = parseDuckType(deltaTypeToDuckForWrite(target));
  return isLossless(source, targetDuck) ? 'lossless' : 'checked';
}

function isLossless(s: DuckType, t: DuckType): boolean {
  if (renderDuckType(s) === renderDuckType(t)) return true;
  if (s.kind === 'primitive' && s.name === 'NULL') return true;
  if (t.kind === 'primitive') {
    // Not BLOB: its CAST to VARCHAR writes escapes (bytes FF 00 become the text `\xFF\x00`).
    if (t.name === 'VARCHAR')
      return (
        s.kind !== 'struct' &&
        s.kind !== 'map' &&
        s.kind !== 'list' &&
        s.kind !== 'array' &&
        !(s.kind === 'primitive' && s.name === 'BLOB')
      );
    const floatDigits = FLOAT_DIGITS[t.name];
    if (s.kind === 'decimal') return floatDigits !== undefined && s.precision <= floatDigits;
    if (s.kind !== 'primitive') return false;
    if (t.name in INT_RANK) return intFits(s.name, INT_RANK[t.name]!);
    if (t.name === 'DOUBLE' && s.name === 'FLOAT') return true;
    if (floatDigits !== undefined) return (INT_DIGITS[s.name] ?? Infinity) <= floatDigits;
    // Delta timestamps hold microseconds: nanoseconds are checked (see exactnessSql).
    if (t.name === 'TIMESTAMP WITH TIME ZONE')
      return (
        TEMPORAL.has(s.name) && s.name !== 'TIMESTAMP WITH TIME ZONE' && s.name !== 'TIMESTAMP_NS'
      );
    return false;
  }
  if (t.kind === 'decimal') {
    if (s.kind === 'decimal')
      return t.scale >= s.scale && t.precision - t.scale >= s.precision - s.scale;
    return s.kind === 'primitive' && (INT_DIGITS[s.name] ?? Infinity) <= t.precision - t.scale;
  }
  return false;
}

function intFits(source: string, targetRank: number): boolean {
  const signed = INT_RANK[source];
  if (signed !== undefined) return signed <= targetRank;
  const needs = UINT_NEEDS_RANK[source];
  return needs !== undefined && needs <= targetRank;
}

/**
 * SQL predicate, true for a non-NULL value of `col` that does not fit the target type;
 * null when the cast is lossless (every value fits).
 */
export function misfitSql(
  col: string,
  sourceDuckType: string,
  target: DataType,
  formats: TemporalFormats = {},
): string | null {
  if (castClass(sourceDuckType, target) === 'lossless') return null;
  const source = parseDuckType(sourceDuckType);
  const t = deltaTypeToDuckForWrite(target);
  if (isTextType(source)) return textMisfitSql(col, parseDuckType(t), formats);
  const cast = tryCastSql(col, source, t);
  const exact = exactnessSql(col, source, parseDuckType(t), cast);
  const whole = `(${col} IS NOT NULL AND (${cast} IS NULL${exact ? ` OR ${exact}` : ''}))`;
  // A struct cast sets a field that does not fit to NULL without an error: every leaf is checked.
  const leaves = isNestedDuck(source)
    ? leafChecks(col, source, target, '', nestedLeafMisfitSql, formats)
    : [];
  return leaves.length === 0
    ? whole
    : `(${[whole, ...leaves.map((l) => l.predicate)].join(' OR ')})`;
}

/**
 * misfitSql for a leaf of a struct, list or map, which is converted by one CAST of the whole
 * value: a binary leaf into a string field passes only when that CAST gives its UTF-8 text
 * (ASCII without escapes), since the CAST writes bytes past ASCII as `\xC3\xA9`.
 */
function nestedLeafMisfitSql(
  col: string,
  sourceDuckType: string,
  target: DataType,
  formats: TemporalFormats = {},
): string | null {
  if (sourceDuckType === 'BLOB' && target === 'string')
    return `(${col} IS NOT NULL AND TRY(decode(${col})) IS DISTINCT FROM CAST(${col} AS VARCHAR))`;
  return misfitSql(col, sourceDuckType, target, formats);
}

/**
 * TRY_CAST of `col` into `t`. A double goes into a decimal through its shortest text (the digits
 * the number was written with): DuckDB's direct cast works on the binary value and turns
 * 800000000.3 into 800000000.2999999488, which casts back to the same double, unnoticed.
 */
function tryCastSql(col: string, s: DuckType, t: string): string {
  // Binary into a string column: its bytes as UTF-8 text, the same bytes (NULL when not UTF-8).
  if (s.kind === 'primitive' && s.name === 'BLOB' && t === 'VARCHAR') return `TRY(decode(${col}))`;
  const floatToDecimal =
    s.kind === 'primitive' && FLOATS.has(s.name) && parseDuckType(t).kind === 'decimal';
  return floatToDecimal ? `TRY_CAST(CAST(${col} AS VARCHAR) AS ${t})` : `TRY_CAST(${col} AS ${t})`;
}

/** The "casts back to itself" part of the check, when the target can round or truncate. */
function exactnessSql(col: string, s: DuckType, t: DuckType, cast: string): string | null {
  const sourceText = renderDuckType(s);
  const numericTarget = t.kind === 'decimal' || (t.kind === 'primitive' && t.name in INT_RANK);
  if (numericTarget) {
    if (
      s.kind === 'decimal' ||
      (s.kind === 'primitive' && (FLOATS.has(s.name) || s.name in INT_DIGITS))
    ) {
      return `CAST(${cast} AS ${sourceText}) IS DISTINCT FROM ${col}`;
    }
    return null;
  }
  // An integer or a decimal into float/double: the value must come back from the float (a
  // decimal through the float's shortest text, as tryCastSql reads a float into a decimal).
  if (t.kind === 'primitive' && FLOATS.has(t.name)) {
    if (s.kind === 'decimal')
      return `TRY_CAST(CAST(${cast} AS VARCHAR) AS ${sourceText}) IS DISTINCT FROM ${col}`;
    if (s.kind === 'primitive' && s.name in INT_DIGITS)
      return `TRY_CAST(${cast} AS ${sourceText}) IS DISTINCT FROM ${col}`;
    return null;
  }
  if (t.kind === 'primitive' && t.name === 'DATE') {
    if (s.kind === 'primitive' && TEMPORAL.has(s.name))
      return `CAST(${cast} AS ${sourceText}) IS DISTINCT FROM ${col}`;
  }
  // A Parquet TIMESTAMP(NANOS) into a microsecond timestamp: the cast would drop the last digits.
  if (s.kind === 'primitive' && s.name === 'TIMESTAMP_NS' && t.kind === 'primitive')
    if (t.name === 'TIMESTAMP' || t.name === 'TIMESTAMP WITH TIME ZONE')
      return `epoch_ns(${col}) % 1000 <> 0`;
  return null;
}

/**
 * SQL converting `col` to the physical type written for `target`: a plain conversion when it is
 * lossless, else a checked one that raises a DuckDB error on a value that does not fit (the
 * caller then looks for the row with `misfitSql` to name it).
 */
export function fitCastSql(
  col: string,
  sourceDuckType: string,
  target: DataType,
  column = '?',
  formats: TemporalFormats = {},
): string {
  const misfit = misfitSql(col, sourceDuckType, target, formats);
  const t = deltaTypeToDuckForWrite(target, column);
  const text = isTextType(parseDuckType(sourceDuckType)) && t !== 'VARCHAR';
  if (misfit === null)
    return text
      ? textValueSql(col, parseDuckType(t), formats)
      : castToDeltaSql(col, sourceDuckType, target, column);
  const message = str(
    `[cast] a value of column ${JSON.stringify(column)} does not fit the table's type ${t}`,
  );
  const value = text
    ? textValueSql(col, parseDuckType(t), formats)
    : tryCastSql(col, parseDuckType(sourceDuckType), t);
  return `CASE WHEN ${misfit} THEN error(${message}) ELSE ${value} END`;
}
