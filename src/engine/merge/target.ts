/**
 * The table side of a write: its schema and partitioning (from the snapshot, or from the batch
 * when the write creates the table), how the batch's columns feed it, and the prepared batch.
 */
import type { Action, Metadata, Protocol } from '../../delta/actions.js';
import {
  evolveMappedMetadata,
  mapNewTable,
  type ColumnMappingMode,
} from '../../delta/column-mapping.js';
import { assertWritable } from '../../delta/features.js';
import { addFileFor } from '../../delta/file-actions.js';
import { createTableRequest } from '../../delta/table-create.js';
import type { CommitRequest } from '../../delta/transaction.js';
import { usesType, type StructType } from '../../delta/schema.js';
import type { Snapshot } from '../../delta/snapshot.js';
import {
  MATERIALIZED_ROW_ID_COLUMN,
  MATERIALIZED_ROW_VERSION_COLUMN,
} from '../../delta/table-properties.js';
import { MergeInputError, SchemaError } from '../../errors.js';
import type { OutputOptions } from '../data-file-io.js';
import type { WrittenFile } from '../data-files.js';
import type { DuckSession } from '../duckdb.js';
import { statsPolicyOf } from '../file-stats.js';
import { DEFAULT_TRANSFER_CONCURRENCY } from '../local-copies.js';
import { parseDuckType } from '../duck-type.js';
import { nestedAdditions, withNewFields } from '../nested-fit.js';
import { describeRelation } from '../relation.js';
import { ident } from '../sql.js';
import { prepareBatch, type PreparedBatch } from './batch.js';
import {
  dataColumns,
  evolveSchema,
  newColumns,
  newTableSchema,
  planColumns,
  requireColumns,
  tableName,
  type ColumnPlan,
  type ColumnType,
} from './columns.js';
import { DELETE_FLAG, BATCH_SOURCE_FILE, BATCH_SOURCE_ROW } from './temp-names.js';
import { DEFAULT_SOURCE_FILE_COLUMN, type WriteTarget } from './options.js';
import { TableConfig } from '../../delta/table-config.js';

/** The table being written, as this write sees it. */
export interface TargetTable {
  schema: StructType;
  partitionColumns: string[];
  /** True when the table does not exist yet and this write creates it. */
  creating: boolean;
  /**
   * The table's metaData with the evolved schema, to commit with the data, when the batch brings
   * new columns (schemaEvolution 'addColumns'); null when the schema is unchanged.
   */
  metadata: Metadata | null;
  /**
   * The protocol with the features a new column needs (`timestampNtz` for a timestamp_ntz column
   * the table had none of), to commit with `metadata`; null when the protocol is unchanged.
   */
  protocol: Protocol | null;
  /**
   * The table as this write's commit leaves it (the snapshot's protocol, `metadata` when the schema
   * evolves): what it asks of the rows and files written. Null when the write creates the table.
   */
  config: TableConfig | null;
  /** Names of the columns this write adds to the table. */
  addedColumns: string[];
  /** How data files name the columns (`schema` carries the ids and physical names). */
  columnMapping: ColumnMappingMode;
  /** Properties a table this write creates takes (column mapping's mode and maxColumnId); {} otherwise. */
  properties: Record<string, string>;
  plan: ColumnPlan;
  batch: PreparedBatch;
}

/** What preparing needs beyond the write target. */
export interface PrepareTargetOptions {
  snapshot: Snapshot | null;
  /** Name of the temp table for the prepared batch. */
  batchTable: string;
  /** Columns that must come from the batch (key and orderBy), with their role for messages. */
  required?: { role: string; columns: string[] }[];
  deleteWhen?: string;
  /** Prepare the batch as a checked view, not a copy (see ./batch.ts). */
  lazy?: boolean;
}

