/**
 * Column mapping's pure rules: when the mode counts, new ids (never reused, nested fields
 * included) and physical names, the metaData of a schema that gained columns, and the protocol
 * of a new mapped table.
 */
import { describe, expect, it } from 'vitest';
import type { Metadata } from '../../src/delta/actions.js';
import {
  assignColumnIds,
  evolveMappedMetadata,
  physicalColumn,
  physicalType,
} from '../../src/delta/column-mapping.js';
import type { StructField, StructType } from '../../src/delta/schema.js';
import { protocolFor } from '../../src/delta/table-create.js';

const mapped = (name: string, id: number, type: StructField['type'] = 'long'): StructField => ({
  name,
  type,
  nullable: true,
  metadata: { 'delta.columnMapping.id': id, 'delta.columnMapping.physicalName': `col-${name}` },
});
const plain = (name: string, type: StructField['type'] = 'long'): StructField => ({
  name,
  type,
  nullable: true,
  metadata: {},
});
const struct = (...fields: StructField[]): StructType => ({ type: 'struct', fields });

function metadata(schema: StructType, configuration: Record<string, string>): Metadata {
  return {
    id: 't',
    format: { provider: 'parquet', options: {} },
    schemaString: JSON.stringify(schema),
    partitionColumns: [],
    configuration,
  };
}

describe('column mapping', () => {
  it('new fields, nested ones inside lists and maps included, get ids above maxColumnId (a dropped column’s id is never reused) and col-<uuid> names', () => {
    const schema = struct(
      mapped('a', 1),
      plain(
        's',
        struct(
          plain('x'),
          plain('l', { type: 'array', elementType: struct(plain('y')), containsNull: true }),
        ),
      ),
      plain('m', {
        type: 'map',
        keyType: 'string',
        valueType: struct(plain('z')),
        valueContainsNull: true,
      }),
    );
    // Column 2 was dropped: maxColumnId is 2 while the schema's largest id is 1.
    const { schema: assigned, maxColumnId } = assignColumnIds(schema, 2);
    expect(maxColumnId).toBe(8);
    const ids: Array<[string, unknown]> = [];
    const names: unknown[] = [];
    const walk = (type: StructField['type']): void => {
      if (typeof type === 'string') return;
      if (type.type === 'array') return walk(type.elementType);
      if (type.type === 'map') return walk(type.valueType);
      for (const f of type.fields) {
        ids.push([f.name, f.metadata['delta.columnMapping.id']]);
        names.push(f.metadata['delta.columnMapping.physicalName']);
        walk(f.type);
      }
    };
    walk(assigned);
    expect(ids).toEqual([
      ['a', 1],
      ['s', 3],
      ['x', 4],
      ['l', 5],
      ['y', 6],
      ['m', 7],
      ['z', 8],
    ]);
    expect(names[0]).toBe('col-a');
    expect(new Set(names).size).toBe(names.length);
    expect(names.slice(1).every((n) => /^col-[0-9a-f-]{36}$/.test(String(n)))).toBe(true);
    expect(physicalType(assigned.fields[1]!.type, 'name')).toMatchObject({
      fields: [{ name: names[2] }, { name: names[3] }],
    });
  });

  it('a schema that gained a column: the metaData keeps every key and raises maxColumnId', () => {
    const before = metadata(struct(mapped('a', 1)), {
      'delta.columnMapping.mode': 'name',
      'delta.columnMapping.maxColumnId': '5',
      other: 'kept',
    });
    const { metadata: after, schema } = evolveMappedMetadata(
      before,
      struct(mapped('a', 1), plain('b')),
    );
    expect(after.configuration).toEqual({
      'delta.columnMapping.mode': 'name',
      'delta.columnMapping.maxColumnId': '6',
      other: 'kept',
    });
    expect(JSON.parse(after.schemaString)).toEqual(schema);
    expect(schema.fields[1]!.metadata['delta.columnMapping.id']).toBe(6);
    expect(physicalColumn(schema, 'A', 'name')).toBe('col-a');
    expect(physicalColumn(schema, 'a', 'none')).toBe('a');
  });

  it('a new mapped table gets the lowest protocol that carries column mapping', () => {
    const schema = struct(mapped('a', 1));
    const cm = { 'delta.columnMapping.mode': 'name' };
    expect(protocolFor(schema, { configuration: cm })).toEqual({
      minReaderVersion: 2,
      minWriterVersion: 5,
    });
    expect(
      protocolFor(schema, {
        configuration: { ...cm, 'delta.enableDeletionVectors': 'true' },
        domainMetadata: true,
      }),
    ).toEqual({
      minReaderVersion: 3,
      minWriterVersion: 7,
      readerFeatures: ['deletionVectors', 'columnMapping'],
      writerFeatures: ['deletionVectors', 'columnMapping', 'domainMetadata'],
    });
    expect(protocolFor(schema, { configuration: cm, domainMetadata: true })).toEqual({
      minReaderVersion: 3,
      minWriterVersion: 7,
      readerFeatures: ['columnMapping'],
      writerFeatures: ['columnMapping', 'domainMetadata'],
    });
  });
});
