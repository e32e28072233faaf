/**
 * Split a plan's files into batches bounded by file count and bytes. Files stay in plan
 * order (oldest first), so each batch's state can be committed on its own.
 */

export interface Sized {
  size: number;
}

/** Consecutive runs of `files` with at most `maxFiles` files and `maxBytes` bytes (a single larger file gets a batch of its own). */
export function splitBatches<T extends Sized>(
  files: readonly T[],
  maxFiles: number,
  maxBytes: number,
): T[][] {
  const batches: T[][] = [];
  let current: T[] = [];
  let bytes = 0;
  for (const file of files) {
    const full = current.length >= maxFiles || (current.length > 0 && bytes + file.size > maxBytes);
    if (full) {
      batches.push(current);
      current = [];
      bytes = 0;
    }
    current.push(file);
    bytes += file.size;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}
