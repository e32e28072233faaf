/**
 * Deletion-vector descriptors (PROTOCOL.md#Deletion-Vector-Descriptor-Schema, #Derived-Fields): the unique id that keys replay,
 * where a descriptor's bytes are, and new descriptors for DVs tidemark writes. Pure: no I/O.
 *
 * Storage types: `u` is a `.bin` file named by a UUID (plus an optional folder prefix) below
 * the table root; `p` is an absolute, URL-encoded URI that must lie inside the table root;
 * `i` holds the bitmap inline as Z85. Anything else (Spark's `r`) is refused.
 */
import { DeltaLogError, UnsupportedFeatureError } from '../../errors.js';
import type { DeletionVectorDescriptor } from '../actions.js';
import { decodeLogPath } from '../partition-decode.js';
import { corruptDv, type DvContext } from './corrupt.js';
import type { DvFileEntry } from './dv-file.js';
import { serializeRowIndexSet } from './roaring.js';
import type { RowIndexSet } from './row-index-set.js';
import { Z85_UUID_LENGTH, uuidToZ85, z85Decode, z85Encode, z85ToUuid } from './z85.js';

/** Where a descriptor's serialized bitmap is. */
export type DvLocation =
  /** In a `.bin` file: `key` is relative to the table root; `offset` points at the size field. */
  | { kind: 'file'; key: string; offset: number; sizeInBytes: number }
  /** Inline in the descriptor: the bitmap bytes, padding removed. */
  | { kind: 'inline'; bytes: Uint8Array };

const INT32_MAX = 2 ** 31 - 1;
/** Spark writes alphanumeric prefixes (`delta.randomPrefixLength`); anything else could leave the table. */
const PREFIX = /^[A-Za-z0-9]*$/;
const URI_SCHEME = /^[a-zA-Z][a-zA-Z0-9+.-]*:/;

/** The DV's unique id (defined with the actions: it is half of a file action's replay key). */
export { dvUniqueId } from '../actions.js';

/**
 * Where the bytes of `dv` are, for a table at `tableUri`. A malformed descriptor is a
 * DeltaLogError; a storage type tidemark cannot read (`r` and unknown ones) is an
 * UnsupportedFeatureError whose message names it.
 */
export function resolveDeletionVector(
  dv: DeletionVectorDescriptor,
  tableUri: string,
  context: DvContext = {},
): DvLocation {
  const ctx: DvContext = { uri: tableUri, ...context };
  checkNumbers(dv, ctx);
  switch (dv.storageType) {
    case 'u':
      return { kind: 'file', key: uuidDvKey(dv.pathOrInlineDv, ctx), ...fileEntry(dv) };
    case 'p':
      return {
        kind: 'file',
        key: absoluteDvKey(dv.pathOrInlineDv, tableUri, ctx),
        ...fileEntry(dv),
      };
    case 'i':
      return { kind: 'inline', bytes: inlineBytes(dv, ctx) };
    default:
      throw new UnsupportedFeatureError(
        'deletionVectors',
        'read',
        tableUri,
        `deletion vector storage type ${JSON.stringify(dv.storageType)} is not supported; tidemark reads 'u', 'p' and 'i'`,
      );
  }
}

/** Key of a `u` DV's file: `<prefix>/deletion_vector_<uuid>.bin`, or without the folder when there is no prefix. */
export function uuidDvKey(pathOrInlineDv: string, context: DvContext = {}): string {
  if (pathOrInlineDv.length < Z85_UUID_LENGTH) {
    throw corruptDv(
      `a 'u' pathOrInlineDv has at least ${Z85_UUID_LENGTH} characters: ${JSON.stringify(pathOrInlineDv)}`,
      context,
    );
  }
  const prefix = pathOrInlineDv.slice(0, -Z85_UUID_LENGTH);
  // Z85 holds `/ ? # % & :`: the encoded part is decoded as Z85, never as a path or URL.
  const uuid = z85ToUuid(pathOrInlineDv.slice(-Z85_UUID_LENGTH), context);
  return dvFileKey(uuid, prefix, context);
}

