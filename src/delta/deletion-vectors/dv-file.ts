/**
 * The deletion-vector `.bin` file (PROTOCOL.md#Deletion-Vector-File-Storage-Format): byte 0 is the format version 1;
 * then, per DV, a big-endian int32 size, the serialized bitmap, and a big-endian CRC-32 of
 * the bitmap bytes only. A descriptor's `offset` points at the size field, so the first DV
 * is at 1 and the next at offset + 4 + size + 4 (how Spark packs several DVs in one file).
 */
import { crc32 } from 'node:zlib';
import type { ByteRange } from '../../storage/storage.js';
import { corruptDv, type DvContext } from './corrupt.js';

/** The format version in byte 0 of every `.bin` file. */
export const DV_FILE_FORMAT_VERSION = 1;

/** offset and size are int32 in the log, so a `.bin` file must stay below 2 GiB. */
export const MAX_DV_FILE_BYTES = 2 ** 31 - 1;

/** Where one DV sits in a `.bin` file: what its descriptor's `offset` and `sizeInBytes` say. */
export interface DvFileEntry {
  /** Position of the DV's 4-byte size field. */
  offset: number;
  /** Length of the serialized bitmap, without the size field and the CRC. */
  sizeInBytes: number;
}

/**
 * Lay out a `.bin` file holding the given serialized bitmaps, in order, and say where each
 * one is. Throws RangeError for no bitmaps (never write an empty file) or a file of 2 GiB or more.
 */
export function packDvFile(bitmaps: readonly Uint8Array[]): {
  bytes: Uint8Array;
  entries: DvFileEntry[];
} {
  if (bitmaps.length === 0)
    throw new RangeError('a deletion vector file needs at least one deletion vector');
  const total = bitmaps.reduce((sum, b) => sum + 4 + b.length + 4, 1);
  if (total > MAX_DV_FILE_BYTES)
    throw new RangeError(
      `a deletion vector file of ${total} bytes would not fit int32 offsets; split it`,
    );
  const bytes = new Uint8Array(total);
  const view = new DataView(bytes.buffer);
  bytes[0] = DV_FILE_FORMAT_VERSION;
  const entries: DvFileEntry[] = [];
  let pos = 1;
  for (const bitmap of bitmaps) {
    entries.push({ offset: pos, sizeInBytes: bitmap.length });
    view.setInt32(pos, bitmap.length, false);
    bytes.set(bitmap, pos + 4);
    view.setUint32(pos + 4 + bitmap.length, crc32(bitmap), false);
    pos += 4 + bitmap.length + 4;
  }
  return { bytes, entries };
}

/** The byte range (inclusive end) holding one DV's size field, bitmap and CRC. */
export function dvByteRange(entry: DvFileEntry): Required<ByteRange> {
  return { start: entry.offset, end: entry.offset + 4 + entry.sizeInBytes + 4 - 1 };
}

/**
 * The bitmap bytes of one stored DV, given the bytes of its range (see `dvByteRange`):
 * checks that the size field equals `sizeInBytes` and that the CRC matches.
 */
export function unpackStoredDv(
  chunk: Uint8Array,
  entry: DvFileEntry,
  context: DvContext = {},
): Uint8Array {
  const ctx = { ...context, offset: entry.offset };
  if (chunk.length < 4)
    throw corruptDv(
      `the file ends before the size field (${chunk.length} bytes from the offset)`,
      ctx,
    );
  const view = new DataView(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  const size = view.getInt32(0, false);
  if (size !== entry.sizeInBytes)
    throw corruptDv(
      `the size field says ${size} bytes, but the descriptor says ${entry.sizeInBytes}`,
      ctx,
    );
  if (chunk.length < 4 + size + 4) {
    throw corruptDv(
      `the file ends ${4 + size + 4 - chunk.length} bytes before the end of the DV (size ${size} plus CRC)`,
      ctx,
    );
  }
  const bitmap = chunk.subarray(4, 4 + size);
  const stored = view.getUint32(4 + size, false);
  const actual = crc32(bitmap);
  if (stored !== actual)
    throw corruptDv(
      `CRC-32 mismatch: stored ${hex(stored)}, computed ${hex(actual)} over ${size} bytes`,
      ctx,
    );
  return bitmap;
}

/** The bitmap bytes of the DV at `entry` in a whole `.bin` file (checks version, size and CRC). */
export function readDvFromFile(
  file: Uint8Array,
  entry: DvFileEntry,
  context: DvContext = {},
): Uint8Array {
  checkVersion(file, context);
  const range = dvByteRange(entry);
  return unpackStoredDv(file.subarray(range.start, range.end + 1), entry, context);
}

/**
 * Every DV in a whole `.bin` file, walking from offset 1 to the end and checking each
 * size and CRC. Used to audit files (vacuum, tests); readers go by descriptor instead.
 */
export function listDvFileEntries(file: Uint8Array, context: DvContext = {}): DvFileEntry[] {
  checkVersion(file, context);
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  const entries: DvFileEntry[] = [];
  for (let pos = 1; pos < file.length;) {
    if (file.length - pos < 4)
      throw corruptDv(`${file.length - pos} stray bytes at the end of the file`, {
        ...context,
        offset: pos,
      });
    const entry = { offset: pos, sizeInBytes: view.getInt32(pos, false) };
    if (entry.sizeInBytes < 0)
      throw corruptDv(`negative size ${entry.sizeInBytes}`, { ...context, offset: pos });
    unpackStoredDv(file.subarray(pos, pos + 4 + entry.sizeInBytes + 4), entry, context);
    entries.push(entry);
    pos += 4 + entry.sizeInBytes + 4;
  }
  return entries;
}

function checkVersion(file: Uint8Array, context: DvContext): void {
  if (file.length === 0) throw corruptDv('the file is empty', context);
  if (file[0] !== DV_FILE_FORMAT_VERSION)
    throw corruptDv(
      `unknown file format version ${file[0]} (expected ${DV_FILE_FORMAT_VERSION})`,
      context,
    );
}

function hex(n: number): string {
  return n.toString(16).padStart(8, '0');
}
