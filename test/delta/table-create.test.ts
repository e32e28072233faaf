/**
 * The first commit of a new table, planned purely (no storage): the lowest protocol that covers
 * the schema and the actions, a metaData action with Spark's schemaString, refusals of schemas
 * Delta readers cannot use (a SchemaError naming the column), and the version-0 commit request.
 */
import { describe, expect, it } from 'vitest';
import type { Action } from '../../src/delta/actions.js';
import type { DataType, StructField, StructType } from '../../src/delta/schema.js';
import {
  createTableRequest,
  metadataFor,
  protocolFor,
  schemaString,
} from '../../src/delta/table-create.js';
import { SchemaError } from '../../src/errors.js';

function field(name: string, type: DataType): StructField {
  return { name, type, nullable: true, metadata: {} };
}

function struct(...fields: StructField[]): StructType {
  return { type: 'struct', fields };
}

const PLAIN = struct(
  field('id', 'long'),
  field('day', 'date'),
  field('ts', 'timestamp'),
  field('amount', 'decimal(10,2)'),
);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** The SchemaError `fn` throws; fails the test when it throws nothing or something else. */
function schemaErrorOf(fn: () => unknown): SchemaError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(SchemaError);
    return err as SchemaError;
  }
  throw new Error('expected a SchemaError, but nothing was thrown');
}

describe('protocolFor', () => {
  it('asks for reader 1 / writer 2 when no table feature is needed (timestamp with zone included)', () => {
    expect(protocolFor(PLAIN)).toEqual({ minReaderVersion: 1, minWriterVersion: 2 });
  });

  it('keeps writer 2 for delta.appendOnly alone: writer 2 covers it without table features', () => {
    expect(protocolFor(PLAIN, { configuration: { 'delta.appendOnly': 'true' } })).toEqual({
      minReaderVersion: 1,
      minWriterVersion: 2,
    });
  });

  it('asks for reader 3 / writer 7 with timestampNtz on both sides when the schema uses timestamp_ntz anywhere', () => {
    const nested: StructType[] = [
      struct(field('id', 'long'), field('local', 'timestamp_ntz')),
      struct(field('s', struct(field('inner', 'timestamp_ntz')))),
      struct(field('a', { type: 'array', elementType: 'timestamp_ntz', containsNull: true })),
      struct(
        field('m', {
          type: 'map',
          keyType: 'string',
          valueType: { type: 'array', elementType: 'timestamp_ntz', containsNull: true },
          valueContainsNull: true,
        }),
      ),
      struct(
        field('k', {
          type: 'map',
          keyType: 'timestamp_ntz',
          valueType: 'long',
          valueContainsNull: true,
        }),
      ),
    ];
    for (const schema of nested) {
      expect(protocolFor(schema), JSON.stringify(schema)).toEqual({
        minReaderVersion: 3,
        minWriterVersion: 7,
        readerFeatures: ['timestampNtz'],
        writerFeatures: ['timestampNtz'],
      });
    }
  });

  it('asks for writer 7 with domainMetadata (reader 1) when the commits carry domain metadata', () => {
    expect(protocolFor(PLAIN, { domainMetadata: true })).toEqual({
      minReaderVersion: 1,
      minWriterVersion: 7,
      writerFeatures: ['domainMetadata'],
    });
  });

  it('lists appendOnly among the writer features once at writer 7, whatever the case of "true"', () => {
    expect(
      protocolFor(PLAIN, { domainMetadata: true, configuration: { 'delta.appendOnly': 'TRUE' } }),
    ).toEqual({
      minReaderVersion: 1,
      minWriterVersion: 7,
      writerFeatures: ['domainMetadata', 'appendOnly'],
    });
    const ntz = struct(field('local', 'timestamp_ntz'), field('v', 'long'));
    expect(
      protocolFor(ntz, { domainMetadata: true, configuration: { 'delta.appendOnly': 'true' } }),
    ).toEqual({
      minReaderVersion: 3,
      minWriterVersion: 7,
      readerFeatures: ['timestampNtz'],
      writerFeatures: ['timestampNtz', 'domainMetadata', 'appendOnly'],
    });
    expect(
      protocolFor(PLAIN, { domainMetadata: true, configuration: { 'delta.appendOnly': 'false' } })
        .writerFeatures,
    ).toEqual(['domainMetadata']);
  });
});

