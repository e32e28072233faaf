/**
 * What a table's protocol and metadata mean (docs/delta-protocol.md, Protocol and table features):
 * the one place that answers "does this table have, or need, feature X". Build it for the table a
 * snapshot read (`TableConfig.of(snapshot.protocol, snapshot.metadata)`) or for the table a pending
 * commit leaves behind (`TableConfig.after`). A feature is in force when the
 * protocol supports it (implied by a legacy version, or listed at reader 3 / writer 7) and, where
 * it has one, its table property switches it on. Pure; the gates are in ./features.ts.
 */
import { DeltaLogError } from '../errors.js';
import type { Action, Metadata, Protocol } from './actions.js';
import { ENABLE_CHANGE_DATA_FEED } from './change-data.js';
import { mappingModeProperty, type ColumnMappingMode } from './column-mapping.js';
import {
  APPEND_ONLY,
  ENABLE_DELETION_VECTORS,
  ENABLE_IN_COMMIT_TIMESTAMPS,
  ENABLE_ROW_TRACKING,
  MATERIALIZED_ROW_ID_COLUMN,
  MATERIALIZED_ROW_VERSION_COLUMN,
  ROW_TRACKING_SUSPENDED,
  isTrue,
  numIndexedColumns,
} from './table-properties.js';

/** Features implied by legacy writer versions 2..6, cumulatively. */
const LEGACY_WRITER_FEATURES: ReadonlyArray<[number, string[]]> = [
  [2, ['appendOnly', 'invariants']],
  [3, ['checkConstraints']],
  [4, ['changeDataFeed', 'generatedColumns']],
  [5, ['columnMapping']],
  [6, ['identityColumns']],
];

/** What row tracking asks of a table's writers (PROTOCOL.md "Row Tracking"; ./row-tracking.ts). */
export interface RowTracking {
  /** New files must get baseRowId and defaultRowCommitVersion (supported, not suspended). */
  assignsIds: boolean;
  /**
   * Rows moved to new files must keep their stable ids and versions (enabled): the names of the
   * hidden columns to write them to. Null when the table does not ask for it.
   */
  materialized: { rowIdColumn: string; versionColumn: string } | null;
}

/** A table's protocol and metadata, read as the features they put in force. */
export class TableConfig {
  /** The reader features in force: listed at reader version 3, `columnMapping` implied by version 2. */
  readonly readerFeatures: readonly string[];
  /** The writer features in force: implied by versions 2..6, listed at version 7 (reader features included). */
  readonly writerFeatures: readonly string[];

  private constructor(
    readonly protocol: Protocol,
    readonly metadata: Metadata,
  ) {
    this.readerFeatures = readerFeaturesOf(protocol);
    this.writerFeatures = writerFeaturesOf(protocol);
  }

  static of(protocol: Protocol, metadata: Metadata): TableConfig {
    return new TableConfig(protocol, metadata);
  }

  /**
   * The table after a commit of `actions` on `base` (null when the commit creates the table): the
   * last protocol and metaData actions win over the base's. DeltaLogError when neither has them.
   */
  static after(
    base: { protocol: Protocol; metadata: Metadata } | null,
    actions: readonly Action[],
    uri: string,
  ): TableConfig {
    let protocol = base?.protocol;
    let metadata = base?.metadata;
    for (const a of actions) {
      if ('protocol' in a) protocol = a.protocol;
      if ('metaData' in a) metadata = a.metaData;
    }
    if (!protocol || !metadata) {
      throw new DeltaLogError(
        `[delta] commit to ${uri} has no protocol or metaData to commit against`,
        { context: { uri } },
      );
    }
    return new TableConfig(protocol, metadata);
  }

  /** True when the protocol supports this writer feature (whatever its table property says). */
  supports(feature: string): boolean {
    return this.writerFeatures.includes(feature);
  }

  /** Append-only: the feature supported and `delta.appendOnly` true (no data may be changed or removed). */
  get appendOnly(): boolean {
    return this.supports('appendOnly') && isTrue(this.metadata.configuration, APPEND_ONLY);
  }

  /** `delta.enableChangeDataFeed` is true, whatever the protocol says. */
  get changeDataFeedRequested(): boolean {
    return isTrue(this.metadata.configuration, ENABLE_CHANGE_DATA_FEED);
  }

  /**
   * Writers must record a change data feed (./change-data.ts): the protocol supports
   * `changeDataFeed` (writer 4–6, or listed at 7) and `delta.enableChangeDataFeed` is true.
   */
  get recordsChangeData(): boolean {
    return this.supports('changeDataFeed') && this.changeDataFeedRequested;
  }

  /**
   * True when the protocol supports column mapping for readers: reader 2, or reader 3 listing
   * `columnMapping`. Only then is `delta.columnMapping.mode` honoured (PROTOCOL.md "Column Mapping").
   */
  get columnMappingSupported(): boolean {
    return this.readerFeatures.includes('columnMapping');
  }

