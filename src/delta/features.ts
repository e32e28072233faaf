/**
 * Protocol gates (docs/delta-protocol.md, Protocol and table features): may tidemark read, or write, a table with this protocol
 * and metadata? Legacy versions imply their features; reader 3 / writer 7 list them (which
 * features are in force is ./table-config.ts). Unknown feature names are refused. Refusals are
 * UnsupportedFeatureError naming the feature.
 */
import { UnsupportedFeatureError } from '../errors.js';
import type { Metadata, Protocol } from './actions.js';
import { reservedChangeColumn } from './change-data.js';
import { rowTrackingProblem } from './row-tracking.js';
import { columnMappingProblem } from './column-mapping.js';
import { parseSchema, usesType, type DataType, type StructField } from './schema.js';
import { TableConfig } from './table-config.js';
import { typeWideningProblem } from './type-widening.js';

/** Features that ask nothing of a reader (writer-only features, and vacuumProtocolCheck). */
const READER_NEUTRAL = new Set([
  'appendOnly',
  'invariants',
  'checkConstraints',
  'changeDataFeed',
  'generatedColumns',
  'allowColumnDefaults',
  'identityColumns',
  'domainMetadata',
  'rowTracking',
  'clustering',
  'liquid',
  'inCommitTimestamp',
  'icebergCompatV1',
  'icebergCompatV2',
  'icebergCompatV3',
  'icebergWriterCompatV1',
  'icebergWriterCompatV3',
  'checkpointProtection',
  'vacuumProtocolCheck',
]);

type Access = 'read' | 'write';
/** Why a feature cannot be honoured for this table, or null when it can. */
type Check = (metadata: Metadata, table: TableConfig) => string | null;

const WRITE_CHECKS: Readonly<Record<string, Check>> = {
  // A MERGE that would update or delete rows is refused before it writes (engine/merge), and the commit path refuses dataChange removes.
  appendOnly: () => null,
  // Honoured when reading and rewriting; written by MERGE when the table enables them.
  deletionVectors: () => null,
  timestampNtz: () => null,
  // Domains are carried forward by replay and checkpoints; the commit path refuses `delta.*` domains.
  domainMetadata: () => null,
  // Enforced on every row a write stores (engine/merge/constraints.ts); an expression DuckDB
  // cannot evaluate is refused there, naming it.
  invariants: () => null,
  checkConstraints: () => null,
  // Written by MERGE (change files for updates and deletes); appends need none.
  changeDataFeed: (m, table) => {
    const reserved = table.changeDataFeedRequested
      ? reservedChangeColumn(parseSchema(m.schemaString))
      : null;
    return reserved === null
      ? null
      : `delta.enableChangeDataFeed is true and column ${reserved} has a name change-feed readers reserve`;
  },
  generatedColumns: (m) =>
    anyField(m, (f) => 'delta.generationExpression' in f.metadata)
      ? 'a column is a generated column'
      : null,
  identityColumns: (m) =>
    anyField(m, (f) => Object.keys(f.metadata).some((k) => k.startsWith('delta.identity.')))
      ? 'a column is an identity column'
      : null,
  // Physical names, field ids, physical partition and stats keys, new ids on new columns.
  columnMapping: columnMappingCheck,
  // Files are written in the current type; tidemark never widens a column itself.
  typeWidening: typeWideningCheck,
  'typeWidening-preview': typeWideningCheck,
  // Fresh row ids are assigned per commit attempt (./row-tracking.ts); MERGE and OPTIMIZE preserve stable ids.
  rowTracking: (m, table) => rowTrackingProblem(table.writerFeatures, m),
  // Commit attempts carry a monotonic inCommitTimestamp as their first action (./in-commit-timestamp.ts).
  inCommitTimestamp: () => null,
  // Read with sidecars; checkpoints of such tables are written UUID-named (./checkpoint-v2.ts).
  v2Checkpoint: () => null,
  // The domain is carried untouched; new files are sorted by the clustering columns (./clustering.ts).
  clustering: (m, table) => {
    if (!table.supports('domainMetadata'))
      return 'clustering is listed without the domainMetadata feature it requires';
    return (m.partitionColumns ?? []).length > 0
      ? 'a clustered table cannot have partition columns'
      : null;
  },
};

