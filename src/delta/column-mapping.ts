/**
 * Column mapping (PROTOCOL.md "Column Mapping", docs/delta-protocol.md): in modes `name` and `id`
 * every struct field, nested ones included, has a physical name and a 32-bit id in its metadata.
 * Data files, partitionValues keys and stats keys use the physical names; Parquet field ids carry
 * the ids. Users only ever see the logical (display) names. Pure: the engine does the SQL.
 */
import { randomUUID } from 'node:crypto';
import { DeltaLogError } from '../errors.js';
import type { Metadata } from './actions.js';
import type { DataType, StructField, StructType } from './schema.js';

/** How data files name their columns: by display name, by physical name, or by Parquet field id. */
export type ColumnMappingMode = 'none' | 'name' | 'id';

export const COLUMN_MAPPING_MODE = 'delta.columnMapping.mode';
export const MAX_COLUMN_ID = 'delta.columnMapping.maxColumnId';
const FIELD_ID = 'delta.columnMapping.id';
export const PHYSICAL_NAME = 'delta.columnMapping.physicalName';
const MODES: readonly string[] = ['none', 'name', 'id'];

/** The mode property as written, lower-cased; 'none' when unset. */
function modeProperty(metadata: Metadata): string {
  return (metadata.configuration?.[COLUMN_MAPPING_MODE] ?? 'none').toLowerCase();
}

/**
 * The mode `delta.columnMapping.mode` asks for; DeltaLogError when it is unknown. Honoured only
 * where the protocol supports column mapping: a table's mode is `TableConfig.columnMapping`.
 */
export function mappingModeProperty(metadata: Metadata): ColumnMappingMode {
  const mode = modeProperty(metadata);
  if (!MODES.includes(mode)) {
    throw new DeltaLogError(`[delta] unknown ${COLUMN_MAPPING_MODE} '${mode}'`, {
      context: { feature: 'columnMapping' },
    });
  }
  return mode as ColumnMappingMode;
}

/**
 * Why tidemark cannot honour the column mapping of a table whose protocol supports it, or null
 * when it can: an unknown mode, or a field without its id or physical name.
 */
export function columnMappingProblem(metadata: Metadata, schema: StructType): string | null {
  const mode = modeProperty(metadata);
  if (!MODES.includes(mode)) return `unknown ${COLUMN_MAPPING_MODE} '${mode}'`;
  if (mode === 'none') return null;
  const unmapped = fieldPaths(schema).find(
    ({ field }) =>
      fieldIdOf(field) === undefined || typeof field.metadata?.[PHYSICAL_NAME] !== 'string',
  );
  return unmapped ? `column '${unmapped.path}' has no ${FIELD_ID} or ${PHYSICAL_NAME}` : null;
}

/** The name a field has in data files, partitionValues and stats. */
export function physicalName(field: StructField, mode: ColumnMappingMode): string {
  if (mode === 'none') return field.name;
  const name = field.metadata?.[PHYSICAL_NAME];
  if (typeof name !== 'string' || name === '') {
    throw new DeltaLogError(`[delta] column '${field.name}' has no ${PHYSICAL_NAME}`, {
      context: { column: field.name },
    });
  }
  return name;
}

/** The field's column mapping id (its Parquet field id), if it has one. */
export function fieldIdOf(field: StructField): number | undefined {
  const id = Number(field.metadata?.[FIELD_ID]);
  return field.metadata?.[FIELD_ID] !== undefined && Number.isSafeInteger(id) ? id : undefined;
}

/** The type with every struct field, at any depth, named by its physical name. */
export function physicalType(type: DataType, mode: ColumnMappingMode): DataType {
  if (mode === 'none' || typeof type === 'string') return type;
  if (type.type === 'struct')
    return { type: 'struct', fields: type.fields.map((f) => physicalField(f, mode)) };
  if (type.type === 'array') return { ...type, elementType: physicalType(type.elementType, mode) };
  return {
    ...type,
    keyType: physicalType(type.keyType, mode),
    valueType: physicalType(type.valueType, mode),
  };
}

/** The field as data files hold it: physical name, physical nested names, the same metadata (ids). */
export function physicalField(field: StructField, mode: ColumnMappingMode): StructField {
  if (mode === 'none') return field;
  return { ...field, name: physicalName(field, mode), type: physicalType(field.type, mode) };
}

/**
 * The physical name of the top-level column `column` (matched exactly, else ignoring case, as
 * Delta names are); the name itself when the schema has no such column or the mode is none.
 */
