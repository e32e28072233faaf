/**
 * Nested values (struct fields, list elements, map keys and values) checked like top-level ones.
 * DuckDB's cast of a struct into a struct type drops fields the target lacks and sets a field
 * whose value does not cast to NULL, without an error; a checked cast here looks at every leaf
 * (./fit-cast.ts decides each leaf's check), and a source field the target struct lacks is found
 * before anything is cast.
 */
import type { DataType } from '../delta/schema.js';
import { parseDuckType, renderDuckType, type DuckType } from './duck-type.js';
import { str } from './sql.js';
import type { TemporalFormats } from './text-cast.js';
import { duckTypeToDelta } from './type-map-write.js';

/** One leaf's check: its path (`obj.x`, `tags.element`), a predicate true for a row holding a misfit, and that value as text. */
export interface LeafCheck {
  path: string;
  predicate: string;
  value: string;
  /** The leaf's source DuckDB type and target Delta type, for the message. */
  sourceType: string;
  target: DataType;
}

/** How a leaf is checked: the predicate for one value `col` of `sourceType` into `target`, or null when every value fits. */
export type LeafMisfit = (
  col: string,
  sourceType: string,
  target: DataType,
  formats: TemporalFormats,
) => string | null;

/** True for a DuckDB type with inner values. */
export function isNestedDuck(t: DuckType): boolean {
  return t.kind === 'struct' || t.kind === 'list' || t.kind === 'array' || t.kind === 'map';
}

/**
 * The checks of every leaf of `col` (of nested `source`) against nested `target`; empty when the
 * two are not both nested (a scalar where a struct is expected is the top-level check's to refuse).
 */
export function leafChecks(
  col: string,
  source: DuckType,
  target: DataType,
  path: string,
  leaf: LeafMisfit,
  formats: TemporalFormats,
): LeafCheck[] {
  return isNestedDuck(source) && typeof target !== 'string'
    ? leaves(col, source, target, path, leaf, formats, 0)
    : [];
}

function leaves(
  col: string,
  source: DuckType,
  target: DataType,
  path: string,
  leaf: LeafMisfit,
  formats: TemporalFormats,
  depth: number,
): LeafCheck[] {
  if (typeof target === 'string') {
    if (isNestedDuck(source)) return [];
    const predicate = leaf(col, renderDuckType(source), target, formats);
    return predicate
      ? [
          {
            path,
            predicate,
            value: `CAST(${col} AS VARCHAR)`,
            sourceType: renderDuckType(source),
            target,
          },
        ]
      : [];
  }
  if (target.type === 'struct' && source.kind === 'struct') {
    return target.fields.flatMap((f) => {
      const s = source.fields.find((sf) => sf.name.toLowerCase() === f.name.toLowerCase());
      return s
        ? leaves(
            `struct_extract(${col}, ${str(s.name)})`,
            s.type,
            f.type,
            `${path}.${f.name}`,
            leaf,
            formats,
            depth + 1,
          )
        : [];
    });
  }
  if (target.type === 'array' && (source.kind === 'list' || source.kind === 'array')) {
    return inList(col, source.element, target.elementType, `${path}.element`, leaf, formats, depth);
  }
  if (target.type === 'map' && source.kind === 'map') {
    return [
      ...inList(
        `map_keys(${col})`,
        source.key,
        target.keyType,
        `${path}.key`,
        leaf,
        formats,
        depth,
      ),
      ...inList(
        `map_values(${col})`,
        source.value,
        target.valueType,
        `${path}.value`,
        leaf,
        formats,
        depth,
      ),
    ];
  }
  return [];
}

/** The checks of the elements of list `col`: a row misfits when one element does; its value is the first such element's. */
function inList(
  col: string,
  element: DuckType,
  target: DataType,
  path: string,
  leaf: LeafMisfit,
  formats: TemporalFormats,
  depth: number,
): LeafCheck[] {
  const x = `__e${depth}`;
  const y = `__v${depth}`;
  return leaves(x, element, target, path, leaf, formats, depth + 1).map((c) => ({
    ...c,
    predicate: `coalesce(list_bool_or(list_transform(${col}, ${x} -> coalesce(${c.predicate}, false))), false)`,
    value: `list_filter(list_transform(${col}, ${x} -> CASE WHEN ${c.predicate} THEN ${c.value} END), ${y} -> ${y} IS NOT NULL)[1]`,
  }));
}

/** Paths of fields in `source` that the nested `target` lacks (`obj.z`, `items.element.note`), at any depth. */
export function newNestedFields(source: DuckType, target: DataType, path: string): string[] {
  if (typeof target === 'string') return [];
  if (target.type === 'struct' && source.kind === 'struct') {
    return source.fields.flatMap((s) => {
      const f = target.fields.find((tf) => tf.name.toLowerCase() === s.name.toLowerCase());
      return f ? newNestedFields(s.type, f.type, `${path}.${f.name}`) : [`${path}.${s.name}`];
    });
  }
  if (target.type === 'array' && (source.kind === 'list' || source.kind === 'array'))
    return newNestedFields(source.element, target.elementType, `${path}.element`);
  if (target.type === 'map' && source.kind === 'map') {
    return [
      ...newNestedFields(source.key, target.keyType, `${path}.key`),
      ...newNestedFields(source.value, target.valueType, `${path}.value`),
    ];
  }
  return [];
}

/**
 * `target` with the struct fields `source` adds (at any depth) appended as nullable fields of
 * their own types: the type a column evolves to under `schemaEvolution: addColumns`. Existing
 * fields keep their order, types and metadata.
 */
export function withNewFields(target: DataType, source: DuckType, path: string): DataType {
  if (typeof target === 'string') return target;
  if (target.type === 'struct' && source.kind === 'struct') {
    const kept = target.fields.map((f) => {
      const s = source.fields.find((sf) => sf.name.toLowerCase() === f.name.toLowerCase());
      return s ? { ...f, type: withNewFields(f.type, s.type, `${path}.${f.name}`) } : f;
    });
    const added = source.fields
      .filter((s) => !target.fields.some((f) => f.name.toLowerCase() === s.name.toLowerCase()))
      .map((s) => ({
        name: s.name,
        type: duckTypeToDelta(renderDuckType(s.type), `${path}.${s.name}`),
        nullable: true,
        metadata: {},
      }));
    return { ...target, fields: [...kept, ...added] };
  }
  if (target.type === 'array' && (source.kind === 'list' || source.kind === 'array')) {
    return {
      ...target,
      elementType: withNewFields(target.elementType, source.element, `${path}.element`),
    };
  }
  if (target.type === 'map' && source.kind === 'map') {
    return {
      ...target,
      keyType: withNewFields(target.keyType, source.key, `${path}.key`),
      valueType: withNewFields(target.valueType, source.value, `${path}.value`),
    };
  }
  return target;
}

/** The nested fields a source column of DuckDB type `sourceType` adds to `target`, or [] (also when the type does not parse). */
export function nestedAdditions(sourceType: string, target: DataType, path: string): string[] {
  if (typeof target === 'string') return [];
  try {
    return newNestedFields(parseDuckType(sourceType), target, path);
  } catch {
    return [];
  }
}
