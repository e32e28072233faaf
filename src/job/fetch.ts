/**
 * Fetch a batch's source files for DuckDB (engine/local-copies.ts): local files are read in
 * place, remote objects are downloaded into a spool folder with bounded concurrency, under names
 * no object key can point outside the spool with.
 */
import type { DiscoveredFile } from '../discovery/index.js';
import { localCopies } from '../engine/local-copies.js';
import type { Progress } from '../log/progress.js';
import type { Spool } from '../spool/spool.js';
import type { Storage } from '../storage/storage.js';

export interface FetchedFile {
  file: DiscoveredFile;
  /** Path for DuckDB to read. */
  localPath: string;
  /** ETag of the content actually fetched (it can differ from the listing if overwritten since). */
  etag: string;
}

export interface FetchOptions {
  /** The batch's spool: downloads go into a folder of it (the caller removes it with the spool). */
  spool: Spool;
  concurrency: number;
  signal?: AbortSignal;
  progress?: Progress;
}

/** Make every file of the batch readable on local disk. */
export async function fetchFiles(
  source: Storage,
  files: readonly DiscoveredFile[],
  opts: FetchOptions,
): Promise<FetchedFile[]> {
  const sizes = new Map(files.map((f) => [f.key, f.size]));
  const copies = await localCopies(
    source,
    files.map((f) => f.key),
    opts.spool,
    {
      folder: 'downloads',
      concurrency: opts.concurrency,
      ...(opts.signal ? { signal: opts.signal } : {}),
      onCopy: (copy) => opts.progress?.tick(1, copy.size ?? sizes.get(copy.key) ?? 0),
    },
  );
  return files.map((file) => {
    const copy = copies.byKey.get(file.key)!;
    return { file, localPath: copy.path, etag: copy.etag ?? file.etag };
  });
}