const READ_CHECKS: Readonly<Record<string, Check>> = {
  timestampNtz: () => null,
  deletionVectors: () => null,
  // UUID-named checkpoints and their sidecars are read (./checkpoint-read.ts).
  v2Checkpoint: () => null,
  columnMapping: columnMappingCheck,
  // Every file is cast to the current type when read.
  typeWidening: typeWideningCheck,
  'typeWidening-preview': typeWideningCheck,
};

/** Modes name and id are read and written; an unknown mode or an unmapped field is not. */
function columnMappingCheck(m: Metadata, table: TableConfig): string | null {
  return table.columnMappingSupported ? columnMappingProblem(m, parseSchema(m.schemaString)) : null;
}

function typeWideningCheck(m: Metadata): string | null {
  return typeWideningProblem(parseSchema(m.schemaString), m.partitionColumns ?? []);
}

/**
 * Throw UnsupportedFeatureError unless tidemark can read the table: reader version 1, 2 (column
 * mapping), or 3 with only supported reader features.
 */
export function assertReadable(protocol: Protocol, metadata: Metadata, uri: string): void {
  failOn(readProblems(TableConfig.of(protocol, metadata)), 'read', uri);
}

/**
 * Throw UnsupportedFeatureError unless tidemark can write the table: it must be readable,
 * and every writer feature (implied by a legacy version or listed at writer 7) supported
 * for this table's schema and configuration.
 */
export function assertWritable(protocol: Protocol, metadata: Metadata, uri: string): void {
  const table = TableConfig.of(protocol, metadata);
  const problems = readProblems(table);
  const version = protocol.minWriterVersion;
  if (version > 7)
    problems.push({
      feature: `minWriterVersion=${version}`,
      detail: 'unknown writer version',
      blocks: 'write',
    });
  for (const feature of table.writerFeatures) {
    const check = WRITE_CHECKS[feature];
    const detail = check ? check(metadata, table) : 'not supported for writing';
    if (detail !== null) problems.push({ feature, detail, blocks: 'write' });
  }
  failOn(problems, 'write', uri);
}

interface Problem {
  feature: string;
  detail: string;
  /** The access the feature rules out: a read problem rules out writing too. */
  blocks: Access;
}

function readProblems(table: TableConfig): Problem[] {
  const { metadata } = table;
  const problems: Problem[] = [];
  const version = table.protocol.minReaderVersion;
  if (version > 3)
    problems.push({
      feature: `minReaderVersion=${version}`,
      detail: 'unknown reader version',
      blocks: 'read',
    });
  // A columnMapping.mode property the protocol does not support is ignored (PROTOCOL.md "Column Mapping").
  for (const feature of unique(table.readerFeatures)) {
    if (READER_NEUTRAL.has(feature)) continue;
    const check = READ_CHECKS[feature];
    const detail = check ? check(metadata, table) : 'not supported for reading';
    if (detail !== null) problems.push({ feature, detail, blocks: 'read' });
  }
  if (usesType(parseSchema(metadata.schemaString), 'variant')) {
    problems.push({ feature: 'variantType', detail: 'a column has type variant', blocks: 'read' });
  }
  return problems;
}

function failOn(problems: Problem[], access: Access, uri: string): void {
  const first = problems[0];
  if (!first) return;
  const others = problems.slice(1).map((p) => p.feature);
  const detail = first.detail + (others.length ? `; also unsupported: ${others.join(', ')}` : '');
  throw new UnsupportedFeatureError(first.feature, access, uri, detail, first.blocks);
}

function unique(names: readonly string[]): string[] {
  return [...new Set(names)];
}

/** True when any field of the schema, at any depth, satisfies `test`. */
function anyField(metadata: Metadata, test: (field: StructField) => boolean): boolean {
  const visit = (type: DataType): boolean => {
    if (typeof type === 'string') return false;
    if (type.type === 'struct')
      return type.fields.some((f) => test({ ...f, metadata: f.metadata ?? {} }) || visit(f.type));
    if (type.type === 'array') return visit(type.elementType);
    return visit(type.keyType) || visit(type.valueType);
  };
  return visit(parseSchema(metadata.schemaString));
}