/** Work out the table schema and column plan, then prepare the batch in that schema. */
export async function prepareTarget(
  session: DuckSession,
  target: WriteTarget,
  opts: PrepareTargetOptions,
): Promise<TargetTable> {
  const uri = target.storage.uri;
  // Refuse a table tidemark cannot write before any work (the commit checks again).
  if (opts.snapshot) assertWritable(opts.snapshot.protocol, opts.snapshot.metadata, uri);
  const sourceColumns = await describeRelation(session, target.batch);
  refuseReservedNames(
    sourceColumns.map((c) => c.name),
    target.batch,
  );
  const internal = target.internalColumns ?? [];
  const creating = opts.snapshot === null;
  const columnMapping = mappingOf(opts.snapshot, target);
  const created = creating
    ? mapNewTable(
        newTableSchema(dataColumns(sourceColumns, internal), target.declaredTypes),
        columnMapping,
      )
    : null;
  const evolved = opts.snapshot
    ? await evolve(session, target, opts.snapshot, sourceColumns)
    : null;
  const schema = evolved?.schema ?? opts.snapshot?.schema ?? created!.schema;
  const partitionColumns =
    opts.snapshot?.partitionColumns ?? resolvePartitionBy(schema, target.partitionBy ?? [], uri);
  const plan = planColumns(sourceColumns, schema, internal, uri);
  for (const r of opts.required ?? []) requireColumns(plan, r.columns, r.role, uri);
  const batch = await prepareBatch(session, {
    source: target.batch,
    table: opts.batchTable,
    plan,
    sourceColumns,
    ...(opts.deleteWhen === undefined ? {} : { deleteWhen: opts.deleteWhen }),
    sourceFileColumn: target.sourceFileColumn ?? DEFAULT_SOURCE_FILE_COLUMN,
    ...(target.sourceRowColumn === undefined ? {} : { sourceRowColumn: target.sourceRowColumn }),
    lazy: opts.lazy === true,
  });
  const metadata = evolved?.metadata ?? null;
  // A new column can make a feature unwritable (a name a change data feed reserves): refuse before reading.
  if (metadata && opts.snapshot) assertWritable(opts.snapshot.protocol, metadata, uri);
  const properties = created?.configuration ?? {};
  const protocol = metadata && opts.snapshot ? protocolForNewColumns(opts.snapshot, schema) : null;
  const changes: Action[] = [
    ...(protocol ? [{ protocol }] : []),
    ...(metadata ? [{ metaData: metadata }] : []),
  ];
  const config = opts.snapshot ? TableConfig.after(opts.snapshot, changes, uri) : null;
  return {
    schema,
    partitionColumns,
    creating,
    metadata,
    protocol,
    config,
    addedColumns: evolved?.added ?? [],
    columnMapping,
    properties,
    plan,
    batch,
  };
}

/** A column added as timestamp_ntz needs the timestampNtz reader and writer feature (a new table gets it in ../../delta/table-create.ts). */
function protocolForNewColumns(snapshot: Snapshot, schema: StructType): Protocol | null {
  const table = TableConfig.of(snapshot.protocol, snapshot.metadata);
  if (!usesType(schema, 'timestamp_ntz') || table.supports('timestampNtz')) return null;
  return table.withFeature('timestampNtz', { reader: true });
}

/** The table's column mapping mode, or for a new table the one asked for; asking to switch an existing table's mode is refused. */
function mappingOf(snapshot: Snapshot | null, target: WriteTarget): ColumnMappingMode {
  if (!snapshot) return target.columnMapping ?? 'none';
  const mode = TableConfig.of(snapshot.protocol, snapshot.metadata).columnMapping;
  if (target.columnMapping !== undefined && target.columnMapping !== mode) {
    // A setting that contradicts the table: fix the config (usage), nothing was written.
    throw new SchemaError(
      `[merge] table ${target.storage.uri} has column mapping mode '${mode}', but columnMapping '${target.columnMapping}' was asked for: tidemark never changes a table's column mapping mode`,
      { kind: 'usage', context: { uri: target.storage.uri, feature: 'columnMapping' } },
    );
  }
  return mode;
}

/**
 * Schema evolution: the table's schema plus the batch columns it lacks, and the metaData to
 * commit with it (null when there are none). Under column mapping the new columns, nested fields
 * included, get fresh ids and physical names and maxColumnId is raised. Under
 * `schemaEvolution: 'fail'` (the engine's default) they are a SchemaError naming the columns and
 * the files whose rows hold values for them.
 */
