/**
 * The first commit of a new table, planned purely: the lowest protocol that covers the schema
 * and the actions, and a metaData action with a Spark-compatible schemaString
 * (docs/delta-protocol.md, Schema and types; Protocol and table features).
 */
import { randomUUID } from 'node:crypto';
import { SchemaError } from '../errors.js';
import type { Action, Metadata, Protocol } from './actions.js';
import { ENABLE_CHANGE_DATA_FEED } from './change-data.js';
import { COLUMN_MAPPING_MODE } from './column-mapping.js';
import { usesType, type DataType, type StructField, type StructType } from './schema.js';
import {
  APPEND_ONLY,
  CHECKPOINT_POLICY,
  ENABLE_DELETION_VECTORS,
  ENABLE_IN_COMMIT_TIMESTAMPS,
  ENABLE_ROW_TRACKING,
  MATERIALIZED_ROW_ID_COLUMN,
  MATERIALIZED_ROW_VERSION_COLUMN,
  isTrue,
} from './table-properties.js';
import type { CommitRequest } from './transaction.js';

/** What a new table looks like. */
export interface NewTableSpec {
  schema: StructType;
  /** Partition columns, in folder nesting order; default none. */
  partitionColumns?: string[];
  /** Table properties (`delta.*` and others), string to string. */
  configuration?: Record<string, string>;
  name?: string;
  description?: string;
}

/**
 * The lowest protocol for the table: {1,2} by default, {1,4} when it records a change data feed
 * (`delta.enableChangeDataFeed`) and needs nothing more, {2,5} with column mapping
 * (`delta.columnMapping.mode` name or id; writer 5 implies the feed's writer 4) and nothing more;
 * table features at reader 3 / writer 7 when the schema uses timestamp_ntz, or the properties ask
 * for deletion vectors (`delta.enableDeletionVectors`) or V2 checkpoints
 * (`delta.checkpointPolicy=v2`), with `columnMapping` listed for readers and writers when mapped;
 * writer 7 when they ask for row tracking (`delta.enableRowTracking`, with `domainMetadata`) or
 * in-commit timestamps (`delta.enableInCommitTimestamps`), or the commits carry domain metadata.
 * At writer 7, `appendOnly` and `changeDataFeed` are listed when their properties are set.
 */
export function protocolFor(
  schema: StructType,
  opts: { domainMetadata?: boolean; configuration?: Record<string, string> } = {},
): Protocol {
  const flag = (key: string) => isTrue(opts.configuration, key);
  const changeDataFeed = flag(ENABLE_CHANGE_DATA_FEED);
  const mapped = ['name', 'id'].includes(
    (opts.configuration?.[COLUMN_MAPPING_MODE] ?? 'none').toLowerCase(),
  );
  const readers: string[] = [];
  if (usesType(schema, 'timestamp_ntz')) readers.push('timestampNtz');
  if (flag(ENABLE_DELETION_VECTORS)) readers.push('deletionVectors');
  if ((opts.configuration?.[CHECKPOINT_POLICY] ?? '').toLowerCase() === 'v2')
    readers.push('v2Checkpoint');
  const writers: string[] = [];
  if (flag(ENABLE_ROW_TRACKING)) writers.push('rowTracking', 'domainMetadata');
  else if (opts.domainMetadata) writers.push('domainMetadata');
  if (flag(ENABLE_IN_COMMIT_TIMESTAMPS)) writers.push('inCommitTimestamp');
  if (readers.length === 0 && writers.length === 0) {
    if (mapped) return { minReaderVersion: 2, minWriterVersion: 5 };
    return { minReaderVersion: 1, minWriterVersion: changeDataFeed ? 4 : 2 };
  }
  if (mapped) readers.push('columnMapping');
  const writerFeatures = [...readers, ...writers];
  if (flag(APPEND_ONLY)) writerFeatures.push('appendOnly');
  if (changeDataFeed) writerFeatures.push('changeDataFeed');
  return readers.length > 0
    ? { minReaderVersion: 3, minWriterVersion: 7, readerFeatures: readers, writerFeatures }
    : { minReaderVersion: 1, minWriterVersion: 7, writerFeatures };
}

/**
 * The configuration of a new table: the given properties, plus the names of the hidden columns
 * that keep preserved row ids and commit versions when row tracking is enabled (fresh UUID names,
 * as Spark assigns them, so they never clash with a data column).
 */
function configurationFor(
  configuration: Record<string, string> | undefined,
): Record<string, string> {
  const config = { ...(configuration ?? {}) };
  if (isTrue(config, ENABLE_ROW_TRACKING)) {
    config[MATERIALIZED_ROW_ID_COLUMN] ??= `_row-id-col-${randomUUID()}`;
    config[MATERIALIZED_ROW_VERSION_COLUMN] ??= `_row-commit-version-col-${randomUUID()}`;
  }
  return config;
}