  /** The column mapping mode; a mode the protocol does not support is ignored ('none'), an unknown one is a DeltaLogError. */
  get columnMapping(): ColumnMappingMode {
    return this.columnMappingSupported ? mappingModeProperty(this.metadata) : 'none';
  }

  /** What row tracking asks of this table's writers. */
  get rowTracking(): RowTracking {
    const config = this.metadata.configuration ?? {};
    const assignsIds = this.supports('rowTracking') && !isTrue(config, ROW_TRACKING_SUSPENDED);
    const rowIdColumn = config[MATERIALIZED_ROW_ID_COLUMN];
    const versionColumn = config[MATERIALIZED_ROW_VERSION_COLUMN];
    const enabled =
      assignsIds && isTrue(config, ENABLE_ROW_TRACKING) && rowIdColumn && versionColumn;
    return { assignsIds, materialized: enabled ? { rowIdColumn, versionColumn } : null };
  }

  /** Commits must carry an in-commit timestamp (./in-commit-timestamp.ts): the feature listed and `delta.enableInCommitTimestamps` true. */
  get inCommitTimestamps(): boolean {
    return (
      this.supports('inCommitTimestamp') &&
      isTrue(this.metadata.configuration, ENABLE_IN_COMMIT_TIMESTAMPS)
    );
  }

  /** Checkpoints are V2 (UUID-named, ./checkpoint-v2.ts): `v2Checkpoint` listed for readers and writers. */
  get v2Checkpoints(): boolean {
    return this.readerFeatures.includes('v2Checkpoint') && this.supports('v2Checkpoint');
  }

  /** Writers may add deletion vectors: `deletionVectors` listed for readers and writers, and `delta.enableDeletionVectors` true. */
  get deletionVectors(): boolean {
    // Compared ignoring case but not trimmed, as the MERGE always has (isTrue also trims).
    const enabled =
      (this.metadata.configuration[ENABLE_DELETION_VECTORS] ?? '').toLowerCase() === 'true';
    return (
      enabled && this.readerFeatures.includes('deletionVectors') && this.supports('deletionVectors')
    );
  }

  /** The table is clustered: the `clustering` writer feature (its columns are in a domain, ./clustering.ts). */
  get clustered(): boolean {
    return this.supports('clustering');
  }

  /** `delta.dataSkippingNumIndexedCols` as a number, or undefined when unset or not a whole number >= -1. */
  get numIndexedColumns(): number | undefined {
    return numIndexedColumns(this.metadata.configuration);
  }

  /**
   * The protocol with one more table feature: writer 7 with every legacy-implied feature listed
   * (PROTOCOL.md "Table Features for New and Existing Tables"), and, for a feature readers must
   * know (`reader`), reader 3 with it in the reader list too.
   */
  withFeature(feature: string, opts: { reader: boolean }): Protocol {
    const { protocol } = this;
    const writers = [...this.writerFeatures];
    if (!writers.includes(feature)) writers.push(feature);
    const upgraded: Protocol = {
      minReaderVersion: protocol.minReaderVersion,
      minWriterVersion: 7,
      writerFeatures: writers,
    };
    if (opts.reader || protocol.minReaderVersion >= 3) {
      const readers = [...this.readerFeatures];
      if (opts.reader && !readers.includes(feature)) readers.push(feature);
      upgraded.minReaderVersion = 3;
      upgraded.readerFeatures = readers;
    }
    return upgraded;
  }

  /**
   * The protocol and metaData actions that let writers add deletion vectors to this table: the
   * `deletionVectors` feature for readers and writers, and `delta.enableDeletionVectors=true`
   * (one metaData action, this config's metadata, holding any other change too).
   */
  enablingDeletionVectors(): Action[] {
    const { metadata } = this;
    return [
      { protocol: this.withFeature('deletionVectors', { reader: true }) },
      {
        metaData: {
          ...metadata,
          configuration: { ...metadata.configuration, [ENABLE_DELETION_VECTORS]: 'true' },
        },
      },
    ];
  }
}

function readerFeaturesOf(protocol: Protocol): string[] {
  if (protocol.minReaderVersion >= 3) return [...(protocol.readerFeatures ?? [])];
  return protocol.minReaderVersion === 2 ? ['columnMapping'] : [];
}

function writerFeaturesOf(protocol: Protocol): string[] {
  if (protocol.minWriterVersion >= 7) {
    return [...new Set([...(protocol.writerFeatures ?? []), ...(protocol.readerFeatures ?? [])])];
  }
  return LEGACY_WRITER_FEATURES.filter(([v]) => protocol.minWriterVersion >= v).flatMap(
    ([, names]) => names,
  );
}
