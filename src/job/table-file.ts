/**
 * A small file tidemark keeps in the table folder (`_tidemark/`: tombstones, the ledger), read by
 * DuckDB: in place on local storage, else downloaded once per command into the spool (the files
 * never change once written, so later batches read the same copy).
 */
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { safeReadPath } from '../engine/safe-alias.js';
import { isTransient } from '../errors.js';
import type { Spool } from '../spool/spool.js';
import type { Storage } from '../storage/storage.js';

/** Where to read it, and the error of a file that is gone (a transient fault stays transient: exit 4, retry later). */
export interface TableFileSource {
  storage: Storage;
  spool: Spool;
  /** Spool folder shared by the command's batches. */
  folder: string;
  signal?: AbortSignal;
  missing(cause: unknown): Error;
}

/** A local, glob-safe path of the table file `path`. */
export async function localTableFile(src: TableFileSource, path: string): Promise<string> {
  const missing = (cause: unknown) => (isTransient(cause) ? cause : src.missing(cause));
  const inPlace = src.storage.localPath(path);
  if (inPlace !== null) {
    await access(inPlace).catch((cause: unknown) => {
      throw missing(cause);
    });
    return safeReadPath(inPlace);
  }
  const local = join(await src.spool.shared(src.folder), path.slice(path.lastIndexOf('/') + 1));
  const cached = await access(local).then(() => true, () => false);
  if (!cached) await src.storage.download(path, local, src.signal ? { signal: src.signal } : {}).catch((cause: unknown) => Promise.reject(missing(cause)));
  return safeReadPath(local);
}
