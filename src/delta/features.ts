/**
 * Protocol gates (docs/delta-protocol.md, Protocol and table features): may tidemark read, or write, a table with this protocol
 * and metadata? Legacy versions imply their features; reader 3 / writer 7 list them.
 * Unknown feature names are refused. Refusals are UnsupportedFeatureError naming the feature.
 */
import { UnsupportedFeatureError } from '../errors.js';
import type { Metadata, Protocol } from './actions.js';
import { changeDataFeedEnabled, reservedChangeColumn } from './change-data.js';
import { columnMappingProblem } from './column-mapping.js';
import { parseSchema, type DataType, type StructField } from './schema.js';
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

/** Features implied by legacy writer versions 2..6, cumulatively. */
const LEGACY_WRITER_FEATURES: ReadonlyArray<[number, string[]]> = [
  [2, ['appendOnly', 'invariants']],
  [3, ['checkConstraints']],
  [4, ['changeDataFeed', 'generatedColumns']],
  [5, ['columnMapping']],
  [6, ['identityColumns']],
];

type Access = 'read' | 'write';
/** Why a feature cannot be honoured for this table, or null when it can. */
type Check = (metadata: Metadata, protocol: Protocol) => string | null;

const WRITE_CHECKS: Readonly<Record<string, Check>> = {
  appendOnly: () => null, // enforced by the commit path (no dataChange removes)
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
  changeDataFeed: (m) => {
    const reserved = changeDataFeedEnabled(m) ? reservedChangeColumn(parseSchema(m.schemaString)) : null;
    return reserved === null ? null : `delta.enableChangeDataFeed is true and column ${reserved} has a name change-feed readers reserve`;
  },
  generatedColumns: (m) =>
    anyField(m, (f) => 'delta.generationExpression' in f.metadata) ? 'a column is a generated column' : null,
  identityColumns: (m) =>
    anyField(m, (f) => Object.keys(f.metadata).some((k) => k.startsWith('delta.identity.')))
      ? 'a column is an identity column'
      : null,
  // Physical names, field ids, physical partition and stats keys, new ids on new columns.
  columnMapping: columnMappingCheck,
  // Files are written in the current type; tidemark never widens a column itself.
  typeWidening: typeWideningCheck,
  'typeWidening-preview': typeWideningCheck,
};

const READ_CHECKS: Readonly<Record<string, Check>> = {
  timestampNtz: () => null,
  deletionVectors: () => null,
  columnMapping: columnMappingCheck,
  // Every file is cast to the current type when read.
  typeWidening: typeWideningCheck,
  'typeWidening-preview': typeWideningCheck,
};

/** Modes name and id are read and written; an unknown mode or an unmapped field is not. */
function columnMappingCheck(m: Metadata, protocol: Protocol): string | null {
  return columnMappingProblem(protocol, m, parseSchema(m.schemaString));
}

function typeWideningCheck(m: Metadata): string | null {
  return typeWideningProblem(parseSchema(m.schemaString), m.partitionColumns ?? []);
}

/**
 * Throw UnsupportedFeatureError unless tidemark can read the table: reader version 1, 2 (column
 * mapping), or 3 with only supported reader features.
 */
export function assertReadable(protocol: Protocol, metadata: Metadata, uri: string): void {
  failOn(readProblems(protocol, metadata), 'read', uri);
}

/**
 * Throw UnsupportedFeatureError unless tidemark can write the table: it must be readable,
 * and every writer feature (implied by a legacy version or listed at writer 7) supported
 * for this table's schema and configuration.
 */
export function assertWritable(protocol: Protocol, metadata: Metadata, uri: string): void {
  const problems = readProblems(protocol, metadata);
  const version = protocol.minWriterVersion;
  if (version > 7) problems.push({ feature: `minWriterVersion=${version}`, detail: 'unknown writer version', blocks: 'write' });
  for (const feature of writerFeatures(protocol)) {
    const check = WRITE_CHECKS[feature];
    const detail = check ? check(metadata, protocol) : 'not supported for writing';
    if (detail !== null) problems.push({ feature, detail, blocks: 'write' });
  }
  failOn(problems, 'write', uri);
}

