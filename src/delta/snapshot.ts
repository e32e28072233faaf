/**
 * A Delta table snapshot: the reconciled state at one version.
 */
import type { AddFile, DomainMetadata, Metadata, Protocol, RemoveFile, Txn } from './actions.js';
import type { StructType } from './schema.js';

/** Parsed `add.stats`. Values are as in the JSON (strings for dates/timestamps). */
export interface FileStats {
  numRecords?: number;
  minValues?: Record<string, unknown>;
  maxValues?: Record<string, unknown>;
  nullCount?: Record<string, unknown>;
  /** Missing means true. */
  tightBounds?: boolean;
}

export interface LiveFile extends AddFile {
  /** Parsed stats, or null when the add has none (then the file cannot be skipped). */
  parsedStats: FileStats | null;
}

export interface Snapshot {
  /** Table root URI (for messages). */
  tableUri: string;
  version: number;
  protocol: Protocol;
  metadata: Metadata;
  schema: StructType;
  partitionColumns: string[];
  /** Live data files in a stable order (by path). */
  files: LiveFile[];
  /**
   * Remove actions still in the log (Delta calls them tombstones; tidemark keeps that word for
   * the keys a job deleted, see docs/glossary.md): what VACUUM must keep until they expire.
   */
  removes: RemoveFile[];
  /** Latest txn per appId. */
  txns: Map<string, Txn>;
  /** Live (not removed) domain metadata per domain. */
  domains: Map<string, DomainMetadata>;
  /**
   * The version's in-commit timestamp (ms), when the table writes them and the version's commit
   * file carries one (docs/delta-protocol.md, In-commit timestamps): the next commit's must be later.
   */
  inCommitTimestamp?: number;
}
