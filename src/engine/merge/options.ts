/**
 * What a caller gives the MERGE engine and append mode.
 */
import type { ColumnMappingMode } from '../../delta/column-mapping.js';
import type { Snapshot } from '../../delta/snapshot.js';
import type { Spool } from '../../spool/spool.js';
import type { Storage } from '../../storage/storage.js';
import type { DuckSession } from '../duckdb.js';
import type { Relation } from '../relation.js';
import type { DeletionVectorSetting } from './write-mode.js';

/** Lineage column the job adds to a batch; used to name the file (and row) of a bad input row. */
export const DEFAULT_SOURCE_FILE_COLUMN = '_source_file';

/** What both MERGE and append need: where the table is and where the batch is. */
export interface WriteTarget {
  session: DuckSession;
  /** Storage rooted at the table (data files are read from and uploaded to it). */
  storage: Storage;
  /** The snapshot the write is planned on; null = the table does not exist and this write creates it. */
  snapshot: Snapshot | null;
  /** DuckDB table or view holding the batch (a name, quoted by the engine). */
  batch: string;
  /** Partition columns, used only when the table is created by this write. */
  partitionBy?: string[];
  /**
   * Table properties (`metaData.configuration`) of a table this write creates, such as
   * `delta.enableRowTracking` or `delta.enableChangeDataFeed`; its protocol takes the features
   * they need. Ignored when the table exists.
   */
  tableProperties?: Record<string, string>;
  /**
   * Column mapping of a table this write creates ('none' when unset): in 'name' and 'id' every
   * column gets an id and a physical name. For an existing table it must, when given, be the
   * table's mode: tidemark never switches a table's mode (a SchemaError otherwise).
   */
  columnMapping?: ColumnMappingMode;
  /**
   * Delta types the job declares for batch columns (`source.columns`, by name, any case). A column
   * this write creates (a new table's, or a new column) takes `timestamp_ntz` where declared: the
   * batch holds such a column as a naive DuckDB TIMESTAMP, which alone maps to `timestamp`. The
   * job adds `timestamp_ntz` for the naive Parquet timestamps of its batch (../../job/write-batch.ts).
   */
  declaredTypes?: Readonly<Record<string, string>>;
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
  /** appIds whose txn the caller read (its watermark appId); recorded in the commit's read set. */
  appIds?: string[];
  /** Scratch space for downloaded data files and files being written. */
  spool: Spool;
  /** Bound on parallel downloads/uploads; default 8. */
  concurrency?: number;
  /** Rows per output Parquet file (passed to the data-file writer). */
  targetFileRows?: number;
  signal?: AbortSignal;
}

/** Options of `stageMerge`. */
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
   * Columns that order rows of equal `orderBy` (the job's: the source file's LastModified, then
   * its key), compared in turn, NULL the oldest; table columns the batch has. At an equal orderBy
   * an incoming row, update or delete alike, replaces or deletes the stored row only when it is not
   * earlier by them, and a tombstone buries an incoming row unless the row is later by them (the
   * batch's deletes carry them, for the caller's tombstones). None: an incoming row wins every tie
   * with a stored row, a tombstone every tie with an incoming row.
   */
  tieBreak?: string[];
  /**
   * Columns left out when telling an update from an unchanged row (the source file's modification
   * time): a row loaded again from the same file (touched, copied in place) with the same values is
   * unchanged, so it gets no deletion vector, no rewrite and no change-feed row, and keeps its
   * stored values of these columns too.
   */
  ignoreColumns?: string[];
  /**
   * The caller guarantees at most one row per key column tuple (the job dedupes every batch
   * first), so the duplicate-key check (a full aggregation of the batch) is skipped.
   */
  keysUnique?: boolean;
  /**
   * Tombstones of keys deleted by earlier batches: a DuckDB table or view with the key columns,
   * `TOMBSTONE_ORDER` (the delete's orderBy value, typed like orderBy) and the `tieBreak` columns
   * (NULL when absent); several rows per key are fine. An incoming non-delete row whose key has no
   * stored row is skipped as stale when a tombstone of its key is not older than it (at an equal
   * orderBy, unless the row is later by `tieBreak`); a newer row is inserted (the key comes back).
   * Matched on the key columns alone. A handle: the caller made it and drops it.
   */
  tombstones?: Relation;
  /**
   * Deletion vectors (./write-mode.ts): 'auto' (default) follows the table's
   * `delta.enableDeletionVectors`, and a table this MERGE creates takes them; 'on' writes them,
   * upgrading the table in the same commit if it must; 'off' rewrites files instead.
   */
  deletionVectors?: DeletionVectorSetting;
  /** Files smaller than this are rewritten rather than given a DV; default 1 MiB. */
  rewriteBelowBytes?: number;
  /** A file that would have this share of its rows or more deleted is rewritten; default 0.5. */
  rewriteDeletedShare?: number;
}

/** What an append does with source files the table already holds. */
export interface ExistingSources {
  /** 'replace': delete their stored rows (unless unchanged); 'keep': do not append them again. */
  onExisting: 'replace' | 'keep';
  /** Source files (as the lineage column names them) to look up; the others are taken as new. */
  files: readonly string[];
  /**
   * Other names the table may hold a file of `files` under (its earlier version loaded before the
   * job's source.uri was edited: ../../job/source-moved.ts); absent: only its own.
   */
  formerNames?: ReadonlyMap<string, readonly string[]>;
  /** Table columns left out when comparing stored and new rows (the file's modification time). */
  ignoreColumns: readonly string[];
  /** Deletion vectors for the deleted rows: 'auto' follows the table; the thresholds as for a MERGE. */
  deletionVectors: DeletionVectorSetting;
  rewriteBelowBytes?: number;
  rewriteDeletedShare?: number;
}

/** Options of `stageAppend`. */
export interface AppendOptions extends WriteTarget {
  /** Source files the table may already hold, and what to do with them (./source-files.ts). */
  existingSources?: ExistingSources;
}
