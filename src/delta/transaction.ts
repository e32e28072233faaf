/**
 * What a transaction read and what it wants to commit. The commit loop (./commit.ts)
 * uses the read side to decide whether a concurrent winner's commit conflicts.
 */
import type { Action, PartitionValues } from './actions.js';

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

/** Reads and writes checkpoint Parquet; implemented by the engine (DuckDB) so delta/ stays engine-free. */
export interface CheckpointIO {
  /** Actions from checkpoint Parquet files on local disk (all parts, any schema version). */
  readActions(localPaths: string[]): Promise<Action[]>;
  /** Write a V1 classic checkpoint holding these actions to a local Parquet file; returns its row count. */
  writeActions(actions: Action[], localPath: string): Promise<number>;
}