/** The reader features in force: listed at reader version 3, `columnMapping` implied by version 2. */
export function readerFeatures(protocol: Protocol): string[] {
  if (protocol.minReaderVersion >= 3) return [...(protocol.readerFeatures ?? [])];
  return protocol.minReaderVersion === 2 ? ['columnMapping'] : [];
}

/**
 * The protocol with one more table feature: writer 7 with every legacy-implied feature listed
 * (PROTOCOL.md "Table Features for New and Existing Tables"), and, for a feature readers must
 * know (`reader`), reader 3 with it in the reader list too.
 */
export function withTableFeature(protocol: Protocol, feature: string, opts: { reader: boolean }): Protocol {
  const writers = [...writerFeatures(protocol)];
  if (!writers.includes(feature)) writers.push(feature);
  const upgraded: Protocol = { minReaderVersion: protocol.minReaderVersion, minWriterVersion: 7, writerFeatures: writers };
  if (opts.reader || protocol.minReaderVersion >= 3) {
    const readers = readerFeatures(protocol);
    if (opts.reader && !readers.includes(feature)) readers.push(feature);
    upgraded.minReaderVersion = 3;
    upgraded.readerFeatures = readers;
  }
  return upgraded;
}

/**
 * True when writers must record a change data feed (./change-data.ts): the protocol supports
 * `changeDataFeed` (writer 4–6, or listed at 7) and `delta.enableChangeDataFeed` is true.
 */
export function changeDataFeedActive(protocol: Protocol, metadata: Metadata): boolean {
  return writerFeatures(protocol).includes('changeDataFeed') && changeDataFeedEnabled(metadata);
}

/** The writer features in force: implied by versions 2..6, listed at version 7. */
export function writerFeatures(protocol: Protocol): string[] {
  if (protocol.minWriterVersion >= 7) {
    return unique([...(protocol.writerFeatures ?? []), ...(protocol.readerFeatures ?? [])]);
  }
  return LEGACY_WRITER_FEATURES.filter(([v]) => protocol.minWriterVersion >= v).flatMap(([, names]) => names);
}

interface Problem {
  feature: string;
  detail: string;
  /** The access the feature rules out: a read problem rules out writing too. */
  blocks: Access;
}

function readProblems(protocol: Protocol, metadata: Metadata): Problem[] {
  const problems: Problem[] = [];
  const version = protocol.minReaderVersion;
  const features = version >= 3 ? (protocol.readerFeatures ?? []) : version === 2 ? ['columnMapping'] : [];
  if (version > 3) problems.push({ feature: `minReaderVersion=${version}`, detail: 'unknown reader version', blocks: 'read' });
  // A columnMapping.mode property the protocol does not support is ignored (PROTOCOL.md "Column Mapping").
  for (const feature of unique(features)) {
    if (READER_NEUTRAL.has(feature)) continue;
    const check = READ_CHECKS[feature];
    const detail = check ? check(metadata, protocol) : 'not supported for reading';
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

function unique(names: string[]): string[] {
  return [...new Set(names)];
}

/** True when any field of the schema, at any depth, satisfies `test`. */
function anyField(metadata: Metadata, test: (field: StructField) => boolean): boolean {
  const visit = (type: DataType): boolean => {
    if (typeof type === 'string') return false;
    if (type.type === 'struct') return type.fields.some((f) => test({ ...f, metadata: f.metadata ?? {} }) || visit(f.type));
    if (type.type === 'array') return visit(type.elementType);
    return visit(type.keyType) || visit(type.valueType);
  };
  return visit(parseSchema(metadata.schemaString));
}

function usesType(type: DataType, name: string): boolean {
  if (typeof type === 'string') return type === name;
  if (type.type === 'struct') return type.fields.some((f) => usesType(f.type, name));
  if (type.type === 'array') return usesType(type.elementType, name);
  return usesType(type.keyType, name) || usesType(type.valueType, name);
}
