/**
 * Options and results of the MERGE engine and of append mode.
 */
import type { Action } from '../../delta/actions.js';
import type { Snapshot } from '../../delta/snapshot.js';
import type { DeltaTable } from '../../delta/table.js';
import type { DuckSession } from '../duckdb.js';

/** Lineage columns the job may add to a batch; used to name the file (and row) of a bad input row. */
export const DEFAULT_SOURCE_FILE_COLUMN = '_source_file';
/** Parallel downloads of data files from non-local storage. */
export const DEFAULT_DOWNLOAD_CONCURRENCY = 8;

/** What both MERGE and append need: where the table is and where the batch is. */
export interface WriteTarget {
  session: DuckSession;
  /** The table (it need not exist yet); commits go through it (retries, checkpoints, feature gates). */
  table: DeltaTable;
  /**
   * The snapshot to plan on, when the caller already loaded it (e.g. to read its txn watermark);
   * null = the table does not exist. Default: the table's latest snapshot.
   */
  snapshot?: Snapshot | null;
  /** DuckDB table or view holding the batch (a name, quoted by the engine). */
  batch: string;
  /** Partition columns, used only when the table is created by this write. */
  partitionBy?: string[];
  /**
   * Batch columns that are not table data (lineage, CDC op codes): usable in `deleteWhen` and in
   * error messages, never written. A batch column neither in the table nor listed here is a new
   * column (see `schemaEvolution`).
   */
  internalColumns?: string[];
  /**
   * Batch columns that are neither table columns nor internal: `addColumns` adds them to the
   * table (a metaData action committed with the data; older files read them as NULL); `fail`
   * (the default) is a SchemaError naming them and the files they came from.
   */
  schemaEvolution?: 'addColumns' | 'fail';
  /** Column naming each row's source file, for error messages; default `_source_file` (if present). */
  sourceFileColumn?: string;
  /** Column with each row's 1-based position in its file, for error messages (if present). */
  sourceRowColumn?: string;
  /** appIds whose txn the caller read (the job's watermark appId); recorded in the commit's read set. */
  appIds?: string[];
  /** Actions committed atomically with the data, e.g. the job's `txn` watermark. */
  extraActions?: Action[];
  /** Local folder for downloaded data files and files being written; default: a fresh temp folder. */
  spoolDir?: string;
  /** Bound on parallel downloads/uploads; default 8. */
  concurrency?: number;
  /** Rows per output Parquet file (passed to the data-file writer). */
  targetFileRows?: number;
  /**
   * Called once the data files are written and uploaded, before anything else of the commit
   * (tombstone files, the log entry). Not called when the write adds no file.
   */
  afterWrite?: () => Promise<void> | void;
  signal?: AbortSignal;
}

/** Options of `mergeIntoTable`. */
export interface MergeOptions extends WriteTarget {
  /** Columns identifying a row; must be non-null and unique in the batch. */
  keyColumns: string[];
  /**
   * Column ordering versions of a row. An incoming row replaces (or deletes) the stored one only
   * when it is not older: incoming >= stored. NULL counts as the oldest value: a NULL incoming
   * value never replaces a non-NULL stored one; NULL vs NULL is "equal" and replaces.
   */
  orderBy: string;
  /** SQL boolean expression over the batch's columns; true = delete the key. NULL counts as false. */
  deleteWhen?: string;
  /**
   * By default a batch row matches a stored row when the key columns AND the partition columns are
   * equal (a key never moves partition), which lets partition values prune files. Set true to match
   * on the key alone across partitions (no partition pruning).
   */
  matchAcrossPartitions?: boolean;
  /**
   * The caller guarantees at most one row per key column tuple (the job dedupes every batch
   * first), so the duplicate-key check (a full aggregation of the batch) is skipped.
   */
  keysUnique?: boolean;
  /**
   * Tombstones of keys deleted by earlier batches: a DuckDB table or view with the key columns and
   * `TOMBSTONE_ORDER` (the delete's orderBy value, typed like orderBy); several rows per key are
   * fine. An incoming non-delete row whose key has no stored row is skipped as stale when a
   * tombstone of its key is not older than it (the delete wins ties); a newer row is inserted
   * (the key comes back). Matched on the key columns alone.
   */
  tombstones?: string;
  /**
   * Called once before the commit (the data files are written by then) with the tombstones of
   * this batch; the actions it returns are committed in the same version, after `extraActions`.
   * A caller that keeps tombstones writes them here, so they become visible with the deletes.
   */
  recordDeletes?: (deletes: DeletedKeys) => Promise<Action[]>;
}

/**
 * A batch's deletes, valid only during `recordDeletes`: a SELECT yielding the key columns and
 * `TOMBSTONE_ORDER` of every delete row that was not stale against a stored row (so also deletes
 * of keys the table does not hold: out-of-order CDC sends the delete before the insert).
 */
export interface DeletedKeys {
  sql: string;
  rows: number;
  /** Key column names as the relation spells them (the table's spelling). */
  keyColumns: string[];
}

/** Time spent per phase, in ms. */
export interface MergeDurations {
  /** Snapshot load, batch preparation and validation. */
  prepare: number;
  /** Partition and stats pruning plus the key-column scan. */
  prune: number;
  /** Full read of hit files and row classification. */
  classify: number;
  /** Writing new data files and uploading them. */
  write: number;
  commit: number;
  total: number;
}

/** Row counts of a MERGE, per target row (like Delta's operation metrics). */
export interface MergeCounts {
  /** Rows in the batch. */
  sourceRows: number;
  inserted: number;
  updated: number;
  deleted: number;
  /**
   * Incoming rows older than the stored one (stored row kept), including rows buried by a
   * tombstone (see `skippedByTombstone`).
   */
  skippedStale: number;
  /** Of `skippedStale`: rows of keys without a stored row whose tombstone is not older. */
  skippedByTombstone: number;
  /** Matched rows whose incoming row equals the stored row in every column (not rewritten). */
  unchanged: number;
  /** Batch rows flagged for delete whose key is not in the table (no-op). */
  deleteNotFound: number;
  /** Unchanged rows copied from rewritten files into their replacements. */
  rowsCopied: number;
}

/** What a MERGE did: its row counts, files and bytes. */
export interface MergeResult extends MergeCounts {
  /** Committed table version, or null when nothing changed (no commit). */
  version: number | null;
  filesAdded: number;
  filesRemoved: number;
  /** Sum of the sizes of the removed (rewritten) files. */
  bytesRewritten: number;
  /** Sum of the sizes of the added files. */
  bytesAdded: number;
  /** Files whose key columns were scanned (candidates left after partition and stats pruning). */
  filesScanned: number;
  /** Files read in full (hold a batch key that is not stale). */
  filesRead: number;
  /** True when this MERGE created the table. */
  created: boolean;
  durations: MergeDurations;
}

/** Options of `appendToTable`. */
export interface AppendOptions extends WriteTarget {}

/** What an append did. */
export interface AppendResult {
  /** Committed version, or null when the batch was empty and the table existed (no commit). */
  version: number | null;
  inserted: number;
  filesAdded: number;
  bytesAdded: number;
  created: boolean;
  durations: { prepare: number; write: number; commit: number; total: number };
}