describe('schemaString', () => {
  it("writes every field's keys in Spark's order: name, type, nullable, metadata", () => {
    const text = schemaString(
      struct({
        metadata: { comment: 'c' },
        nullable: false,
        type: 'long',
        name: 'id',
      } as StructField),
    );
    expect(text).toBe(
      '{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":{"comment":"c"}}]}',
    );
  });

  it('fills in the defaults a hand-written schema leaves out: nullable, metadata, containsNull, valueContainsNull', () => {
    const sparse = JSON.parse(
      '{"type":"struct","fields":[{"name":"tags","type":{"type":"array","elementType":"string"}},' +
        '{"name":"attrs","type":{"type":"map","keyType":"string","valueType":{"type":"struct","fields":[{"name":"x","type":"integer"}]}}}]}',
    ) as StructType;
    expect(JSON.parse(schemaString(sparse))).toEqual({
      type: 'struct',
      fields: [
        {
          name: 'tags',
          type: { type: 'array', elementType: 'string', containsNull: true },
          nullable: true,
          metadata: {},
        },
        {
          name: 'attrs',
          type: {
            type: 'map',
            keyType: 'string',
            valueType: {
              type: 'struct',
              fields: [{ name: 'x', type: 'integer', nullable: true, metadata: {} }],
            },
            valueContainsNull: true,
          },
          nullable: true,
          metadata: {},
        },
      ],
    });
  });

  it('keeps containsNull and valueContainsNull when they are false, and the key order of nested types', () => {
    const schema = struct(
      field('a', { containsNull: false, elementType: 'long', type: 'array' } as DataType),
      field('m', {
        valueContainsNull: false,
        valueType: 'long',
        keyType: 'string',
        type: 'map',
      } as DataType),
    );
    expect(schemaString(schema)).toBe(
      '{"type":"struct","fields":[' +
        '{"name":"a","type":{"type":"array","elementType":"long","containsNull":false},"nullable":true,"metadata":{}},' +
        '{"name":"m","type":{"type":"map","keyType":"string","valueType":"long","valueContainsNull":false},"nullable":true,"metadata":{}}]}',
    );
  });
});

describe('metadataFor', () => {
  it('describes a parquet table with the schemaString, partition columns, a copy of the configuration and the time', () => {
    const configuration = { 'delta.appendOnly': 'false', owner: 'ingest' };
    const meta = metadataFor(
      {
        schema: PLAIN,
        partitionColumns: ['day'],
        configuration,
        name: 'orders',
        description: 'latest orders',
      },
      1234,
    );
    expect(meta).toEqual({
      id: expect.stringMatching(UUID),
      name: 'orders',
      description: 'latest orders',
      format: { provider: 'parquet', options: {} },
      schemaString: schemaString(PLAIN),
      partitionColumns: ['day'],
      configuration,
      createdTime: 1234,
    });
    expect(meta.configuration).not.toBe(configuration);
  });

  it('leaves name and description out when not given, defaults to no partitions, and gives every table a new id', () => {
    const a = metadataFor({ schema: PLAIN }, 1);
    expect(Object.keys(a)).not.toContain('name');
    expect(Object.keys(a)).not.toContain('description');
    expect(a).toMatchObject({ partitionColumns: [], configuration: {} });
    expect(metadataFor({ schema: PLAIN }, 1).id).not.toBe(a.id);
  });

  it('refuses column names that are equal ignoring case, at the top level, naming the column', () => {
    const err = schemaErrorOf(() =>
      metadataFor({ schema: struct(field('Id', 'long'), field('id', 'string')) }, 1),
    );
    expect(err.message).toBe(
      "[delta] cannot create table: column names must be unique ignoring case: 'id'",
    );
    expect(err.context).toEqual({ column: 'id' });
  });

  it('refuses names equal ignoring case inside structs, array elements and map values, naming the path', () => {
    const cases: Array<[StructType, string]> = [
      [struct(field('s', struct(field('A', 'long'), field('a', 'long')))), 's.a'],
      [
        struct(
          field('list', {
            type: 'array',
            elementType: struct(field('x', 'long'), field('X', 'long')),
            containsNull: true,
          }),
        ),
        'list.element.X',
      ],
      [
        struct(
          field('m', {
            type: 'map',
            keyType: 'string',
            valueType: struct(field('v', 'long'), field('V', 'long')),
            valueContainsNull: true,
          }),
        ),
        'm.value.V',
      ],
    ];
    for (const [schema, column] of cases) {
      const err = schemaErrorOf(() => metadataFor({ schema }, 1));
      expect(err.context, column).toEqual({ column });
      expect(err.message).toContain(`'${column}'`);
    }
  });

  it('allows the same name in different structs', () => {
    expect(() =>
      metadataFor(
        {
          schema: struct(
            field('a', struct(field('id', 'long'))),
            field('b', struct(field('id', 'long'))),
          ),
        },
        1,
      ),
    ).not.toThrow();
  });

  it('refuses a partition column missing from the schema (names match exactly), naming it', () => {
    const missing = schemaErrorOf(() =>
      metadataFor({ schema: PLAIN, partitionColumns: ['region'] }, 1),
    );
    expect(missing.message).toBe(
      "[delta] cannot create table: partition column 'region' is not in the schema",
    );
    expect(missing.context).toEqual({ column: 'region' });
    expect(
      schemaErrorOf(() => metadataFor({ schema: PLAIN, partitionColumns: ['DAY'] }, 1)).context,
    ).toEqual({ column: 'DAY' });
  });

  it('refuses a partition column of a nested type, naming it', () => {
    const schema = struct(
      field('id', 'long'),
      field('where', struct(field('region', 'string'))),
      field('tags', { type: 'array', elementType: 'string', containsNull: true }),
    );
    for (const column of ['where', 'tags']) {
      const err = schemaErrorOf(() => metadataFor({ schema, partitionColumns: [column] }, 1));
      expect(err.message).toBe(
        `[delta] cannot create table: partition column '${column}' must have a primitive type`,
      );
      expect(err.context).toEqual({ column });
    }
  });

  it('refuses partitioning by every column (no data column left) and a partition column listed twice', () => {
    const two = struct(field('day', 'date'), field('region', 'string'));
    expect(
      schemaErrorOf(() => metadataFor({ schema: two, partitionColumns: ['day', 'region'] }, 1))
        .message,
    ).toContain('every column is a partition column');
    expect(
      schemaErrorOf(() => metadataFor({ schema: PLAIN, partitionColumns: ['day', 'day'] }, 1))
        .message,
    ).toContain('a partition column is listed twice');
    expect(() => metadataFor({ schema: two, partitionColumns: ['day'] }, 1)).not.toThrow();
  });
});

