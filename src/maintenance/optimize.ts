/**
 * OPTIMIZE (bin-packing compaction): rewrite the small files of each partition into files near
 * the target size, and commit the swap as ONE commit with dataChange=false.
 *
 *   snapshot ─► planCompaction (pure) ─► per bin: fetch, scan, write, upload (./rewrite-bin.ts)
 *            ─► optimizeCommitRequest (pure) ─► table.commit   ◄── THE COMMIT POINT
 *
 * Readers see the same rows before and after. Concurrent appends never conflict; a concurrent
 * commit that removed one of the rewritten files fails this one with CommitConflictError, and
 * the uploaded files stay behind as orphans for VACUUM. Running it again re-plans on the new
 * snapshot. Nothing to compact: no commit, `version: null`.
 */
import { assertWritable } from '../delta/features.js';
import type { LiveFile, Snapshot } from '../delta/snapshot.js';
import type { DeltaTable } from '../delta/table.js';
import type { DuckSession } from '../engine/duckdb.js';
import type { Spool } from '../spool/spool.js';
import { DeltaLogError } from '../errors.js';
import {
  optimizeCommitRequest,
  sum,
  uniquePartitions,
  type RewrittenBin,
} from './optimize-commit.js';
import {
  planCompaction,
  DEFAULT_TARGET_FILE_BYTES,
  type CompactionOptions,
} from './plan-compaction.js';
import { rewriteBin } from './rewrite-bin.js';

/** Parallel downloads and uploads of data files. */
export const DEFAULT_OPTIMIZE_CONCURRENCY = 8;

/** Options of `optimizeTable`. */
export interface OptimizeOptions extends CompactionOptions {
  /** Scratch space for downloaded and new files. */
  spool: Spool;
  /** Bound on parallel downloads/uploads; default 8. */
  concurrency?: number;
  signal?: AbortSignal;
  /** Clock (ms) for add.modificationTime and remove.deletionTimestamp. */
  now?: () => number;
  /** Plan on this snapshot instead of the latest one. */
  snapshot?: Snapshot;
  /** Plan and report only: nothing is read, written or committed (`version` stays null). */
  dryRun?: boolean;
}

/** What OPTIMIZE did. */
export interface OptimizeResult {
  /** The committed version, or null when there was nothing to compact. */
  version: number | null;
  /** The version the compaction was planned on. */
  readVersion: number;
  filesRemoved: number;
  filesAdded: number;
  bytesRemoved: number;
  bytesAdded: number;
  partitionsCompacted: number;
  /** Files rewritten without the rows their deletion vector deleted. */
  deletionVectorsPurged: number;
  /** True for a plan only (`dryRun`): files and bytes say what a real run would rewrite (one new file per bin). */
  dryRun?: boolean;
}

/** Compact the table's small files; see the module comment. */
export async function optimizeTable(
  table: DeltaTable,
  session: DuckSession,
  opts: OptimizeOptions,
): Promise<OptimizeResult> {
  const snapshot = opts.snapshot ?? (await table.snapshot());
  if (!snapshot) {
    throw new DeltaLogError(`[optimize] no Delta table at ${table.uri}`, {
      context: { uri: table.uri },
    });
  }
  // Refuse before rewriting anything, not only at the commit.
  assertWritable(snapshot.protocol, snapshot.metadata, table.uri);
  const plan = planCompaction(snapshot, opts);
  const empty: OptimizeResult = {
    version: null,
    readVersion: snapshot.version,
    filesRemoved: 0,
    filesAdded: 0,
    bytesRemoved: 0,
    bytesAdded: 0,
    partitionsCompacted: 0,
    deletionVectorsPurged: 0,
  };
  if (plan.bins.length === 0) return opts.dryRun ? { ...empty, dryRun: true } : empty;
  if (opts.dryRun) {
    const files = plan.bins.flatMap((b) => b.files);
    const partitions = uniquePartitions(plan.bins.map((b) => b.partitionValues)).length;
    return {
      ...empty,
      dryRun: true,
      filesRemoved: files.length,
      bytesRemoved: sum(files),
      filesAdded: plan.bins.length,
      partitionsCompacted: partitions,
      deletionVectorsPurged: withDv(files),
    };
  }

  // A store that ignores put-if-absent is refused before the bins are rewritten and uploaded,
  // as run and reset are, not at the commit after them (which left the new files as orphans).
  await table.checkCommitsSafe();
  const ctx = {
    session,
    storage: table.storage,
    snapshot,
    spool: opts.spool,
    targetFileBytes: opts.targetFileBytes ?? DEFAULT_TARGET_FILE_BYTES,
    concurrency: opts.concurrency ?? DEFAULT_OPTIMIZE_CONCURRENCY,
    ...(opts.signal ? { signal: opts.signal } : {}),
  };
  const rewritten: RewrittenBin[] = [];
  for (const [i, bin] of plan.bins.entries())
    rewritten.push({ bin, added: await rewriteBin(ctx, bin, i) });
  const request = optimizeCommitRequest({
    readVersion: snapshot.version,
    rewritten,
    now: (opts.now ?? Date.now)(),
  });
  const { version } = await table.commit(request, opts.signal ? { signal: opts.signal } : {});
  const removed = rewritten.flatMap((r) => r.bin.files);
  const added = rewritten.flatMap((r) => r.added);
  return {
    ...empty,
    version,
    filesRemoved: removed.length,
    filesAdded: added.length,
    bytesRemoved: sum(removed),
    bytesAdded: sum(added),
    partitionsCompacted: uniquePartitions(rewritten.map((r) => r.bin.partitionValues)).length,
    deletionVectorsPurged: withDv(removed),
  };
}

function withDv(files: readonly LiveFile[]): number {
  return files.filter((f) => f.deletionVector).length;
}