async function evolve(
  session: DuckSession,
  target: WriteTarget,
  snapshot: Snapshot,
  sourceColumns: readonly ColumnType[],
): Promise<{ schema: StructType; metadata: Metadata; added: string[] } | null> {
  const extra = newColumns(sourceColumns, snapshot.schema, target.internalColumns ?? []);
  const nested = nestedFieldsAdded(sourceColumns, snapshot.schema);
  if (extra.length === 0 && nested.length === 0) return null;
  refuseHiddenColumnNames(
    extra.map((c) => c.name),
    snapshot,
    target.storage.uri,
  );
  if (target.schemaEvolution === 'addColumns') {
    const schema = evolveSchema(
      withNestedFields(snapshot.schema, sourceColumns),
      extra,
      target.declaredTypes,
    );
    const added = [...extra.map((c) => c.name), ...nested];
    if (TableConfig.of(snapshot.protocol, snapshot.metadata).columnMapping !== 'none')
      return { ...evolveMappedMetadata(snapshot.metadata, schema), added };
    return {
      schema,
      metadata: { ...snapshot.metadata, schemaString: JSON.stringify(schema) },
      added,
    };
  }
  if (extra.length === 0) {
    throw new SchemaError(
      `[merge] the batch has fields that table ${target.storage.uri} lacks: ${nested.map((n) => JSON.stringify(n)).join(', ')}; schemaEvolution is 'fail' (set it to 'addColumns' to add them)`,
      { context: { uri: target.storage.uri, column: nested[0]!, columns: nested } },
    );
  }
  const fileColumn = target.sourceFileColumn ?? DEFAULT_SOURCE_FILE_COLUMN;
  const hasFiles = sourceColumns.some((c) => c.name.toLowerCase() === fileColumn.toLowerCase());
  const files = hasFiles ? await filesWithValues(session, target.batch, extra, fileColumn) : [];
  throw new SchemaError(
    `[merge] the batch has columns that table ${target.storage.uri} lacks: ${extra.map((c) => JSON.stringify(c.name)).join(', ')}` +
      (files.length > 0 ? ` (in ${files.join(', ')})` : '') +
      "; schemaEvolution is 'fail' (set it to 'addColumns' to add them)",
    {
      context: {
        uri: target.storage.uri,
        column: extra[0]!.name,
        columns: extra.map((c) => c.name),
        ...(files[0] ? { key: files[0], files } : {}),
      },
    },
  );
}

/** Struct fields the batch's columns add to the table's columns of the same names (`obj.z`). */
function nestedFieldsAdded(sourceColumns: readonly ColumnType[], schema: StructType): string[] {
  return sourceColumns.flatMap((c) => {
    const field = schema.fields.find((f) => f.name.toLowerCase() === c.name.toLowerCase());
    return field ? nestedAdditions(c.type, field.type, field.name) : [];
  });
}

/** The schema with the struct fields the batch adds appended where they belong. */
function withNestedFields(schema: StructType, sourceColumns: readonly ColumnType[]): StructType {
  return {
    ...schema,
    fields: schema.fields.map((f) => {
      const c = sourceColumns.find((sc) => sc.name.toLowerCase() === f.name.toLowerCase());
      return c && nestedAdditions(c.type, f.type, f.name).length > 0
        ? { ...f, type: withNewFields(f.type, parseDuckType(c.type), f.name) }
        : f;
    }),
  };
}

/**
 * Row tracking's hidden columns (named by the table's properties) live in the data files beside
 * the schema's: a new column may never take one of their names (PROTOCOL.md "Row Tracking").
 */
function refuseHiddenColumnNames(names: readonly string[], snapshot: Snapshot, uri: string): void {
  const config = snapshot.metadata.configuration ?? {};
  const hidden = [config[MATERIALIZED_ROW_ID_COLUMN], config[MATERIALIZED_ROW_VERSION_COLUMN]]
    .filter((n): n is string => !!n)
    .map((n) => n.toLowerCase());
  const clash = names.find((n) => hidden.includes(n.toLowerCase()));
  if (clash === undefined) return;
  throw new SchemaError(
    `[merge] the batch's new column ${JSON.stringify(clash)} has the name of a hidden row-tracking column of table ${uri}`,
    {
      context: { uri, column: clash },
    },
  );
}

