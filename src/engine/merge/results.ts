/**
 * What the MERGE engine, append and replace hand back: a staged write (data files uploaded, the
 * commit planned but not made: the caller adds its own actions and commits) and its figures.
 */
import type { CommitRequest } from '../../delta/transaction.js';
import type { Relation } from '../relation.js';
import type { Stopwatch } from '../stopwatch.js';

/**
 * A batch's deletes: the key columns and `TOMBSTONE_ORDER` of every delete row that was not stale
 * against a stored row (so also deletes of keys the table does not hold: out-of-order CDC sends
 * the delete before the insert).
 */
export interface DeletedKeys {
  /** A temp view over the MERGE's temp tables: disposing of the staged MERGE drops it too. */
  relation: Relation;
  rows: number;
  /** Key column names as the relation spells them (the table's spelling). */
  keyColumns: string[];
  /** The tie columns of each delete (MergeOptions.tieBreak, the table's spelling); a tombstone keeps them. */
  tieColumns: string[];
}

/** The phases of a write, in order (the commit is the caller's); append and replace have no prune or classify. */
export const WRITE_PHASES = ['prepare', 'prune', 'classify', 'write'] as const;

export type WritePhase = (typeof WRITE_PHASES)[number];

/** The timer of a write's phases. */
export type WriteWatch = Stopwatch<WritePhase>;

/** For operationMetrics: the time so far, scan (prune and classify) and rewrite (write), in ms. */
export function metricTimings(clock: WriteWatch): { total: number; scan: number; rewrite: number } {
  return {
    total: clock.elapsed(),
    scan: clock.spent('prune') + clock.spent('classify'),
    rewrite: clock.spent('write'),
  };
}

/**
 * Time spent per phase of a write, in ms: prepare is batch preparation and validation; prune,
 * partition and stats pruning plus the key-column scan; classify, the full read of hit files and
 * row classification; write, writing new data files and uploading them.
 */
export type WriteDurations = Record<WritePhase | 'total', number>;

/**
 * What a staged write did, one shape for MERGE, append and replace (a figure a mode does not
 * count is 0), carried unchanged up to the job, whose report adds it up (../../job/report.ts).
 * Row counts are per target row, like Delta's operation metrics.
 */
export interface WriteSummary {
  /** Rows in the batch. */
  sourceRows: number;
  /** Rows inserted (replace: the rows the table holds after it). */
  inserted: number;
  updated: number;
  /** Rows deleted (replace: the rows the table held before it, deletion vectors applied). */
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
  filesAdded: number;
  /** Files no longer in the table: rewritten ones, and those whose every row is now deleted. */
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
  /** Append: source files whose earlier rows this append deleted (their new versions appended). */
  sourcesReplaced: string[];
  /** Append: source files the table already held, not appended again (unchanged, or `keep`). */
  sourcesAlreadyHeld: string[];
  /** Append: stored rows deleted with the replaced source files (not in `deleted`). */
  rowsReplaced: number;
  /** True when this write creates the table. */
  created: boolean;
  durations: WriteDurations;
}

/** A MERGE's row counts, read from its classification tables (./outcome.ts). */
export type MergeCounts = Pick<
  WriteSummary,
  | 'sourceRows'
  | 'inserted'
  | 'updated'
  | 'deleted'
  | 'skippedStale'
  | 'skippedByTombstone'
  | 'unchanged'
  | 'deleteNotFound'
  | 'rowsCopied'
>;

/** The figures a write counted (the rest are 0) and the durations of its phases so far. */
export function writeSummary(
  counted: Partial<Omit<WriteSummary, 'durations'>>,
  watch: WriteWatch | null,
): WriteSummary {
  const durations = watch
    ? { ...watch.timings(), total: Math.round(watch.elapsed()) }
    : { prepare: 0, prune: 0, classify: 0, write: 0, total: 0 };
  return { ...NOTHING_WRITTEN, sourcesReplaced: [], sourcesAlreadyHeld: [], ...counted, durations };
}

const NOTHING_WRITTEN: Omit<WriteSummary, 'durations' | 'sourcesReplaced' | 'sourcesAlreadyHeld'> =
  {
    sourceRows: 0,
    inserted: 0,
    updated: 0,
    deleted: 0,
    skippedStale: 0,
    skippedByTombstone: 0,
    unchanged: 0,
    deleteNotFound: 0,
    rowsCopied: 0,
    filesAdded: 0,
    filesRemoved: 0,
    bytesRewritten: 0,
    bytesAdded: 0,
    filesScanned: 0,
    filesRead: 0,
    filesWithNewDv: 0,
    dvBytes: 0,
    changeFilesAdded: 0,
    rowsReplaced: 0,
    created: false,
  };

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
  summary: WriteSummary;
}

/** A staged MERGE; `dispose` drops its temp tables (after which `deletes` cannot be read). */
export interface StagedMerge extends StagedWrite {
  deletes: DeletedKeys;
  dispose(): Promise<void>;
}
