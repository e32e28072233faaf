/**
 * What the MERGE engine and append mode hand back: a staged write (data files uploaded, the
 * commit planned but not made: the caller adds its own actions and commits) and its figures.
 */
import type { CommitRequest } from '../../delta/transaction.js';

/**
 * A batch's deletes, valid until the staged MERGE is disposed: a SELECT yielding the key columns
 * and `TOMBSTONE_ORDER` of every delete row that was not stale against a stored row (so also
 * deletes of keys the table does not hold: out-of-order CDC sends the delete before the insert).
 */
export interface DeletedKeys {
  sql: string;
  rows: number;
  /** Key column names as the relation spells them (the table's spelling). */
  keyColumns: string[];
  /** The tie columns of each delete (MergeOptions.tieBreak, the table's spelling); a tombstone keeps them. */
  tieColumns: string[];
}

/** Time spent per phase of a MERGE, in ms (the commit is the caller's). */
export interface MergeDurations {
  /** Batch preparation and validation. */
  prepare: number;
  /** Partition and stats pruning plus the key-column scan. */
  prune: number;
  /** Full read of hit files and row classification. */
  classify: number;
  /** Writing new data files and uploading them. */
  write: number;
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

/** What a MERGE did to the table's files, besides its row counts. */
export interface MergeFiles {
  filesAdded: number;
  filesRemoved: number;
  /** Sum of the sizes of the files rewritten (a file that gets a deletion vector is not). */
  bytesRewritten: number;
  /** Sum of the sizes of the added files. */
  bytesAdded: number;
  /** Files whose key columns were scanned (candidates left after partition and stats pruning). */
  filesScanned: number;
  /** Files read in full (rewritten files and files holding a tie). */
  filesRead: number;
  /** Files given a new deletion vector instead of being rewritten. */
  filesWithNewDv: number;
  /** Size of the deletion-vector file written (0 when none). */
  dvBytes: number;
  /** Change data files written (`_change_data/`; only when the table records a change data feed). */
  changeFilesAdded: number;
  /** True when this MERGE creates the table. */
  created: boolean;
}

/** The figures of a staged MERGE. */
export interface MergeSummary extends MergeCounts, MergeFiles {
  durations: MergeDurations;
}

/** A write whose data files are uploaded and whose commit is planned. */
export interface StagedWrite {
  /**
   * The commit applying the write (removes, adds, a schema change; protocol and metaData when it
   * creates the table), planned on `request.read.readVersion`. The caller appends its own actions
   * (its state) and commits it. Its data files stay unreferenced orphans if it never does.
   */
  request: CommitRequest;
  /** False when the write changes nothing in the table (every row stale or unchanged, or no rows). */
  changesTable: boolean;
}

/** A staged MERGE; `dispose` drops its temp tables (after which `deletes` cannot be read). */
export interface StagedMerge extends StagedWrite {
  summary: MergeSummary;
  deletes: DeletedKeys;
  dispose(): Promise<void>;
}

/** The figures of a staged append. */
export interface AppendSummary {
  inserted: number;
  filesAdded: number;
  bytesAdded: number;
  /** Files removed (rewritten without the replaced rows, or emptied). */
  filesRemoved: number;
  /** Files given a (new) deletion vector, and the bytes of the DV file. */
  filesWithNewDv: number;
  dvBytes: number;
  /** Source files whose earlier rows this append deleted (their new versions appended). */
  sourcesReplaced: string[];
  /** Source files the table already held, not appended again (unchanged, or `keep`). */
  sourcesAlreadyHeld: string[];
  /** Stored rows deleted with the replaced files. */
  rowsReplaced: number;
  created: boolean;
  durations: { prepare: number; write: number; total: number };
}

/** A staged append. */
export interface StagedAppend extends StagedWrite {
  summary: AppendSummary;
}
