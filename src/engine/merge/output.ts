/**
 * Writing the new data files of a write: one Parquet per partition (split at `targetFileRows`),
 * written into a spool folder and then uploaded below the table root. Data files get unique
 * names and are written before the commit, so a failed or lost commit leaves only orphans.
 */
import pLimit from 'p-limit';
import type { ColumnMappingMode } from '../../delta/column-mapping.js';
import type { StructType } from '../../delta/schema.js';
import type { Spool } from '../../spool/spool.js';
import type { Storage } from '../../storage/storage.js';
import { writeDataFiles, type WrittenFile } from '../data-files.js';
import type { DuckSession } from '../duckdb.js';
import { statsPolicyOf, type StatsPolicy } from '../file-stats.js';
import type { HiddenColumn } from '../row-ids.js';
import { DEFAULT_TRANSFER_CONCURRENCY, type WriteTarget } from './options.js';
import type { TargetTable } from './target.js';

/** Where and how to write. */
export interface OutputOptions {
  session: DuckSession;
  storage: Storage;
  schema: StructType;
  partitionColumns: readonly string[];
  columnMapping: ColumnMappingMode;
  spool: Spool;
  concurrency: number;
  signal?: AbortSignal;
  /** Hidden columns written after the schema's (row tracking's stable ids; ../row-ids.ts). */
  hiddenColumns?: readonly HiddenColumn[];
  /** Which columns get statistics: the table's own setting and clustering columns. */
  stats: StatsPolicy;
}

/** The output options of a write into `target`'s table, from the write's own options. */
export function outputOptionsFor(opts: WriteTarget, target: TargetTable): OutputOptions {
  return {
    session: opts.session,
    storage: opts.storage,
    schema: target.schema,
    partitionColumns: target.partitionColumns,
    columnMapping: target.columnMapping,
    spool: opts.spool,
    concurrency: opts.concurrency ?? DEFAULT_TRANSFER_CONCURRENCY,
    stats: statsPolicyOf(opts.snapshot),
    ...(opts.signal ? { signal: opts.signal } : {}),
  };
}

/** How many rows per file, and what the caller knows of the row count (see WriteDataFilesOptions). */
export interface FileSizing {
  targetFileRows?: number | undefined;
  rowsAtMost?: number | undefined;
}

/** Write `relationSql`'s rows (in its order) as data files and upload them; [] when it has no rows. */
export async function writeAndUpload(opts: OutputOptions, relationSql: string, folder: string, sizing: FileSizing = {}): Promise<WrittenFile[]> {
  opts.signal?.throwIfAborted();
  const files = await writeDataFiles(opts.session, {
    relationSql,
    schema: opts.schema,
    partitionColumns: opts.partitionColumns,
    columnMapping: opts.columnMapping,
    localDir: await opts.spool.folder(folder),
    ...(sizing.targetFileRows === undefined ? {} : { targetFileRows: sizing.targetFileRows }),
    ...(sizing.rowsAtMost === undefined ? {} : { rowsAtMost: sizing.rowsAtMost }),
    ...(opts.hiddenColumns ? { hiddenColumns: opts.hiddenColumns } : {}),
    stats: opts.stats,
  });
  await uploadDataFiles(opts.storage, files, { concurrency: opts.concurrency, ...(opts.signal ? { signal: opts.signal } : {}) });
  return files;
}

/** Upload written data files to their keys below the table root, a few at a time. */
export async function uploadDataFiles(
  storage: Storage,
  files: readonly WrittenFile[],
  opts: { concurrency?: number; signal?: AbortSignal } = {},
): Promise<void> {
  const limit = pLimit(opts.concurrency ?? DEFAULT_TRANSFER_CONCURRENCY);
  await Promise.all(
    files.map((file) =>
      limit(() => {
        opts.signal?.throwIfAborted();
        return storage.upload(file.relativePath, file.localPath, { contentType: 'application/octet-stream', signal: opts.signal });
      }),
    ),
  );
}

/** Total size of written files. */
export function bytesOf(files: readonly { size: number }[]): number {
  return files.reduce((sum, f) => sum + f.size, 0);
}
