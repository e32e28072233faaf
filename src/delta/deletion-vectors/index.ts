/**
 * Deletion vectors (PROTOCOL.md#Deletion-Vectors; docs/delta-protocol.md, Deletion vectors): the codec for the sets of deleted row indexes
 * that Spark (and tidemark) attach to data files.
 *
 * - `RowIndexSet`: a sorted set of row indexes (union, cardinality, max, iteration).
 * - `serializeRowIndexSet` / `parseRoaringBitmapArray`: the RoaringBitmapArray bytes.
 * - `packDvFile` / `unpackStoredDv` / `listDvFileEntries`: the `.bin` file layout with CRCs.
 * - `dvUniqueId` / `resolveDeletionVector` / `fileDescriptor` / `inlineDescriptor`: descriptors.
 * - `loadDeletionVector` (+ `DeletionVectorCache`) and `writeDeletionVectorFile`: through Storage.
 *
 * Everything but the last two is pure. Bad data is a DeltaLogError saying what is wrong and
 * where (uri, key, offset, data file); unsupported storage types an UnsupportedFeatureError.
 */

/** Sets of row indexes. */
export { RowIndexSet } from './row-index-set.js';

/** Z85 as Delta uses it, and UUID ↔ 20-character Z85. */
export { uuidToZ85, z85Decode, z85Encode, z85ToUuid } from './z85.js';

/** The RoaringBitmapArray serialization (portable and native magic). */
export { parseRoaringBitmapArray, serializeRowIndexSet } from './roaring.js';

/** The `.bin` file: version byte, then size, bitmap and CRC per DV. */
export {
  dvByteRange,
  listDvFileEntries,
  packDvFile,
  readDvFromFile,
  unpackStoredDv,
} from './dv-file.js';

/** Descriptors: unique id, location of the bytes, new `u` and `i` descriptors. */
export {
  dvUniqueId,
  fileDescriptor,
  inlineDescriptor,
  resolveDeletionVector,
  type DvLocation,
} from './descriptor.js';

/** Loading a descriptor's row indexes through Storage, with an optional cache. */
export { DeletionVectorCache, loadDeletionVector } from './load.js';

/** Planning and writing a new packed `.bin` file. */
export { planDvFile, writeDeletionVectorFile } from './write.js';