/** The metaData action of a new table; validates names and partition columns first. */
export function metadataFor(spec: NewTableSpec, createdTime: number): Metadata {
  const partitionColumns = spec.partitionColumns ?? [];
  checkSchema(spec.schema, partitionColumns);
  return {
    id: randomUUID(),
    ...(spec.name === undefined ? {} : { name: spec.name }),
    ...(spec.description === undefined ? {} : { description: spec.description }),
    format: { provider: 'parquet', options: {} },
    schemaString: schemaString(spec.schema),
    partitionColumns,
    configuration: configurationFor(spec.configuration),
    createdTime,
  };
}

/** protocol + metaData for version 0. */
export function createActions(
  spec: NewTableSpec,
  opts: { createdTime: number; domainMetadata?: boolean },
): Action[] {
  const metaData = metadataFor(spec, opts.createdTime);
  const protocol = protocolFor(spec.schema, {
    domainMetadata: opts.domainMetadata,
    configuration: metaData.configuration,
  });
  return [{ protocol }, { metaData }];
}

/** A new table: schema and layout, plus optional first data, txn and domain metadata in version 0. */
export interface CreateTableRequest extends NewTableSpec {
  /** add/txn/domainMetadata actions committed with the table (an initial full load). */
  actions?: Action[];
  operationParameters?: Record<string, unknown>;
  operationMetrics?: Record<string, string>;
}

/**
 * The commit creating the table as version 0 (read version -1): protocol and metaData, then the
 * request's actions. Operation `CREATE TABLE AS SELECT` when it holds data, as Spark writes it.
 */
export function createTableRequest(
  request: CreateTableRequest,
  createdTime: number,
): CommitRequest {
  const extra = request.actions ?? [];
  const domainMetadata = extra.some((a) => 'domainMetadata' in a);
  return {
    actions: [...createActions(request, { createdTime, domainMetadata }), ...extra],
    operation: extra.some((a) => 'add' in a) ? 'CREATE TABLE AS SELECT' : 'CREATE TABLE',
    operationParameters: {
      isManaged: false,
      description: request.description ?? null,
      partitionBy: request.partitionColumns ?? [],
      properties: request.configuration ?? {},
      ...request.operationParameters,
    },
    operationMetrics: request.operationMetrics ?? {},
    read: { readVersion: -1, partitions: [], files: [], appIds: [] },
    isBlindAppend: true,
  };
}

/** Spark StructType JSON with all four keys on every field, in Spark's key order. */
export function schemaString(schema: StructType): string {
  return JSON.stringify(normalizeType(schema));
}

function normalizeType(type: DataType): DataType {
  if (typeof type === 'string') return type;
  if (type.type === 'struct') return { type: 'struct', fields: type.fields.map(normalizeField) };
  if (type.type === 'array')
    return {
      type: 'array',
      elementType: normalizeType(type.elementType),
      containsNull: type.containsNull ?? true,
    };
  return {
    type: 'map',
    keyType: normalizeType(type.keyType),
    valueType: normalizeType(type.valueType),
    valueContainsNull: type.valueContainsNull ?? true,
  };
}

function normalizeField(field: StructField): StructField {
  return {
    name: field.name,
    type: normalizeType(field.type),
    nullable: field.nullable ?? true,
    metadata: field.metadata ?? {},
  };
}

/** Column names unique ignoring case (at every level); partition columns top-level primitives, not all columns. */
function checkSchema(schema: StructType, partitionColumns: string[]): void {
  checkUniqueNames(schema, '');
  const byName = new Map(schema.fields.map((f) => [f.name, f]));
  for (const column of partitionColumns) {
    const field = byName.get(column);
    if (!field) throw schemaError(`partition column '${column}' is not in the schema`, column);
    if (typeof field.type !== 'string')
      throw schemaError(`partition column '${column}' must have a primitive type`, column);
  }
  if (new Set(partitionColumns).size !== partitionColumns.length)
    throw schemaError('a partition column is listed twice');
  if (partitionColumns.length > 0 && partitionColumns.length >= schema.fields.length) {
    throw schemaError(
      'every column is a partition column; a Delta table needs at least one data column',
    );
  }
}

function checkUniqueNames(type: DataType, prefix: string): void {
  if (typeof type === 'string') return;
  if (type.type === 'array') return checkUniqueNames(type.elementType, `${prefix}element.`);
  if (type.type === 'map') {
    checkUniqueNames(type.keyType, `${prefix}key.`);
    return checkUniqueNames(type.valueType, `${prefix}value.`);
  }
  const seen = new Set<string>();
  for (const field of type.fields) {
    const lower = field.name.toLowerCase();
    if (seen.has(lower))
      throw schemaError(
        `column names must be unique ignoring case: '${prefix}${field.name}'`,
        prefix + field.name,
      );
    seen.add(lower);
    checkUniqueNames(field.type, `${prefix}${field.name}.`);
  }
}

function schemaError(message: string, column?: string): SchemaError {
  return new SchemaError(`[delta] cannot create table: ${message}`, {
    context: column === undefined ? {} : { column },
  });
}