/** Up to 10 source files with a non-NULL value in one of `columns`. */
async function filesWithValues(
  session: DuckSession,
  batch: string,
  columns: readonly ColumnType[],
  fileColumn: string,
): Promise<string[]> {
  const any = columns.map((c) => `${ident(c.name)} IS NOT NULL`).join(' OR ');
  const rows = await session.all(
    `SELECT DISTINCT CAST(${ident(fileColumn)} AS VARCHAR) AS f FROM ${ident(batch)} WHERE ${any} ORDER BY 1 LIMIT 10`,
  );
  return rows.map((r) => String(r['f']));
}

/**
 * The metaData (and protocol) actions of this write's commit: the evolved schema when the batch
 * brought new columns, and, when the commit writes the table's first deletion vectors
 * (`enableDvs`), the `deletionVectors` feature and `delta.enableDeletionVectors=true` (one
 * metaData action holding both); a protocol action when a new column needs a feature.
 */
export function metadataActions(target: TargetTable, enableDvs: boolean): Action[] {
  if (enableDvs && target.config) return target.config.enablingDeletionVectors();
  return [
    ...(target.protocol ? [{ protocol: target.protocol }] : []),
    ...(target.metadata ? [{ metaData: target.metadata }] : []),
  ];
}

/**
 * Version 0 of a table a write creates: its schema and layout, `configuration`, the written
 * files as adds (stamped `now`) and the commit's parameters and metrics. One home for the four
 * modes that can create a table (merge, scd2, append, replace).
 */
export function newTableRequest(
  target: TargetTable,
  input: {
    configuration: Record<string, string>;
    added: readonly WrittenFile[];
    now: number;
    operationParameters?: Record<string, unknown>;
    operationMetrics: Record<string, string>;
  },
): CommitRequest {
  return createTableRequest(
    {
      schema: target.schema,
      partitionColumns: target.partitionColumns,
      configuration: input.configuration,
      actions: input.added.map((f) => ({ add: addFileFor(f, { modificationTime: input.now }) })),
      ...(input.operationParameters ? { operationParameters: input.operationParameters } : {}),
      operationMetrics: input.operationMetrics,
    },
    input.now,
  );
}

/** partitionBy names in the schema's spelling; an unknown one is a SchemaError. */
function resolvePartitionBy(
  schema: StructType,
  partitionBy: readonly string[],
  uri: string,
): string[] {
  return partitionBy.map((name) => {
    const field = schema.fields.find((f) => f.name.toLowerCase() === name.toLowerCase());
    if (!field) {
      throw new SchemaError(
        `[merge] partitionBy column ${JSON.stringify(name)} is not a column of the batch for new table ${uri}`,
        {
          context: { uri, column: name },
        },
      );
    }
    return field.name;
  });
}

/** Internal column names could be shadowed by a batch column of the same name. */
function refuseReservedNames(names: readonly string[], batch: string): void {
  const reserved = new Set(
    [DELETE_FLAG, BATCH_SOURCE_FILE, BATCH_SOURCE_ROW].map((n) => n.toLowerCase()),
  );
  const clash = names.find(
    (n) => reserved.has(n.toLowerCase()) || n.toLowerCase().startsWith('__tm_'),
  );
  if (clash !== undefined) {
    throw new MergeInputError(
      `[merge] batch ${batch} has a column named ${JSON.stringify(clash)}; names starting with __tm_ are reserved`,
      {
        context: { column: clash },
      },
    );
  }
}

/** The table's spelling of each name (names are unique ignoring case). */
export function tableNames(target: TargetTable, names: readonly string[]): string[] {
  return names.map((n) => tableName(target.plan, n));
}

/** The output options of a write into `target`'s table, from the write's own options. */
export function outputOptionsFor(opts: WriteTarget, target: TargetTable): OutputOptions {
  return {
    session: opts.session,
    storage: opts.storage,
    schema: target.schema,
    partitionColumns: target.partitionColumns,
    columnMapping: target.columnMapping,
    spool: opts.spool,
    concurrency: opts.concurrency ?? DEFAULT_TRANSFER_CONCURRENCY,
    stats: statsPolicyOf(opts.snapshot),
    ...(opts.signal ? { signal: opts.signal } : {}),
  };
}
