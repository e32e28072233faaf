/**
 * Fetch a batch's source files for DuckDB: local files are read in place, remote objects are
 * downloaded into the run's spool folder with bounded concurrency. Spool names are derived from
 * a counter plus a sanitized base name, so no object key can point outside the spool.
 */
import { basename, join } from 'node:path';
import pLimit from 'p-limit';
import type { DiscoveredFile } from '../discovery/index.js';
import { needsSafeAlias } from '../engine/sql.js';
import type { Progress } from '../log/progress.js';
import type { Storage } from '../storage/storage.js';

export interface FetchedFile {
  file: DiscoveredFile;
  /** Path for DuckDB to read. */
  localPath: string;
  /** ETag of the content actually fetched (it can differ from the listing if overwritten since). */
  etag: string;
  /** True when the file sits in the spool (and is deleted with it). */
  downloaded: boolean;
}

export interface FetchOptions {
  spoolDir: string;
  concurrency: number;
  signal?: AbortSignal;
  progress?: Progress;
}

let spoolCounter = 0;

/** A spool file name that keeps the key's suffixes (format, compression) and nothing else of it. */
export function spoolName(key: string): string {
  const base = basename(key).replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\.+/, '_');
  spoolCounter += 1;
  return `${String(spoolCounter).padStart(6, '0')}-${base.slice(-100) || 'file'}`;
}

/** Make every file of the batch readable on local disk. */
export async function fetchFiles(source: Storage, files: readonly DiscoveredFile[], opts: FetchOptions): Promise<FetchedFile[]> {
  const limit = pLimit(opts.concurrency);
  return Promise.all(
    files.map((file) =>
      limit(async (): Promise<FetchedFile> => {
        opts.signal?.throwIfAborted();
        const inPlace = source.localPath(file.key);
        if (inPlace !== null && !needsSafeAlias(inPlace)) {
          opts.progress?.tick(1, file.size);
          return { file, localPath: inPlace, etag: file.etag, downloaded: false };
        }
        const localPath = join(opts.spoolDir, spoolName(file.key));
        const info = await source.download(file.key, localPath, { signal: opts.signal });
        opts.progress?.tick(1, info.size);
        return { file, localPath, etag: info.etag, downloaded: true };
      }),
    ),
  );
}
