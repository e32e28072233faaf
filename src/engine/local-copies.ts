/**
 * Local copies of stored files, for DuckDB, which reads local files only (no httpfs here). One
 * rule for every reader (source files, data files, checkpoints, tombstone and ledger files):
 *
 * - a file on local storage is read in place, through a glob-safe alias when its path holds a
 *   character DuckDB would expand (./safe-alias.ts);
 * - any other is downloaded into the spool, a bounded number at a time, under a plain name: a
 *   hash of its key (unique, never `..` or a glob character) and its base name's own characters
 *   (so format and compression suffixes such as `.csv.gz` stay);
 * - `cache`: into the spool's shared folder of that name, where an earlier copy is reused (for
 *   files that never change once written); otherwise into a fresh folder, removed by `dispose`
 *   (or with the spool);
 * - after a failure no further download starts, and the call returns once those under way have
 *   settled, having removed its fresh folder: nothing lands in the spool behind its back.
 */
import { createHash } from 'node:crypto';
import { access } from 'node:fs/promises';
import { basename, join } from 'node:path';
import pLimit from 'p-limit';
import { isTransient } from '../errors.js';
import { removeFolder, type Spool } from '../spool/spool.js';
import type { Storage } from '../storage/storage.js';
import { safeReadPath } from './safe-alias.js';

/** Downloads (and a write's uploads, ./data-file-io.ts) at once when the caller does not say. */
export const DEFAULT_TRANSFER_CONCURRENCY = 8;

/** One stored file, readable on local disk. */
export interface LocalCopy {
  key: string;
  /** A path DuckDB reads literally (no glob expansion). */
  path: string;
  /** True when downloaded into the spool (false: read in place, or reused from the cache). */
  downloaded: boolean;
  /** The ETag and size of the content downloaded, when downloaded now. */
  etag?: string;
  size?: number;
}

export interface LocalCopyOptions {
  /** Name of the fresh spool folder for the downloads (default `copies`). */
  folder?: string;
  /** Name of the spool's shared folder to download into and reuse copies from (see the module comment). */
  cache?: string;
  /** Downloads at once (default 8). */
  concurrency?: number;
  signal?: AbortSignal;
  /**
   * The error for a file that is gone: in-place files are then checked to exist, and a failed
   * download is this error unless transient (a transient fault stays itself: retry later).
   * Without it, a missing in-place file fails when DuckDB reads it.
   */
  missing?: (key: string, cause: unknown) => Error;
  /** Called as each file becomes readable (progress). */
  onCopy?: (copy: LocalCopy) => void;
}

/** The copies of one call, keyed by storage key, and the folder they hold. */
export interface LocalCopies {
  /** By key, in the order the keys were given. */
  readonly byKey: ReadonlyMap<string, LocalCopy>;
  /** The local path of `key` (one of the keys given). */
  pathOf(key: string): string;
  /** Remove this call's fresh download folder early (a cache stays with the spool). Safe to call twice. */
  dispose(): Promise<void>;
}

/** Make every key readable on local disk; see the module comment. */
export async function localCopies(
  storage: Storage,
  keys: readonly string[],
  spool: Spool,
  opts: LocalCopyOptions = {},
): Promise<LocalCopies> {
  const unique = [...new Set(keys)];
  let folder: Promise<string> | null = null;
  // Created on the first download only: a local table makes no empty folders.
  const dir = (): Promise<string> =>
    (folder ??=
      opts.cache !== undefined ? spool.shared(opts.cache) : spool.folder(opts.folder ?? 'copies'));
  const dispose = async (): Promise<void> => {
    if (folder === null || opts.cache !== undefined) return;
    const created = await folder.catch(() => null);
    if (created !== null) await removeFolder(created);
  };
  const limit = pLimit(Math.max(1, opts.concurrency ?? DEFAULT_TRANSFER_CONCURRENCY));
  let failed = false;
  const settled = await Promise.allSettled(
    unique.map((key) =>
      limit(async (): Promise<LocalCopy> => {
        if (failed) throw new Error('not started: an earlier copy failed');
        opts.signal?.throwIfAborted();
        try {
          const copy = await copyOf(storage, key, dir, opts);
          opts.onCopy?.(copy);
          return copy;
        } catch (err) {
          failed = true;
          throw err;
        }
      }),
    ),
  );
  const rejected = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (rejected) {
    await dispose();
    throw rejected.reason;
  }
  const byKey = new Map(
    settled.map((s) => [
      (s as PromiseFulfilledResult<LocalCopy>).value.key,
      (s as PromiseFulfilledResult<LocalCopy>).value,
    ]),
  );
  return {
    byKey,
    pathOf: (key) => {
      const copy = byKey.get(key);
      if (!copy) throw new Error(`[engine] no local copy of ${key} was made`);
      return copy.path;
    },
    dispose,
  };
}

async function copyOf(
  storage: Storage,
  key: string,
  dir: () => Promise<string>,
  opts: LocalCopyOptions,
): Promise<LocalCopy> {
  const missing = (cause: unknown): unknown =>
    opts.missing && !isTransient(cause) ? opts.missing(key, cause) : cause;
  const inPlace = storage.localPath(key);
  if (inPlace !== null) {
    if (opts.missing)
      await access(inPlace).catch((cause: unknown) => Promise.reject(missing(cause)));
    return { key, path: safeReadPath(inPlace), downloaded: false };
  }
  const local = join(await dir(), spoolName(key));
  if (
    opts.cache !== undefined &&
    (await access(local).then(
      () => true,
      () => false,
    ))
  )
    return { key, path: safeReadPath(local), downloaded: false };
  const info = await storage
    .download(key, local, opts.signal ? { signal: opts.signal } : {})
    .catch((cause: unknown) => Promise.reject(missing(cause)));
  return { key, path: safeReadPath(local), downloaded: true, etag: info.etag, size: info.size };
}

/** A spool file name for `key`: a hash of the key, then the base name's plain characters (suffixes kept). */
export function spoolName(key: string): string {
  const base = basename(key)
    .replace(/[^A-Za-z0-9._-]/g, '_')
    .replace(/^\.+/, '_');
  const hash = createHash('sha256').update(key).digest('hex').slice(0, 16);
  return `${hash}-${base.slice(-100) || 'file'}`;
}
