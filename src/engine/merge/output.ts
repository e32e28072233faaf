/**
 * Writing the new data files of a write: one Parquet per partition (split at `targetFileRows`),
 * staged in the spool folder and then uploaded below the table root. Data files get unique
 * names and are written before the commit, so a failed or lost commit leaves only orphans.
 */
import path from 'node:path';
import type { StructType } from '../../delta/schema.js';
import { uploadDataFiles } from '../../delta/table.js';
import type { Storage } from '../../storage/storage.js';
import { writeDataFiles, type WrittenFile } from '../data-files.js';
import type { DuckSession } from '../duckdb.js';
import type { TargetTable } from './target.js';
import { DEFAULT_DOWNLOAD_CONCURRENCY, type WriteTarget } from './types.js';

/** Where and how to write. */
export interface OutputOptions {
  session: DuckSession;
  storage: Storage;
  schema: StructType;
  partitionColumns: readonly string[];
  spoolDir: string;
  concurrency: number;
  signal?: AbortSignal;
}

/** The output options of a write into `target`'s table, from the write's own options. */
export function outputOptionsFor(opts: WriteTarget, target: TargetTable, spoolDir: string): OutputOptions {
  return {
    session: opts.session,
    storage: opts.table.storage,
    schema: target.schema,
    partitionColumns: target.partitionColumns,
    spoolDir,
    concurrency: opts.concurrency ?? DEFAULT_DOWNLOAD_CONCURRENCY,
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
    localDir: path.join(opts.spoolDir, folder),
    ...(sizing.targetFileRows === undefined ? {} : { targetFileRows: sizing.targetFileRows }),
    ...(sizing.rowsAtMost === undefined ? {} : { rowsAtMost: sizing.rowsAtMost }),
  });
  await uploadDataFiles(opts.storage, files, { concurrency: opts.concurrency, ...(opts.signal ? { signal: opts.signal } : {}) });
  return files;
}

/** Total size of written files. */
export function bytesOf(files: readonly { size: number }[]): number {
  return files.reduce((sum, f) => sum + f.size, 0);
}
