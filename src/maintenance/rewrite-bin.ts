/**
 * Rewriting one compaction bin: fetch its files (read in place on local disk), read them as one
 * relation through the table scan (schema order, missing columns as NULL, partition values from
 * the log), write the rows as new Parquet data files in the same partition and upload them.
 * Nothing is committed here; an upload that is never committed is an orphan for VACUUM.
 *
 * On a table that preserves row ids (row tracking enabled) every row is copied with its stable
 * row id and commit version in the hidden columns; the commit gives the new files fresh ones.
 * A clustered table's rows are written sorted by its clustering columns.
 */
import { clusteringColumns } from '../delta/clustering.js';
import { statsPolicyOf } from '../engine/file-stats.js';
import { TableConfig } from '../delta/table-config.js';
import type { Snapshot } from '../delta/snapshot.js';
import { totalRecords } from '../delta/stats.js';
import { writeDataFiles, type WrittenFile } from '../engine/data-files.js';
import type { DuckSession } from '../engine/duckdb.js';
import { localDataFiles, uploadDataFiles } from '../engine/data-file-io.js';
import { hiddenRowIdColumns } from '../engine/row-ids.js';
import { scanRelation } from '../engine/scan.js';
import { ident } from '../engine/sql.js';
import type { Spool } from '../spool/spool.js';
import type { Storage } from '../storage/storage.js';
import type { CompactionBin } from './plan-compaction.js';

/** Where and how to rewrite. */
export interface RewriteContext {
  session: DuckSession;
  storage: Storage;
  snapshot: Snapshot;
  /** Scratch space (one input and one output folder per bin). */
  spool: Spool;
  targetFileBytes: number;
  concurrency: number;
  signal?: AbortSignal;
}

/** Write and upload the new file(s) holding the bin's rows; returns them (not yet committed). */
export async function rewriteBin(
  ctx: RewriteContext,
  bin: CompactionBin,
  index: number,
): Promise<WrittenFile[]> {
  ctx.signal?.throwIfAborted();
  // Inputs and outputs are not needed once uploaded; freeing them bounds the spool to about one bin.
  const scratch = await ctx.spool.child(`optimize-bin-${index}`);
  const signal = ctx.signal ? { signal: ctx.signal } : {};
  try {
    const { paths: local } = await localDataFiles(bin.files, {
      storage: ctx.storage,
      spool: scratch,
      folder: 'in',
      concurrency: ctx.concurrency,
      ...signal,
    });
    const table = TableConfig.of(ctx.snapshot.protocol, ctx.snapshot.metadata);
    const tracking = table.rowTracking.materialized;
    const scan = await scanRelation(
      ctx.session,
      ctx,
      bin.files,
      (f) => local.get(f.path)!,
      tracking ? { stableRowIds: tracking } : {},
    );
    const rows = targetFileRows(bin, ctx.targetFileBytes);
    const localDir = await scratch.folder('out');
    const clustering = clusteringColumns(ctx.snapshot);
    const written = await writeDataFiles(ctx.session, {
      relationSql:
        clustering.length > 0
          ? `SELECT * FROM (${scan.sql}) ORDER BY ${clustering.map(ident).join(', ')}`
          : scan.sql,
      ...(tracking ? { hiddenColumns: hiddenRowIdColumns(tracking) } : {}),
      schema: ctx.snapshot.schema,
      partitionColumns: ctx.snapshot.partitionColumns,
      columnMapping: table.columnMapping,
      localDir,
      ...(rows === undefined ? {} : { targetFileRows: rows, rowsAtMost: totalRecords(bin.files) }),
      stats: statsPolicyOf(ctx.snapshot),
    }).finally(() => scan.deleted?.drop());
    await uploadDataFiles(ctx.storage, written, { concurrency: ctx.concurrency, ...signal });
    // The rows came from this one partition: keep its log strings exactly as they were (the
    // writer re-encodes values, which may spell e.g. a timestamp differently).
    return written.map((f) => ({ ...f, partitionValues: bin.partitionValues }));
  } finally {
    await scratch.close();
  }
}

/**
 * Rows per output file so that a file lands near the target size, estimated from the bin's
 * bytes per row. Undefined (one file) when a file has no row count in its stats.
 */
export function targetFileRows(bin: CompactionBin, targetFileBytes: number): number | undefined {
  const rows = totalRecords(bin.files);
  if (rows === undefined || rows === 0 || bin.bytes === 0) return undefined;
  return Math.max(1, Math.floor(targetFileBytes / (bin.bytes / rows)));
}
