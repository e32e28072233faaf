/**
 * Write direction of the type mapping: DuckDB column types to Delta types (docs/delta-protocol.md, Schema and types),
 * and the SQL that converts a source column to the exact physical type written to Parquet.
 *
 * Decisions:
 * - A naive DuckDB `TIMESTAMP` (and `TIMESTAMP_NS/_MS/_S`) maps to Delta `timestamp`, taken to be
 *   UTC and written as TIMESTAMPTZ so the Parquet field says isAdjustedToUTC=true and Spark reads
 *   the same instant: a CSV or JSON text without an offset is UTC. A column the write creates
 *   takes `timestamp_ntz` instead where the job declares it, or where a Parquet file holds it as a
 *   wall clock (../job/write-batch.ts, ./parquet-timestamps.ts); `timestamp_ntz` is written as
 *   DuckDB TIMESTAMP.
 * - HUGEINT and UHUGEINT become decimal(38,0): values beyond 38 digits fail the cast at write time
 *   rather than being silently rounded (DuckDB would otherwise write HUGEINT as DOUBLE).
 * - Unsigned integers widen to the next signed Delta type; UBIGINT becomes decimal(20,0).
 * - UUID, ENUM, JSON and an untyped NULL column become string.
 * - TIME, TIME WITH TIME ZONE, INTERVAL, UNION, BIT, BIGNUM (VARINT) have no Delta type: SchemaError.
 */
import { SchemaError } from '../errors.js';
import type { DataType, StructField, StructType } from '../delta/schema.js';
import { DuckTypeSyntaxError, parseDuckType, renderDuckType, type DuckType } from './duck-type.js';
import { ident } from './sql.js';

/** DuckDB primitive names with a fixed Delta type. */
const PRIMITIVE_TO_DELTA: Record<string, string> = {
  BOOLEAN: 'boolean',
  TINYINT: 'byte',
  SMALLINT: 'short',
  INTEGER: 'integer',
  BIGINT: 'long',
  HUGEINT: 'decimal(38,0)',
  UHUGEINT: 'decimal(38,0)',
  UTINYINT: 'short',
  USMALLINT: 'integer',
  UINTEGER: 'long',
  UBIGINT: 'decimal(20,0)',
  FLOAT: 'float',
  DOUBLE: 'double',
  VARCHAR: 'string',
  JSON: 'string',
  UUID: 'string',
  NULL: 'string',
  BLOB: 'binary',
  DATE: 'date',
  'TIMESTAMP WITH TIME ZONE': 'timestamp',
  TIMESTAMP: 'timestamp',
  TIMESTAMP_NS: 'timestamp',
  TIMESTAMP_MS: 'timestamp',
  TIMESTAMP_S: 'timestamp',
};

/** Delta primitive names and the DuckDB type written for them. */
const DELTA_TO_DUCK: Record<string, string> = {
  boolean: 'BOOLEAN',
  byte: 'TINYINT',
  short: 'SMALLINT',
  integer: 'INTEGER',
  long: 'BIGINT',
  float: 'FLOAT',
  double: 'DOUBLE',
  string: 'VARCHAR',
  binary: 'BLOB',
  date: 'DATE',
  timestamp: 'TIMESTAMP WITH TIME ZONE',
  timestamp_ntz: 'TIMESTAMP',
};

/** Naive DuckDB timestamp types that are read as UTC wall clock. */
const NAIVE_TIMESTAMPS = new Set(['TIMESTAMP', 'TIMESTAMP_NS', 'TIMESTAMP_MS', 'TIMESTAMP_S']);

const DECIMAL_RE = /^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$/;

/**
 * The Delta type for a DuckDB column type as DESCRIBE prints it.
 * @param column the column name, used in the SchemaError when the type has no Delta equivalent
 */
export function duckTypeToDelta(duckType: string, column = '?'): DataType {
  return toDelta(parseOrThrow(duckType, column), column);
}

/**
 * A Delta schema for DuckDB columns (e.g. the rows of `DESCRIBE <relation>`): every field
 * nullable, metadata `{}`. Column names must be unique ignoring case (a Delta rule), at every level.
 */
export function duckSchemaToDelta(columns: readonly { name: string; type: string }[]): StructType {
  checkUniqueNames(
    columns.map((c) => c.name),
    '',
  );
  return {
    type: 'struct',
    fields: columns.map((c) => field(c.name, duckTypeToDelta(c.type, c.name))),
  };
}

/**
 * The DuckDB type to write for a Delta type: `timestamp` is TIMESTAMPTZ (isAdjustedToUTC=true),
 * `timestamp_ntz` is TIMESTAMP. Struct field names are quoted. `void` and `variant` cannot be
 * written (SchemaError).
 */
