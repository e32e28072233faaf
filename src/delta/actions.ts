/**
 * Delta log actions as they appear in `_delta_log/N.json` (one JSON object per line,
 * one top-level key naming the action). Field names follow PROTOCOL.md exactly.
 */
import { DeltaLogError } from '../errors.js';

export interface Protocol {
  minReaderVersion: number;
  minWriterVersion: number;
  /** Only at reader version 3; null, missing and [] mean the same. */
  readerFeatures?: string[] | null;
  /** Only at writer version 7. */
  writerFeatures?: string[] | null;
}

export interface Metadata {
  id: string;
  name?: string | null;
  description?: string | null;
  format: { provider: string; options?: Record<string, string> | null };
  /** Spark StructType JSON, as a string. */
  schemaString: string;
  partitionColumns: string[];
  configuration: Record<string, string>;
  createdTime?: number | null;
}

export interface DeletionVectorDescriptor {
  storageType: string;
  pathOrInlineDv: string;
  offset?: number | null;
  sizeInBytes: number;
  cardinality: number;
  maxRowIndex?: number | null;
}

/** Partition values are strings or null; the empty string also means null. */
export type PartitionValues = Record<string, string | null>;

export interface AddFile {
  /** Relative (percent-encoded) or absolute URI. Decode exactly once to get the object key. */
  path: string;
  partitionValues: PartitionValues;
  size: number;
  modificationTime: number;
  dataChange: boolean;
  /** JSON text of FileStats, if collected. */
  stats?: string | null;
  tags?: Record<string, string> | null;
  deletionVector?: DeletionVectorDescriptor | null;
  baseRowId?: number | null;
  defaultRowCommitVersion?: number | null;
  clusteringProvider?: string | null;
}

export interface RemoveFile {
  path: string;
  deletionTimestamp?: number | null;
  dataChange: boolean;
  extendedFileMetadata?: boolean | null;
  partitionValues?: PartitionValues | null;
  size?: number | null;
  stats?: string | null;
  tags?: Record<string, string> | null;
  deletionVector?: DeletionVectorDescriptor | null;
  baseRowId?: number | null;
  defaultRowCommitVersion?: number | null;
}

/**
 * A change data file (PROTOCOL.md "Add CDC File"): rows a commit changed, each with its
 * `_change_type`, read by change-feed readers instead of the commit's adds and removes.
 */
export interface AddCDCFile {
  /** Relative (percent-encoded) path below the table root, like `add.path`. */
  path: string;
  partitionValues: PartitionValues;
  size: number;
  /** Always false: change files do not change the table's data. */
  dataChange: boolean;
  tags?: Record<string, string> | null;
}

export interface Txn {
  appId: string;
  version: number;
  lastUpdated?: number | null;
}

export interface DomainMetadata {
  domain: string;
  configuration: string;
  removed: boolean;
}

/** Links a V2 checkpoint to one of its sidecar files, which hold its add and remove actions (checkpoints only). */
export interface SidecarFile {
  /** URI-encoded path relative to `_delta_log/_sidecars/`: in practice the bare file name. */
  path: string;
  sizeInBytes: number;
  modificationTime: number;
  tags?: Record<string, string> | null;
}

/** The one `checkpointMetadata` action of a V2 checkpoint (checkpoints only). */
export interface CheckpointMetadata {
  version: number;
  tags?: Record<string, string> | null;
}

/** Free-form; Spark writes timestamp, operation, operationParameters, operationMetrics, readVersion… */
export type CommitInfo = Record<string, unknown>;

export type Action =
  | { add: AddFile }
  | { remove: RemoveFile }
  | { metaData: Metadata }
  | { protocol: Protocol }
  | { txn: Txn }
  | { commitInfo: CommitInfo }
  | { domainMetadata: DomainMetadata }
  | { cdc: AddCDCFile }
  | { sidecar: SidecarFile }
  | { checkpointMetadata: CheckpointMetadata };

/** Names of the actions tidemark understands; readers ignore any other top-level key. */
const KNOWN_ACTIONS = new Set([
  'add',
  'remove',
  'metaData',
  'protocol',
  'txn',
  'commitInfo',
  'domainMetadata',
  'cdc',
  'sidecar',
  'checkpointMetadata',
]);

/**
 * Parse the text of one commit file (or of a JSON V2 checkpoint, which has the same layout). Unknown action keys are ignored (forward compatibility);
 * an unparsable line is a DeltaLogError naming the version and line.
 */
export function parseCommit(text: string, version: number, uri: string): Action[] {
  const actions: Action[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === '') continue;
    let obj: unknown;
    try {
      obj = JSON.parse(line);
    } catch (cause) {
      throw new DeltaLogError(
        `[delta] commit ${version} of ${uri} has invalid JSON on line ${i + 1}`,
        {
          context: { uri, version, row: i + 1 },
          cause,
        },
      );
    }
    if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) {
      throw new DeltaLogError(
        `[delta] commit ${version} of ${uri}: line ${i + 1} is not an action object`,
        {
          context: { uri, version, row: i + 1 },
        },
      );
    }
    for (const [key, value] of Object.entries(obj)) {
      if (KNOWN_ACTIONS.has(key) && value !== null && value !== undefined)
        actions.push({ [key]: value } as Action);
    }
  }
  return actions;
}

/** Serialize actions as a commit file: one action per line, trailing newline. */
export function serializeCommit(actions: readonly Action[]): string {
  return actions.map((a) => JSON.stringify(a)).join('\n') + '\n';
}

/**
 * The DV's unique id: storageType + pathOrInlineDv, plus `@offset` when offset is present
 * (P#Derived-Fields). It is the DV half of the replay key (`fileActionKey`).
 */
export function dvUniqueId(dv: DeletionVectorDescriptor): string {
  const offset = dv.offset === null || dv.offset === undefined ? '' : `@${dv.offset}`;
  return `${dv.storageType}${dv.pathOrInlineDv}${offset}`;
}

/** Key of a file action for reconciliation: path plus deletion-vector unique id. */
export function fileActionKey(
  path: string,
  dv: DeletionVectorDescriptor | null | undefined,
): string {
  return dv ? `${path}\u0000${dvUniqueId(dv)}` : path;
}