export function physicalColumn(
  schema: StructType,
  column: string,
  mode: ColumnMappingMode,
): string {
  if (mode === 'none') return column;
  const lower = column.toLowerCase();
  const field =
    schema.fields.find((f) => f.name === column) ??
    schema.fields.find((f) => f.name.toLowerCase() === lower);
  return field ? physicalName(field, mode) : column;
}

/**
 * The schema with an id and a fresh physical name (`col-<uuid>`) on every field, at any depth,
 * that lacks them, numbered from the larger of `maxColumnId` and the largest id in the schema
 * (ids are never reused; PROTOCOL.md "Writer Requirements for Column Mapping"). Returns the new
 * maximum for `delta.columnMapping.maxColumnId`.
 */
export function assignColumnIds(
  schema: StructType,
  maxColumnId = 0,
): { schema: StructType; maxColumnId: number } {
  let max = Math.max(maxColumnId, ...fieldPaths(schema).map(({ field }) => fieldIdOf(field) ?? 0));
  const assignField = (field: StructField): StructField => {
    const metadata = { ...(field.metadata ?? {}) };
    if (fieldIdOf(field) === undefined) metadata[FIELD_ID] = ++max;
    if (typeof metadata[PHYSICAL_NAME] !== 'string')
      metadata[PHYSICAL_NAME] = `col-${randomUUID()}`;
    return { ...field, metadata, type: assignType(field.type) };
  };
  const assignType = (type: DataType): DataType => {
    if (typeof type === 'string') return type;
    if (type.type === 'struct') return { type: 'struct', fields: type.fields.map(assignField) };
    if (type.type === 'array') return { ...type, elementType: assignType(type.elementType) };
    return { ...type, keyType: assignType(type.keyType), valueType: assignType(type.valueType) };
  };
  const fields = schema.fields.map(assignField);
  return { schema: { ...schema, fields }, maxColumnId: max };
}

/** The `delta.columnMapping.maxColumnId` a table records (0 when unset or malformed). */
export function recordedMaxColumnId(metadata: Metadata): number {
  const n = Number(metadata.configuration?.[MAX_COLUMN_ID]);
  return Number.isSafeInteger(n) && n > 0 ? n : 0;
}

/**
 * A new table's schema and properties in `mode`: every field given an id and a physical name,
 * and the mode and maxColumnId properties. Mode none changes nothing.
 */
export function mapNewTable(
  schema: StructType,
  mode: ColumnMappingMode,
): { schema: StructType; configuration: Record<string, string> } {
  if (mode === 'none') return { schema, configuration: {} };
  const assigned = assignColumnIds(schema);
  return {
    schema: assigned.schema,
    configuration: { [COLUMN_MAPPING_MODE]: mode, [MAX_COLUMN_ID]: String(assigned.maxColumnId) },
  };
}

/**
 * The metaData of a mapped table whose schema gained columns: the new fields get ids and
 * physical names, `delta.columnMapping.maxColumnId` is raised, every other key kept.
 */
export function evolveMappedMetadata(
  metadata: Metadata,
  schema: StructType,
): { metadata: Metadata; schema: StructType } {
  const assigned = assignColumnIds(schema, recordedMaxColumnId(metadata));
  return {
    schema: assigned.schema,
    metadata: {
      ...metadata,
      schemaString: JSON.stringify(assigned.schema),
      configuration: { ...metadata.configuration, [MAX_COLUMN_ID]: String(assigned.maxColumnId) },
    },
  };
}

/** True when a struct occurs anywhere in the type (only then do nested names need mapping). */
export function containsStruct(type: DataType): boolean {
  if (typeof type === 'string') return false;
  if (type.type === 'struct') return true;
  if (type.type === 'array') return containsStruct(type.elementType);
  return containsStruct(type.keyType) || containsStruct(type.valueType);
}

/** Every struct field with its dotted logical path, depth first. */
function fieldPaths(type: DataType, prefix = ''): Array<{ field: StructField; path: string }> {
  if (typeof type === 'string') return [];
  if (type.type === 'array') return fieldPaths(type.elementType, `${prefix}element.`);
  if (type.type === 'map')
    return [
      ...fieldPaths(type.keyType, `${prefix}key.`),
      ...fieldPaths(type.valueType, `${prefix}value.`),
    ];
  return type.fields.flatMap((field) => [
    { field, path: prefix + field.name },
    ...fieldPaths(field.type, `${prefix}${field.name}.`),
  ]);
}