export function deltaTypeToDuckForWrite(type: DataType, column = '?'): string {
  if (typeof type === 'string') {
    const simple = DELTA_TO_DUCK[type];
    if (simple) return simple;
    const dec = DECIMAL_RE.exec(type);
    if (dec) return `DECIMAL(${Number(dec[1])},${Number(dec[2])})`;
    throw new SchemaError(
      `[schema] column "${column}" has Delta type ${type}, which tidemark cannot write`,
      {
        context: { column },
      },
    );
  }
  switch (type.type) {
    case 'array':
      return `${deltaTypeToDuckForWrite(type.elementType, `${column}.element`)}[]`;
    case 'map':
      return `MAP(${deltaTypeToDuckForWrite(type.keyType, `${column}.key`)}, ${deltaTypeToDuckForWrite(type.valueType, `${column}.value`)})`;
    case 'struct':
      return structToDuck(type, column);
  }
}

/**
 * SQL converting a source column to the physical type written for its own Delta type
 * (`duckTypeToDelta(duckType)`): the expression itself when no conversion is needed.
 */
export function castExprForDelta(columnSql: string, duckType: string, column = '?'): string {
  return castToDeltaSql(columnSql, duckType, duckTypeToDelta(duckType, column), column);
}

/**
 * SQL converting a source column of DuckDB type `sourceDuckType` to the physical type written for
 * the Delta type `target` (which may differ, e.g. an INTEGER source into a `long` table column).
 * A top-level naive timestamp is converted with `timezone('UTC', …)`; nested ones by CAST, which
 * uses the session time zone: DuckSession pins it to UTC.
 */
export function castToDeltaSql(
  columnSql: string,
  sourceDuckType: string,
  target: DataType,
  column = '?',
): string {
  const source = parseOrThrow(sourceDuckType, column);
  const targetDuck = deltaTypeToDuckForWrite(target, column);
  if (renderDuckType(source) === targetDuck) return columnSql;
  // Parquet gets an ENUM as UTF-8 strings; casting would only build the strings earlier.
  if (target === 'string' && source.kind === 'enum') return columnSql;
  if (target === 'timestamp' && source.kind === 'primitive' && NAIVE_TIMESTAMPS.has(source.name)) {
    const micros = source.name === 'TIMESTAMP' ? columnSql : `CAST(${columnSql} AS TIMESTAMP)`;
    return `timezone('UTC', ${micros})`;
  }
  return `CAST(${columnSql} AS ${targetDuck})`;
}

/** Same spelling as renderDuckType, so a matching source type needs no CAST. */
function structToDuck(type: StructType, column: string): string {
  const fields = type.fields.map((f) => {
    return `${ident(f.name)} ${deltaTypeToDuckForWrite(f.type, `${column}.${f.name}`)}`;
  });
  return `STRUCT(${fields.join(', ')})`;
}

function parseOrThrow(duckType: string, column: string): DuckType {
  try {
    return parseDuckType(duckType);
  } catch (cause) {
    if (!(cause instanceof DuckTypeSyntaxError)) throw cause;
    throw new SchemaError(
      `[schema] column "${column}": cannot parse DuckDB type ${JSON.stringify(duckType)}`,
      {
        context: { column },
        cause,
      },
    );
  }
}

function toDelta(t: DuckType, column: string): DataType {
  switch (t.kind) {
    case 'primitive': {
      const delta = PRIMITIVE_TO_DELTA[t.name];
      if (delta) return delta;
      throw noEquivalent(column, t.name);
    }
    case 'decimal':
      if (t.precision < 1 || t.precision > 38 || t.scale > t.precision)
        throw noEquivalent(column, renderDuckType(t));
      return `decimal(${t.precision},${t.scale})`;
    case 'enum':
      return 'string';
    case 'union':
      throw noEquivalent(column, 'UNION');
    case 'list':
    case 'array':
      return {
        type: 'array',
        elementType: toDelta(t.element, `${column}.element`),
        containsNull: true,
      };
    case 'map':
      return {
        type: 'map',
        keyType: toDelta(t.key, `${column}.key`),
        valueType: toDelta(t.value, `${column}.value`),
        valueContainsNull: true,
      };
    case 'struct':
      checkUniqueNames(
        t.fields.map((f) => f.name),
        `${column}.`,
      );
      return {
        type: 'struct',
        fields: t.fields.map((f) => field(f.name, toDelta(f.type, `${column}.${f.name}`))),
      };
  }
}

function field(name: string, type: DataType): StructField {
  return { name, type, nullable: true, metadata: {} };
}

function noEquivalent(column: string, duckType: string): SchemaError {
  return new SchemaError(
    `[schema] column "${column}" has DuckDB type ${duckType}, which has no Delta Lake equivalent; declare the column string in source.columns to load its text (a top-level column), or write another type upstream`,
    { context: { column, duckType } },
  );
}

/** Delta column names must be unique ignoring case. */
function checkUniqueNames(names: readonly string[], prefix: string): void {
  const seen = new Map<string, string>();
  for (const name of names) {
    const lower = name.toLowerCase();
    const earlier = seen.get(lower);
    if (earlier !== undefined) {
      throw new SchemaError(
        `[schema] columns "${prefix}${earlier}" and "${prefix}${name}" differ only in case; Delta column names must be unique ignoring case`,
        { context: { column: `${prefix}${name}` } },
      );
    }
    seen.set(lower, name);
  }
}
