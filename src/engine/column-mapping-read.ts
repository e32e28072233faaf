/**
 * Reading a column of a column-mapped table (PROTOCOL.md "Reader Requirements for Column
 * Mapping"): the file's column is found by physical name (mode name) or Parquet field id (mode
 * id), at every struct level, and turned into the logical value: struct fields renamed to their
 * display names, inside lists and maps too, every leaf cast to its current type (which also
 * reads files written before a type widening). A column or nested field the file lacks reads
 * as NULL; so does every column of an id-mode file without field ids.
 */
import {
  containsStruct,
  fieldIdOf,
  physicalName,
  type ColumnMappingMode,
} from '../delta/column-mapping.js';
import type { DataType, StructField } from '../delta/schema.js';
import { ident, str } from './sql.js';
import { deltaTypeToDuck } from './type-map-read.js';

/** One node of a Parquet file's schema tree (from parquet_schema()). */
export interface ParquetNode {
  name: string;
  fieldId: number | null;
  /** `list` and `map` are the LIST/MAP annotated groups; `group` a struct; `leaf` a primitive. */
  kind: 'leaf' | 'group' | 'list' | 'map';
  children: ParquetNode[];
}

/**
 * SQL for the mapped column `field` of the file read as `alias`, given the file's top-level
 * nodes (undefined: assume the file holds every column under its physical name).
 */
export function mappedColumnSql(
  field: StructField,
  fileColumns: readonly ParquetNode[] | undefined,
  mode: Exclude<ColumnMappingMode, 'none'>,
  alias: string,
): string {
  const node = fileColumns ? findNode(fileColumns, field, mode) : undefined;
  if (fileColumns && !node) return nullOf(field.type);
  const name = node?.name ?? physicalName(field, mode);
  return logicalValueSql(`${alias}.${ident(name)}`, field.type, node, mode, 0);
}

/** The file's value `expr` as the logical type: nested fields renamed, leaves cast. */
function logicalValueSql(
  expr: string,
  type: DataType,
  node: ParquetNode | undefined,
  mode: ColumnMappingMode,
  depth: number,
): string {
  if (typeof type === 'string' || !containsStruct(type))
    return `CAST(${expr} AS ${deltaTypeToDuck(type)})`;
  const v = `__tm_x${depth}`;
  if (type.type === 'array') {
    const element = node?.kind === 'list' ? listElement(node) : undefined;
    return `list_transform(${expr}, lambda ${v}: ${logicalValueSql(v, type.elementType, element, mode, depth + 1)})`;
  }
  if (type.type === 'map') {
    const entry = node?.kind === 'map' ? node.children[0] : undefined;
    const key = logicalValueSql(
      `struct_extract(${v}, 'key')`,
      type.keyType,
      entry?.children[0],
      mode,
      depth + 1,
    );
    const value = logicalValueSql(
      `struct_extract(${v}, 'value')`,
      type.valueType,
      entry?.children[1],
      mode,
      depth + 1,
    );
    return `map_from_entries(list_transform(map_entries(${expr}), lambda ${v}: {'key': ${key}, 'value': ${value}}))`;
  }
  const children = node?.kind === 'group' ? node.children : undefined;
  const fields = type.fields.map((f) => {
    const child = children ? findNode(children, f, mode) : undefined;
    if (children && !child) return `${str(f.name)}: ${nullOf(f.type)}`;
    const extract = `struct_extract(${expr}, ${str(child?.name ?? physicalName(f, mode))})`;
    return `${str(f.name)}: ${logicalValueSql(extract, f.type, child, mode, depth)}`;
  });
  // A struct literal of a NULL struct would be a struct of NULLs.
  return `CASE WHEN ${expr} IS NULL THEN NULL ELSE {${fields.join(', ')}} END`;
}

/** The node holding `field`: by field id in mode id, else by physical name (exactly, then ignoring case). */
function findNode(
  nodes: readonly ParquetNode[],
  field: StructField,
  mode: ColumnMappingMode,
): ParquetNode | undefined {
  if (mode === 'id') {
    const id = fieldIdOf(field);
    return id === undefined ? undefined : nodes.find((n) => n.fieldId === id);
  }
  const name = physicalName(field, mode);
  return (
    nodes.find((n) => n.name === name) ??
    nodes.find((n) => n.name.toLowerCase() === name.toLowerCase())
  );
}

/** The element of a LIST group: `list.element` in the three-level form, the repeated group itself in the legacy two-level one. */
function listElement(list: ParquetNode): ParquetNode | undefined {
  const repeated = list.children[0];
  if (!repeated) return undefined;
  return repeated.children.length === 1 ? repeated.children[0] : repeated;
}

function nullOf(type: DataType): string {
  return `CAST(NULL AS ${deltaTypeToDuck(type)})`;
}
