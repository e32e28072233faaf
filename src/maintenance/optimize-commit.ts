/**
 * The OPTIMIZE commit (pure: no I/O): remove the compacted files and add their replacements,
 * every action with dataChange=false, as Spark's OPTIMIZE writes it.
 *
 * Its read set names exactly the files it rewrote and their partitions. A dataChange=false
 * transaction skips the concurrent-append check (../delta/conflicts.ts), so appends that land
 * while it runs never conflict; a concurrent commit that removes one of the rewritten files
 * (a MERGE rewrite, another OPTIMIZE) does, and the commit fails with CommitConflictError.
 */
import type { PartitionValues } from '../delta/actions.js';
import { addFileFor, removeFileFor } from '../delta/file-actions.js';
import type { CommitRequest } from '../delta/transaction.js';
import type { WrittenFile } from '../engine/data-files.js';
import type { CompactionBin } from './plan-compaction.js';

/** One rewritten bin: the files it replaces and the files that replace them. */
export interface RewrittenBin {
  bin: CompactionBin;
  added: WrittenFile[];
}

/** The rewritten bins and the snapshot they were planned on. */
export interface OptimizeCommitInput {
  readVersion: number;
  rewritten: readonly RewrittenBin[];
  /** Commit time (ms): add.modificationTime and remove.deletionTimestamp. */
  now: number;
}

/** The commit request for a compaction; see the module comment. */
export function optimizeCommitRequest(input: OptimizeCommitInput): CommitRequest {
  const removed = input.rewritten.flatMap((r) => r.bin.files);
  const added = input.rewritten.flatMap((r) => r.added);
  return {
    actions: [
      ...removed.map((f) => ({
        remove: removeFileFor(f, { deletionTimestamp: input.now, dataChange: false }),
      })),
      ...added.map((f) => ({
        add: addFileFor(f, { modificationTime: input.now, dataChange: false }),
      })),
    ],
    operation: 'OPTIMIZE',
    operationParameters: { predicate: [], zOrderBy: [] },
    operationMetrics: optimizeMetrics(removed, added),
    read: {
      readVersion: input.readVersion,
      partitions: uniquePartitions(input.rewritten.map((r) => r.bin.partitionValues)),
      files: removed.map((f) => f.path),
      appIds: [],
    },
    isBlindAppend: false,
  };
}

/** The operationMetrics Spark's OPTIMIZE writes, values as strings; file sizes are of the added files. */
function optimizeMetrics(
  removed: readonly { size: number; deletionVector?: unknown }[],
  added: readonly { size: number }[],
) {
  const sizes = added.map((f) => f.size).sort((a, b) => a - b);
  const pick = (q: number): number =>
    sizes[Math.min(sizes.length - 1, Math.floor(q * sizes.length))] ?? 0;
  const metrics: Record<string, number> = {
    numRemovedFiles: removed.length,
    numAddedFiles: added.length,
    numRemovedBytes: sum(removed),
    numAddedBytes: sum(added),
    minFileSize: sizes[0] ?? 0,
    p25FileSize: pick(0.25),
    p50FileSize: pick(0.5),
    p75FileSize: pick(0.75),
    maxFileSize: sizes[sizes.length - 1] ?? 0,
    numDeletionVectorsRemoved: removed.filter((f) => 'deletionVector' in f && f.deletionVector)
      .length,
  };
  return Object.fromEntries(Object.entries(metrics).map(([k, v]) => [k, String(v)]));
}

/** Total size of files. */
export function sum(files: readonly { size: number }[]): number {
  return files.reduce((n, f) => n + f.size, 0);
}

/** Distinct partition value sets, in first-seen order. */
export function uniquePartitions(values: readonly PartitionValues[]): PartitionValues[] {
  const seen = new Map<string, PartitionValues>();
  for (const v of values) {
    const key = JSON.stringify(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1)));
    if (!seen.has(key)) seen.set(key, v);
  }
  return [...seen.values()];
}
