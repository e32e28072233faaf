/**
 * The commit a MERGE stages: its actions, what it read (for conflict checks), and commitInfo's
 * operationParameters and operationMetrics under Spark's names. Pure.
 */
import type { Action, PartitionValues } from '../../delta/actions.js';
import type { LiveFile } from '../../delta/snapshot.js';
import type { CommitRequest, ReadSet } from '../../delta/transaction.js';
import type { WrittenFile } from '../data-files.js';
import { ident } from '../sql.js';
import type { MatchSpec } from './plan.js';
import type { MergeCounts } from './results.js';

/** Everything the MERGE commit describes. */
export interface MergeCommitInput {
  readVersion: number;
  spec: MatchSpec;
  deleteWhen?: string;
  /** The data-change actions (a schema change, removes, adds), in commit order. */
  actions: readonly Action[];
  added: readonly WrittenFile[];
  removed: readonly LiveFile[];
  /** Files whose keys were scanned. */
  scanned: readonly LiveFile[];
  /** The batch's partition tuples, or 'all' when the match is not by partition. */
  partitions: ReadSet['partitions'];
  appIds: readonly string[];
  counts: MergeCounts;
  /** Files given a new deletion vector. */
  dvFiles?: number;
  /** Change data files written. */
  changeFiles?: readonly { size: number }[];
  /** ms per phase so far. */
  timings: { total: number; scan: number; rewrite: number };
}

/** The CommitRequest of a MERGE. */
export function mergeRequest(input: MergeCommitInput): CommitRequest {
  return {
    actions: [...input.actions],
    operation: 'MERGE',
    operationParameters: mergeParameters(input.spec, input.deleteWhen),
    operationMetrics: mergeMetrics(input),
    read: {
      readVersion: input.readVersion,
      partitions: input.partitions,
      files: input.scanned.map((f) => f.path),
      appIds: [...input.appIds],
    },
    isBlindAppend: false,
  };
}

/** Spark-style MERGE parameters: the join predicate and the clauses, as SQL text. */
export function mergeParameters(spec: MatchSpec, deleteWhen?: string): Record<string, unknown> {
  const predicate = spec.keys.map((c) => `target.${ident(c)} = source.${ident(c)}`).join(' AND ');
  const newer = `source.${ident(spec.orderBy)} >= target.${ident(spec.orderBy)}`;
  const matched: { predicate: string; actionType: string }[] = [];
  if (deleteWhen !== undefined)
    matched.push({ predicate: `(${deleteWhen}) AND ${newer}`, actionType: 'delete' });
  matched.push({ predicate: newer, actionType: 'update' });
  const notMatched =
    deleteWhen === undefined
      ? [{ actionType: 'insert' }]
      : [{ predicate: `NOT (${deleteWhen})`, actionType: 'insert' }];
  return {
    predicate: [predicate],
    matchedPredicates: matched,
    notMatchedPredicates: notMatched,
    notMatchedBySourcePredicates: [],
  };
}

/** Delta's MERGE metric names, values as strings. */
export function mergeMetrics(
  input: Pick<
    MergeCommitInput,
    'added' | 'removed' | 'counts' | 'timings' | 'dvFiles' | 'changeFiles'
  >,
): Record<string, string> {
  const c = input.counts;
  const bytes = (files: readonly { size: number }[]) => files.reduce((s, f) => s + f.size, 0);
  const metrics = {
    numSourceRows: c.sourceRows,
    numTargetRowsInserted: c.inserted,
    numTargetRowsUpdated: c.updated,
    numTargetRowsMatchedUpdated: c.updated,
    numTargetRowsNotMatchedBySourceUpdated: 0,
    numTargetRowsDeleted: c.deleted,
    numTargetRowsMatchedDeleted: c.deleted,
    numTargetRowsNotMatchedBySourceDeleted: 0,
    numTargetRowsCopied: c.rowsCopied,
    numOutputRows: c.inserted + c.updated + c.rowsCopied,
    numTargetFilesAdded: input.added.length,
    numTargetFilesRemoved: input.removed.length,
    numTargetChangeFilesAdded: input.changeFiles?.length ?? 0,
    numTargetChangeFileBytes: bytes(input.changeFiles ?? []),
    numTargetDeletionVectorsAdded: input.dvFiles ?? 0,
    numTargetBytesAdded: bytes(input.added),
    numTargetBytesRemoved: bytes(input.removed),
    executionTimeMs: Math.round(input.timings.total),
    scanTimeMs: Math.round(input.timings.scan),
    rewriteTimeMs: Math.round(input.timings.rewrite),
  };
  return Object.fromEntries(Object.entries(metrics).map(([k, v]) => [k, String(v)]));
}

/** Read-set partitions from the batch's partition-value strings (rows of p0, p1, … columns). */
export function partitionTuples(
  columns: readonly string[],
  rows: readonly Record<string, unknown>[],
): PartitionValues[] {
  return rows.map((row) =>
    Object.fromEntries(
      columns.map((c, i) => [c, row[`p${i}`] == null ? null : String(row[`p${i}`])]),
    ),
  );
}
