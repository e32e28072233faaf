/**
 * Data files between a table's storage and local disk: the stored files a write or a scan reads
 * (local copies, ./local-copies.ts), and the new files a write makes (written into the spool by
 * ./data-files.ts, then uploaded below the table root). Data files get unique names and are
 * uploaded before the commit, so a failed or lost commit leaves only orphans.
 */
import pLimit from 'p-limit';
import type { ColumnMappingMode } from '../delta/column-mapping.js';
import { decodeLogPath } from '../delta/partition-decode.js';
import type { StructType } from '../delta/schema.js';
import type { LiveFile } from '../delta/snapshot.js';
import type { Spool } from '../spool/spool.js';
import type { Storage } from '../storage/storage.js';
import { writeDataFiles, type WrittenFile } from './data-files.js';
import type { DuckSession } from './duckdb.js';
import type { StatsPolicy } from './file-stats.js';
import { DEFAULT_TRANSFER_CONCURRENCY, localCopies } from './local-copies.js';
import type { HiddenColumn } from './row-ids.js';

/** Where to put the local copies of a table's data files. */
export interface LocalDataFileOptions {
  storage: Storage;
  spool: Spool;
  /** Name of the spool folder for the downloads. */
  folder: string;
  concurrency?: number;
  signal?: AbortSignal;
}

/** Local copies of data files, keyed by `add.path`. */
export interface LocalDataFiles {
  paths: Map<string, string>;
  /** Remove the downloads now (else they go with the spool). */
  dispose(): Promise<void>;
}

/** A local path for every data file (./local-copies.ts: in place on local storage, else downloaded). */
export async function localDataFiles(
  files: readonly LiveFile[],
  opts: LocalDataFileOptions,
): Promise<LocalDataFiles> {
  const keys = files.map((f) => decodeLogPath(f.path, opts.storage.uri));
  const copies = await localCopies(opts.storage, keys, opts.spool, {
    folder: opts.folder,
    concurrency: opts.concurrency ?? DEFAULT_TRANSFER_CONCURRENCY,
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
  return {
    paths: new Map(files.map((f, i) => [f.path, copies.pathOf(keys[i]!)])),
    dispose: () => copies.dispose(),
  };
}

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
  /** Hidden columns written after the schema's (row tracking's stable ids; ./row-ids.ts). */
  hiddenColumns?: readonly HiddenColumn[];
  /** Which columns get statistics: the table's own setting and clustering columns. */
  stats: StatsPolicy;
}

/** How many rows per file, and what the caller knows of the row count (see WriteDataFilesOptions). */
export interface FileSizing {
  targetFileRows?: number | undefined;
  rowsAtMost?: number | undefined;
}

/**
 * Write `relationSql`'s rows (in its order) as data files, one Parquet per partition (split at
 * `targetFileRows`), into a spool folder, and upload them; [] when it has no rows.
 */
export async function writeAndUpload(
  opts: OutputOptions,
  relationSql: string,
  folder: string,
  sizing: FileSizing = {},
): Promise<WrittenFile[]> {
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
  await uploadDataFiles(opts.storage, files, {
    concurrency: opts.concurrency,
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
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
        return storage.upload(file.relativePath, file.localPath, {
          contentType: 'application/octet-stream',
          signal: opts.signal,
        });
      }),
    ),
  );
}

/** Total size of written files. */
export function bytesOf(files: readonly { size: number }[]): number {
  return files.reduce((sum, f) => sum + f.size, 0);
}
