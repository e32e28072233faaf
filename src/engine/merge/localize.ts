/**
 * Local copies of the data files a write reads. DuckDB reads local files only (no httpfs here),
 * so files on S3 are downloaded into a spool folder, a bounded number at a time; files on
 * local storage are read in place. Only the files handed in are fetched: pruning happens first.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import pLimit from 'p-limit';
import { decodeLogPath } from '../../delta/partition-decode.js';
import type { LiveFile } from '../../delta/snapshot.js';
import type { Storage } from '../../storage/storage.js';
import { safeReadPath } from '../safe-alias.js';

/** What to localize. */
export interface LocalizeOptions {
  storage: Storage;
  /** Folder for the downloads (a spool folder of the caller's). */
  spoolDir: string;
  concurrency: number;
  signal?: AbortSignal;
}

/**
 * A local path for every file, keyed by `add.path`: the file itself on local storage, otherwise a
 * download named by a hash of its key (so names never hold glob characters or `..`).
 */
export async function localizeFiles(files: readonly LiveFile[], opts: LocalizeOptions): Promise<Map<string, string>> {
  const limit = pLimit(Math.max(1, opts.concurrency));
  const entries = await Promise.all(
    files.map((f) =>
      limit(async (): Promise<[string, string]> => {
        opts.signal?.throwIfAborted();
        return [f.path, await localize(f, opts)];
      }),
    ),
  );
  return new Map(entries);
}

async function localize(file: LiveFile, opts: LocalizeOptions): Promise<string> {
  const key = decodeLogPath(file.path, opts.storage.uri);
  const target = path.join(opts.spoolDir, `${createHash('sha256').update(key).digest('hex').slice(0, 32)}.parquet`);
  const inPlace = opts.storage.localPath(key);
  // DuckDB would expand `*`, `?`, `[` in a path as a glob: such files are read through a link.
  if (inPlace !== null) return safeReadPath(inPlace);
  await opts.storage.download(key, target, opts.signal ? { signal: opts.signal } : {});
  return target;
}