describe('createTableRequest', () => {
  it("creates version 0 with 'CREATE TABLE': protocol, then metaData, read version -1, nothing read", () => {
    const request = createTableRequest({ schema: PLAIN, partitionColumns: ['day'] }, 99);
    expect(request.operation).toBe('CREATE TABLE');
    expect(request.actions.map((a) => Object.keys(a)[0])).toEqual(['protocol', 'metaData']);
    expect(request.actions[0]).toEqual({ protocol: { minReaderVersion: 1, minWriterVersion: 2 } });
    expect(request.read).toEqual({ readVersion: -1, partitions: [], files: [], appIds: [] });
    expect(request.isBlindAppend).toBe(true);
    expect(request.operationParameters).toEqual({
      isManaged: false,
      description: null,
      partitionBy: ['day'],
      properties: {},
    });
    expect(request.operationMetrics).toEqual({});
  });

  it("names a table created with data 'CREATE TABLE AS SELECT' and appends the request's actions after protocol and metaData", () => {
    const extra: Action[] = [
      {
        add: {
          path: 'day=2025-03-01/a.parquet',
          partitionValues: { day: '2025-03-01' },
          size: 10,
          modificationTime: 1,
          dataChange: true,
        },
      },
      { txn: { appId: 'tidemark-orders', version: 0 } },
    ];
    const request = createTableRequest(
      {
        schema: PLAIN,
        partitionColumns: ['day'],
        actions: extra,
        operationMetrics: { numFiles: '1' },
      },
      99,
    );
    expect(request.operation).toBe('CREATE TABLE AS SELECT');
    expect(request.actions.slice(2)).toEqual(extra);
    expect(request.operationMetrics).toEqual({ numFiles: '1' });
    expect(request.read.readVersion).toBe(-1);
  });

  it('raises the protocol to writer 7 with domainMetadata when the first commit carries domain metadata', () => {
    const request = createTableRequest(
      {
        schema: PLAIN,
        actions: [
          {
            domainMetadata: { domain: 'tidemark.job.orders', configuration: '{}', removed: false },
          },
        ],
      },
      99,
    );
    expect(request.operation).toBe('CREATE TABLE');
    expect(request.actions[0]).toEqual({
      protocol: { minReaderVersion: 1, minWriterVersion: 7, writerFeatures: ['domainMetadata'] },
    });
  });

  it("reads delta.appendOnly from the table's configuration for the protocol, and lets the request's parameters override the defaults", () => {
    const request = createTableRequest(
      {
        schema: PLAIN,
        configuration: { 'delta.appendOnly': 'true' },
        description: 'd',
        actions: [{ domainMetadata: { domain: 'x', configuration: '{}', removed: false } }],
        operationParameters: { isManaged: true, mode: 'ErrorIfExists' },
      },
      99,
    );
    expect(request.actions[0]).toEqual({
      protocol: {
        minReaderVersion: 1,
        minWriterVersion: 7,
        writerFeatures: ['domainMetadata', 'appendOnly'],
      },
    });
    expect(request.operationParameters).toEqual({
      isManaged: true,
      description: 'd',
      partitionBy: [],
      properties: { 'delta.appendOnly': 'true' },
      mode: 'ErrorIfExists',
    });
    const meta = request.actions[1]!;
    expect('metaData' in meta && meta.metaData.createdTime).toBe(99);
  });

  it('refuses the same schemas metadataFor refuses, before planning anything', () => {
    expect(
      schemaErrorOf(() => createTableRequest({ schema: PLAIN, partitionColumns: ['nope'] }, 1))
        .context,
    ).toEqual({ column: 'nope' });
  });
});
