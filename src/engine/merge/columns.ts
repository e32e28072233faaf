/**
 * Lining up the batch's columns with the table's: which batch column feeds which table column,
 * with what conversion, and the schema after adding new columns. Pure, so the rules are tested
 * without DuckDB.
 */
import type { DataType, StructType } from '../../delta/schema.js';
import { SchemaError } from '../../errors.js';
import { ident } from '../sql.js';
import { fitCastSql } from '../fit-cast.js';
import { deltaTypeToDuckForWrite, duckSchemaToDelta } from '../type-map-write.js';

/** A column and its DuckDB type, as DESCRIBE prints it. */
export interface ColumnType {
  name: string;
  type: string;
}

/** How one table column is filled from the batch. */
export interface ColumnMapping {
  /** Table column name (the table's spelling). */
  target: string;
  /** Table column Delta type. */
  deltaType: DataType;
  /** The DuckDB type written for it. */
  duckType: string;
  /** Batch column feeding it, or null when the batch lacks it (then NULL). */
  source: string | null;
  /** Batch column DuckDB type, when there is a source. */
  sourceType: string | null;
}

/** The mapping of a whole batch onto a table. */
export interface ColumnPlan {
  mappings: ColumnMapping[];
  /** Batch columns not written (internal columns the caller named). */
  ignored: string[];
}

/**
 * Map batch columns to the table schema's top-level fields by name (case-insensitive, like Delta).
 * Table columns the batch lacks are filled with NULL. Batch columns the table lacks are a
 * SchemaError naming them, unless listed in `internal`: schema evolution adds them to the
 * schema first (see `newColumns` and `evolveSchema`).
 */
export function planColumns(
  batch: readonly ColumnType[],
  schema: StructType,
  internal: readonly string[],
  tableUri: string,
): ColumnPlan {
  const byName = new Map(batch.map((c) => [c.name.toLowerCase(), c]));
  const internalSet = new Set(internal.map((n) => n.toLowerCase()));
  const mappings = schema.fields.map((f): ColumnMapping => {
    const src = byName.get(f.name.toLowerCase());
    return {
      target: f.name,
      deltaType: f.type,
      duckType: deltaTypeToDuckForWrite(f.type, f.name),
      source: src?.name ?? null,
      sourceType: src?.type ?? null,
    };
  });
  const extra = newColumns(batch, schema, internal);
  if (extra.length > 0) {
    const names = extra.map((c) => c.name);
    throw new SchemaError(
      `[merge] batch columns not in table ${tableUri}: ${names.map((n) => JSON.stringify(n)).join(', ')} (schemaEvolution is 'fail')`,
      { context: { uri: tableUri, column: names[0], columns: names } },
    );
  }
  const ignored = batch.filter((c) => internalSet.has(c.name.toLowerCase())).map((c) => c.name);
  return { mappings, ignored };
}

/** Batch columns the table lacks (names compared ignoring case), internal columns left out. */
export function newColumns(
  batch: readonly ColumnType[],
  schema: StructType,
  internal: readonly string[],
): ColumnType[] {
  const known = new Set(
    [...schema.fields.map((f) => f.name), ...internal].map((n) => n.toLowerCase()),
  );
  return batch.filter((c) => !known.has(c.name.toLowerCase()));
}

/**
 * The schema with `added` appended as nullable top-level fields (types mapped from DuckDB, or
 * declared: see newTableSchema; empty metadata). Existing fields, their order and their metadata
 * are kept as they are.
 */
export function evolveSchema(
  schema: StructType,
  added: readonly ColumnType[],
  declared: Readonly<Record<string, string>> = {},
): StructType {
  return { ...schema, fields: [...schema.fields, ...newTableSchema(added, declared).fields] };
}

/**
 * The Delta schema of batch columns a write creates: types mapped from DuckDB, except that a
 * naive TIMESTAMP declared `timestamp_ntz` is `timestamp_ntz` (the caller declares so a naive
 * Parquet timestamp too; otherwise it is a UTC `timestamp`). Every other declared type reaches
 * the batch as its own DuckDB type already.
 */
export function newTableSchema(
  columns: readonly ColumnType[],
  declared: Readonly<Record<string, string>> = {},
): StructType {
  const ntz = new Set(
    Object.entries(declared)
      .filter(([, t]) => t === 'timestamp_ntz')
      .map(([name]) => name.toLowerCase()),
  );
  const schema = duckSchemaToDelta(columns);
  if (ntz.size === 0) return schema;
  return {
    ...schema,
    fields: schema.fields.map((f) =>
      f.type === 'timestamp' && ntz.has(f.name.toLowerCase()) ? { ...f, type: 'timestamp_ntz' } : f,
    ),
  };
}

/** Batch columns that become table columns when the write creates the table. */
export function dataColumns(
  batch: readonly ColumnType[],
  internal: readonly string[],
): ColumnType[] {
  const internalSet = new Set(internal.map((n) => n.toLowerCase()));
  return batch.filter((c) => !internalSet.has(c.name.toLowerCase()));
}

/**
 * SQL producing a table column (in its written DuckDB type) from the batch relation aliased
 * `alias`; a value that does not fit the column's type raises an error (see ../fit-cast.ts).
 */
export function mappingExpr(m: ColumnMapping, alias: string): string {
  if (m.source === null || m.sourceType === null) return `CAST(NULL AS ${m.duckType})`;
  return fitCastSql(`${alias}.${ident(m.source)}`, m.sourceType, m.deltaType, m.target);
}

/** Names of table columns that must be fed by the batch; a missing one is a SchemaError naming it. */
export function requireColumns(
  plan: ColumnPlan,
  names: readonly string[],
  role: string,
  tableUri: string,
): void {
  for (const name of names) {
    const m = plan.mappings.find((x) => x.target.toLowerCase() === name.toLowerCase());
    if (!m) {
      throw new SchemaError(
        `[merge] ${role} column ${JSON.stringify(name)} is not a column of table ${tableUri}`,
        {
          context: { uri: tableUri, column: name },
        },
      );
    }
    if (m.source === null) {
      throw new SchemaError(
        `[merge] ${role} column ${JSON.stringify(name)} is missing from the batch`,
        {
          context: { uri: tableUri, column: name },
        },
      );
    }
  }
}

/** The table's spelling of a column name given in any case (names are unique ignoring case). */
export function tableName(plan: ColumnPlan, name: string): string {
  return plan.mappings.find((m) => m.target.toLowerCase() === name.toLowerCase())?.target ?? name;
}