/** Key, relative to the table root, of the `.bin` file named by `uuid` (and an optional prefix folder). */
export function dvFileKey(uuid: string, prefix = '', context: DvContext = {}): string {
  if (!PREFIX.test(prefix))
    throw corruptDv(`the random prefix ${JSON.stringify(prefix)} is not alphanumeric`, context);
  const name = `deletion_vector_${uuid}.bin`;
  return prefix === '' ? name : `${prefix}/${name}`;
}

/**
 * A `u` descriptor for a DV that tidemark wrote into the `.bin` file named by `uuid`.
 * `maxRowIndex` is never written (Spark strips it from the log).
 */
export function fileDescriptor(opts: {
  uuid: string;
  prefix?: string;
  entry: DvFileEntry;
  cardinality: number;
}): DeletionVectorDescriptor {
  const prefix = opts.prefix ?? '';
  dvFileKey(opts.uuid, prefix); // validates the prefix
  return {
    storageType: 'u',
    pathOrInlineDv: `${prefix}${uuidToZ85(opts.uuid)}`,
    offset: opts.entry.offset,
    sizeInBytes: opts.entry.sizeInBytes,
    cardinality: opts.cardinality,
  };
}

/** An `i` descriptor holding `set` inline: Z85 of the bitmap padded to 4 bytes; sizeInBytes is the unpadded length. */
export function inlineDescriptor(set: RowIndexSet): DeletionVectorDescriptor {
  const bytes = serializeRowIndexSet(set);
  return {
    storageType: 'i',
    pathOrInlineDv: z85Encode(bytes),
    sizeInBytes: bytes.length,
    cardinality: set.cardinality,
  };
}

function fileEntry(dv: DeletionVectorDescriptor): DvFileEntry {
  // The protocol says a missing offset means 0 (Spark and the kernel read from 0 too); byte 0
  // is the version byte, so such a DV fails the size check rather than being misread.
  return { offset: dv.offset ?? 0, sizeInBytes: dv.sizeInBytes };
}

function inlineBytes(dv: DeletionVectorDescriptor, context: DvContext): Uint8Array {
  const expected = Math.ceil(dv.sizeInBytes / 4) * 5;
  if (dv.pathOrInlineDv.length !== expected) {
    throw corruptDv(
      `inline data of ${dv.pathOrInlineDv.length} characters does not match sizeInBytes ${dv.sizeInBytes} (expected ${expected})`,
      context,
    );
  }
  return z85Decode(dv.pathOrInlineDv, dv.sizeInBytes, context);
}

/** Key of a `p` DV: an absolute URI, decoded once, which must lie below the table root (as a data file's). */
function absoluteDvKey(pathOrInlineDv: string, tableUri: string, context: DvContext): string {
  const outside = (cause?: unknown) =>
    corruptDv(
      `the 'p' path ${JSON.stringify(pathOrInlineDv)} is not a file inside the table root ${tableUri}; tidemark reads only deletion vectors below the table root`,
      { ...context, key: pathOrInlineDv },
      cause,
    );
  if (!URI_SCHEME.test(pathOrInlineDv)) throw outside();
  try {
    return decodeLogPath(pathOrInlineDv, tableUri);
  } catch (err) {
    if (err instanceof DeltaLogError && /percent-encoding/.test(err.message)) {
      throw corruptDv(
        `the 'p' path ${JSON.stringify(pathOrInlineDv)} is not valid percent-encoding`,
        context,
        err,
      );
    }
    throw outside(err);
  }
}

/** offset, sizeInBytes and cardinality must be what the protocol allows. */
function checkNumbers(dv: DeletionVectorDescriptor, context: DvContext): void {
  const int32 = (n: unknown) =>
    Number.isInteger(n) && (n as number) >= 0 && (n as number) <= INT32_MAX;
  if (typeof dv.pathOrInlineDv !== 'string')
    throw corruptDv('the descriptor has no pathOrInlineDv', context);
  if (!int32(dv.sizeInBytes))
    throw corruptDv(`sizeInBytes ${dv.sizeInBytes} is not an int32 of at least 0`, context);
  if (dv.offset !== null && dv.offset !== undefined && !int32(dv.offset)) {
    throw corruptDv(`offset ${dv.offset} is not an int32 of at least 0`, context);
  }
  if (!Number.isSafeInteger(dv.cardinality) || dv.cardinality < 0)
    throw corruptDv(`cardinality ${dv.cardinality} is not a count`, context);
}
