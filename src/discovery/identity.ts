/**
 * Rules both discovery modes apply to a single file: what counts as data, and how a file
 * already seen is recognised (key + ETag) and treated when it was overwritten.
 */
import type { OnOverwrite } from './config.js';
import type { Decision } from './plan.js';

/** Name of the marker a writer drops into a folder when it is complete. */
export const SUCCESS_MARKER = '_SUCCESS';

/**
 * True when a path (relative to the partition or source root) is not data: a folder
 * marker object (`x/`), or any segment starting with `_` or `.` (Spark's convention for
 * `_SUCCESS`, `_temporary/`, `.crc` files and hidden files).
 */
export function isNotData(relPath: string): boolean {
  if (relPath === '' || relPath.endsWith('/')) return true;
  return relPath.split('/').some((seg) => seg.startsWith('_') || seg.startsWith('.'));
}

/** The folder part of a key, with its trailing `/` (`a/b/` for `a/b/c.csv`, `` for `c.csv`). */
export function folderOf(key: string): string {
  return key.slice(0, key.lastIndexOf('/') + 1);
}

/**
 * The decision about a data file given the ETag remembered for its key (undefined when
 * the key was never loaded, as far as the state remembers).
 */
export function judgeFile(
  remembered: string | undefined,
  etag: string,
  onOverwrite: OnOverwrite,
): Pick<Decision, 'action' | 'reason'> {
  if (remembered === undefined) return { action: 'load', reason: 'new' };
  if (remembered === etag) return { action: 'skip', reason: 'already loaded' };
  return onOverwrite === 'reload'
    ? { action: 'load', reason: 'overwritten, reloading' }
    : { action: 'skip', reason: 'overwritten, ignored' };
}
