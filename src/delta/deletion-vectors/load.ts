/**
 * Loading a descriptor's deleted row indexes through Storage: one ranged read of exactly the
 * DV's size field, bitmap and CRC, then every check (size, CRC, bitmap shape, cardinality).
 * A missing `.bin` file is an error, never "no deleted rows": treating it as empty would
 * bring deleted rows back (fixtures/delta-tables/README.md, table 21, wrong answers).
 */
import type { DeletionVectorDescriptor } from '../actions.js';
import type { Storage } from '../../storage/storage.js';
import { corruptDv, type DvContext } from './corrupt.js';
import { resolveDeletionVector, dvUniqueId } from './descriptor.js';
import { dvByteRange, unpackStoredDv } from './dv-file.js';
import { parseRoaringBitmapArray } from './roaring.js';
import { RowIndexSet } from './row-index-set.js';

/** Options for `loadDeletionVector`. */
export interface LoadDeletionVectorOptions {
  /** The data file the DV belongs to (its log path), named in errors. */
  dataFile?: string;
  /** Reuse DVs already loaded for this table, keyed by unique id. */
  cache?: DeletionVectorCache;
}

/**
 * The row indexes `dv` deletes, for the table whose root `storage` is (`tableUri` is its URI,
 * used for `p` paths and messages). Corrupt or inconsistent data, and a missing file, are a
 * DeltaLogError carrying uri, key, offset and data file; an unreadable storage type is an
 * UnsupportedFeatureError. Storage errors pass through unchanged.
 */
export async function loadDeletionVector(
  storage: Storage,
  dv: DeletionVectorDescriptor,
  tableUri: string,
  opts: LoadDeletionVectorOptions = {},
): Promise<RowIndexSet> {
  if (!opts.cache) return loadUncached(storage, dv, tableUri, opts.dataFile);
  return opts.cache.get(tableUri, dv, () => loadUncached(storage, dv, tableUri, opts.dataFile));
}

async function loadUncached(
  storage: Storage,
  dv: DeletionVectorDescriptor,
  tableUri: string,
  dataFile?: string,
): Promise<RowIndexSet> {
  const context: DvContext = dataFile === undefined ? {} : { dataFile };
  const location = resolveDeletionVector(dv, tableUri, context);
  // Spark and the kernel skip the read for an empty DV; so does tidemark.
  if (dv.cardinality === 0) return RowIndexSet.empty();
  let bitmap: Uint8Array;
  let where: DvContext;
  if (location.kind === 'inline') {
    bitmap = location.bytes;
    where = { uri: tableUri, ...context, dv: dvUniqueId(dv) };
  } else {
    where = { uri: tableUri, ...context, key: location.key, offset: location.offset };
    const chunk = await storage.read(location.key, dvByteRange(location));
    if (chunk === null) throw corruptDv('DV file not found', { ...where, notFound: true });
    bitmap = unpackStoredDv(chunk, location, where);
  }
  const set = parseRoaringBitmapArray(bitmap, where);
  if (set.cardinality !== dv.cardinality) {
    throw corruptDv(
      `the bitmap holds ${set.cardinality} row indexes, but the descriptor's cardinality is ${dv.cardinality}`,
      where,
    );
  }
  return set;
}

/** Default number of DVs a cache keeps. */
export const DEFAULT_DV_CACHE_ENTRIES = 1024;

/**
 * Loaded DVs by table and unique id, least recently used evicted first. Concurrent loads of
 * the same DV share one read; a failed load is not remembered.
 */
export class DeletionVectorCache {
  private readonly entries = new Map<string, Promise<RowIndexSet>>();

  constructor(private readonly maxEntries = DEFAULT_DV_CACHE_ENTRIES) {}

  /** Number of DVs held. */
  get size(): number {
    return this.entries.size;
  }

  /** The cached DV, or the result of `load` (cached when it succeeds). */
  get(
    tableUri: string,
    dv: DeletionVectorDescriptor,
    load: () => Promise<RowIndexSet>,
  ): Promise<RowIndexSet> {
    const id = `${tableUri}\u0000${dvUniqueId(dv)}`;
    const hit = this.entries.get(id);
    if (hit) {
      this.entries.delete(id); // re-insert: Map order is the recency order
      this.entries.set(id, hit);
      return hit;
    }
    const loading = load();
    this.entries.set(id, loading);
    loading.catch(() => {
      if (this.entries.get(id) === loading) this.entries.delete(id);
    });
    while (this.entries.size > this.maxEntries)
      this.entries.delete(this.entries.keys().next().value!);
    return loading;
  }

  /** Forget every DV. */
  clear(): void {
    this.entries.clear();
  }
}
