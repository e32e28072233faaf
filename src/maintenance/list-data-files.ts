/**
 * Listing the files VACUUM may consider: every object under the table root except those in
 * hidden folders and hidden files, plus the change data files under `_change_data/`. Hidden
 * means a name starting with `_` or `.` (`_delta_log/`, `_tidemark/`, `.crc` files), except
 * partition folders such as `_p=1` of a partition column `_p`. Folders are walked level by level
 * with a delimiter, so the log and other hidden trees are never listed at all.
 *
 * Change data files are data files no snapshot lists (only their commit's `cdc` action names
 * them), so VACUUM deletes them once they are older than the retention, as Spark does
 * (its `isHiddenDirectory` does not count `_change_data`). `_delta_index/` and other writers'
 * hidden folders are left alone: that costs only space.
 */
import pLimit from 'p-limit';
import { CHANGE_DATA_FOLDER } from '../delta/change-data.js';
import { escapePartitionName } from '../delta/partition-encode.js';
import type { ObjectInfo, Storage } from '../storage/storage.js';

/** Folder listings in flight at once. */
const LIST_CONCURRENCY = 8;

/** The non-hidden files under the storage root and the change data files, in no particular order. */
export async function listDataFiles(
  storage: Storage,
  partitionColumns: readonly string[],
  opts: { signal?: AbortSignal } = {},
): Promise<ObjectInfo[]> {
  const partitionPrefixes = partitionColumns.map((c) => `${escapePartitionName(c)}=`);
  const isHidden = (name: string): boolean =>
    (name.startsWith('_') || name.startsWith('.')) &&
    !partitionPrefixes.some((p) => name.startsWith(p));
  const limit = pLimit(LIST_CONCURRENCY);
  const found: ObjectInfo[] = [];
  // Only the listing holds a slot, never a walk waiting for its subfolders (no deadlock).
  const walk = async (prefix: string): Promise<void> => {
    const page = await limit(() =>
      storage.listAll({ prefix, delimiter: '/', ...(opts.signal ? { signal: opts.signal } : {}) }),
    );
    for (const object of page.objects) {
      const name = object.key.slice(prefix.length);
      if (name !== '' && !name.includes('/') && !isHidden(name)) found.push(object);
    }
    const folders = page.commonPrefixes.filter((p) => !isHidden(p.slice(prefix.length, -1)));
    await Promise.all(folders.map(walk));
  };
  await Promise.all([walk(''), walk(`${CHANGE_DATA_FOLDER}/`)]);
  return found;
}
