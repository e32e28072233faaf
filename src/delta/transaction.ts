/**
 * What a transaction read and what it wants to commit. The commit loop (./commit.ts)
 * uses the read side to decide whether a concurrent winner's commit conflicts.
 */
import type { Action, PartitionValues } from './actions.js';
import type { KeyBound } from './key-bounds.js';

export interface ReadSet {
  /** Snapshot version the transaction was planned on; -1 when creating the table. */
  readVersion: number;
  /**
   * Partitions the transaction read (a concurrent add into one of them conflicts).
   * 'all' = the whole table; [] = nothing (blind append).
   */
  partitions: 'all' | PartitionValues[];
  /** Paths of data files the transaction scanned (a concurrent remove of one conflicts). */
  files: string[];
  /**
   * The transaction read only rows whose key columns lie within these bounds, and `files` lists
   * every file that may hold such rows (./key-bounds.ts). A concurrent add whose statistics lie
   * outside them, and a concurrent remove of a file not in `files`, then do not conflict, also
   * when `partitions` is 'all'. Absent: no such promise.
   */
  keyBounds?: KeyBound[];
  /** appIds whose txn version the transaction read (a concurrent txn for one conflicts). */
  appIds: string[];
}

export interface CommitRequest {
  /** add/remove/txn/metaData/protocol actions; commitInfo is added by the commit loop. */
  actions: Action[];
  /** Delta operation name, e.g. 'WRITE', 'MERGE', 'CREATE TABLE', 'OPTIMIZE'. */
  operation: string;
  operationParameters?: Record<string, unknown>;
  /** Delta's standard metric names (numTargetRowsInserted, numFiles, …), values as strings. */
  operationMetrics?: Record<string, string>;
  read: ReadSet;
  /** True when the commit only adds files and read nothing (WriteSerializable lets appends pass). */
  isBlindAppend: boolean;
}

export interface CommitResult {
  version: number;
  /** 1 when the first attempt won. */
  attempts: number;
}
