/**
 * Delta's RoaringBitmapArray serialization (PROTOCOL.md#Deletion-Vector-File-Storage-Format; RoaringFormatSpec).
 * Every number is little-endian. The portable form is: u32 magic 1681511377, u64 bucket
 * count, then per bucket in ascending order a u32 key (the high 32 bits of the row index)
 * and a standard 32-bit RoaringBitmap of the low 32 bits.
 *
 * Reading accepts what Spark writes and has written: array, bitmap and run containers,
 * empty buckets, and the older native magic 1681511376. Writing produces the portable form
 * with array and bitmap containers only (legal, and what the spec calls the
 * no-run-container cookie). Everything read is checked; a malformed bitmap is a
 * DeltaLogError saying what is wrong.
 */
import { corruptDv, type DvContext } from './corrupt.js';
import { RowIndexSet, sortedValues, trustedRowIndexSet } from './row-index-set.js';

/** Magic of the portable format, the one Spark writes and tidemark writes. */
export const PORTABLE_MAGIC = 1681511377;
/** Magic of the older native format: u32 count, then per bitmap a u32 length and the bitmap. */
export const NATIVE_MAGIC = 1681511376;

const COOKIE_NO_RUN = 12346;
const COOKIE_RUN = 12347;
/** With run containers, offsets are written only from this many containers on. */
const NO_OFFSET_THRESHOLD = 4;
/** Non-run containers up to this cardinality are sorted u16 arrays; above it, bitsets. */
const ARRAY_MAX = 4096;
const BITSET_BYTES = 8192;
const TWO_32 = 2 ** 32;
/** Buckets from this key on would hold row indexes above 2^53 − 1, which a JS number cannot hold. */
const MAX_SAFE_BUCKET = 2 ** 21;

/** Serialize a set in the portable format, with array (≤ 4096 values) and bitset containers. */
export function serializeRowIndexSet(set: RowIndexSet): Uint8Array {
  const values = sortedValues(set);
  const bytes = new Uint8Array(portableSize(values));
  const view = new DataView(bytes.buffer);
  view.setUint32(0, PORTABLE_MAGIC, true);
  let buckets = 0;
  let pos = 12;
  for (let i = 0; i < values.length;) {
    const end = bucketEnd(values, i);
    view.setUint32(pos, Math.floor(values[i]! / TWO_32), true);
    pos = writeBitmap32(bytes, view, pos + 4, values, i, end);
    buckets++;
    i = end;
  }
  // The u64 count: its high word stays 0 (at most 2^21 buckets).
  view.setUint32(4, buckets, true);
  return bytes;
}

/**
 * Parse a serialized RoaringBitmapArray (portable or native magic) into a set. `context`
 * (key, offset, uri…) goes into the error when the bytes are malformed.
 */
export function parseRoaringBitmapArray(bytes: Uint8Array, context: DvContext = {}): RowIndexSet {
  const r = new Reader(bytes, context);
  const out = new Float64Builder();
  const magic = r.u32('the magic number');
  if (magic === PORTABLE_MAGIC) readPortable(r, out);
  else if (magic === NATIVE_MAGIC) readNative(r, out);
  else
    throw r.fail(
      `unexpected magic number ${magic} (expected ${PORTABLE_MAGIC}, or ${NATIVE_MAGIC} for the native format)`,
    );
  if (r.pos !== bytes.length)
    throw r.fail(`${bytes.length - r.pos} bytes left over after the bitmap`);
  return trustedRowIndexSet(out.finish());
}

// ---- reading ---------------------------------------------------------------------------

function readPortable(r: Reader, out: Float64Builder): void {
  const low = r.u32('the bucket count');
  const high = r.u32('the bucket count');
  // Each bucket takes at least 12 bytes (key, cookie, count): a larger count cannot be real.
  if (high !== 0 || low > r.remaining() / 12)
    throw r.fail(`bucket count ${high * TWO_32 + low} does not fit in ${r.remaining()} bytes`);
  let previous = -1;
  for (let b = 0; b < low; b++) {
    const key = r.u32(`the key of bucket ${b}`);
    if (key >= 2 ** 31) throw r.fail(`bucket ${b} has key ${key}, whose top bit is set`);
    if (key <= previous) throw r.fail(`bucket keys are not ascending: ${key} after ${previous}`);
    readBitmap32(r, key, out);
    previous = key;
  }
}

function readNative(r: Reader, out: Float64Builder): void {
  const count = r.u32('the bitmap count');
  if (count >= 2 ** 31 || count > r.remaining() / 12)
    throw r.fail(`bitmap count ${count} does not fit in ${r.remaining()} bytes`);
  for (let key = 0; key < count; key++) {
    const length = r.u32(`the length of bitmap ${key}`);
    const start = r.pos;
    readBitmap32(r, key, out);
    if (r.pos - start !== length)
      throw r.fail(`bitmap ${key} takes ${r.pos - start} bytes, but its length says ${length}`);
  }
}

/** One standard 32-bit RoaringBitmap holding the low 32 bits of bucket `bucket`. */
function readBitmap32(r: Reader, bucket: number, out: Float64Builder): void {
  const start = r.pos;
  const cookie = r.u32(`the cookie of bucket ${bucket}`);
  let count: number;
  let runFlags: Uint8Array | null = null;
  if ((cookie & 0xffff) === COOKIE_RUN) {
    count = (cookie >>> 16) + 1;
    runFlags = r.take(Math.ceil(count / 8), `the run-container flags of bucket ${bucket}`);
  } else if (cookie === COOKIE_NO_RUN) {
    count = r.u32(`the container count of bucket ${bucket}`);
    if (count > 65536)
      throw r.fail(`bucket ${bucket} claims ${count} containers; at most 65536 exist`);
  } else {
    throw r.fail(
      `bucket ${bucket} has cookie ${cookie}, neither ${COOKIE_NO_RUN} nor ${COOKIE_RUN} (run containers)`,
    );
  }
  if (count > 0 && bucket >= MAX_SAFE_BUCKET)
    throw r.fail(
      `bucket ${bucket} holds row indexes above 2^53 - 1, which tidemark cannot represent`,
    );
  const headers = r.skip(4 * count, `the container headers of bucket ${bucket}`);
  const hasOffsets = runFlags === null || count >= NO_OFFSET_THRESHOLD;
  const offsets = hasOffsets ? r.skip(4 * count, `the container offsets of bucket ${bucket}`) : -1;
  let previousKey = -1;
  for (let c = 0; c < count; c++) {
    const key = r.view.getUint16(headers + 4 * c, true);
    const cardinality = r.view.getUint16(headers + 4 * c + 2, true) + 1;
    const where = `container ${c} (key ${key}) of bucket ${bucket}`;
    if (key <= previousKey)
      throw r.fail(
        `container keys are not ascending in bucket ${bucket}: ${key} after ${previousKey}`,
      );
    previousKey = key;
    if (offsets >= 0) {
      const offset = r.view.getUint32(offsets + 4 * c, true);
      if (offset !== r.pos - start)
        throw r.fail(`${where} has offset ${offset}, but its data starts at ${r.pos - start}`);
    }
    const base = bucket * TWO_32 + key * 65536;
    const isRun = runFlags !== null && (runFlags[c >>> 3]! & (1 << (c & 7))) !== 0;
    if (isRun) readRuns(r, base, cardinality, where, out);
    else if (cardinality <= ARRAY_MAX) readArray(r, base, cardinality, where, out);
    else readBitset(r, base, cardinality, where, out);
  }
}

function readArray(
  r: Reader,
  base: number,
  cardinality: number,
  where: string,
  out: Float64Builder,
): void {
  const pos = r.skip(2 * cardinality, `the values of ${where}`);
  let previous = -1;
  for (let i = 0; i < cardinality; i++) {
    const low = r.view.getUint16(pos + 2 * i, true);
    if (low <= previous)
      throw r.fail(`${where}: array values are not ascending (${low} after ${previous})`);
    out.push(base + low);
    previous = low;
  }
}

function readBitset(
  r: Reader,
  base: number,
  cardinality: number,
  where: string,
  out: Float64Builder,
): void {
  const pos = r.skip(BITSET_BYTES, `the bitset of ${where}`);
  const before = out.length;
  // 64-bit little-endian words read as pairs of 32-bit words: bit j is word j >> 5, bit j & 31.
  for (let w = 0; w < BITSET_BYTES / 4; w++) {
    let word = r.view.getInt32(pos + 4 * w, true);
    while (word !== 0) {
      const lowest = word & -word;
      out.push(base + w * 32 + (31 - Math.clz32(lowest)));
      word ^= lowest;
    }
  }
  const found = out.length - before;
  if (found !== cardinality)
    throw r.fail(`${where}: the bitset holds ${found} values, but the header says ${cardinality}`);
}

function readRuns(
  r: Reader,
  base: number,
  cardinality: number,
  where: string,
  out: Float64Builder,
): void {
  const runs = r.view.getUint16(r.skip(2, `the run count of ${where}`), true);
  const pos = r.skip(4 * runs, `the runs of ${where}`);
  let previousEnd = -1;
  let total = 0;
  for (let i = 0; i < runs; i++) {
    const first = r.view.getUint16(pos + 4 * i, true);
    const length = r.view.getUint16(pos + 4 * i + 2, true) + 1;
    const last = first + length - 1;
    if (first <= previousEnd)
      throw r.fail(
        `${where}: run ${i} starts at ${first}, not after the previous run's end ${previousEnd}`,
      );
    if (last > 0xffff) throw r.fail(`${where}: run ${i} (${first} + ${length}) runs past 65535`);
    out.pushRange(base + first, length);
    previousEnd = last;
    total += length;
  }
  if (total !== cardinality)
    throw r.fail(`${where}: the runs hold ${total} values, but the header says ${cardinality}`);
}

/** Bounds-checked little-endian reads over the bitmap bytes. */
class Reader {
  readonly view: DataView;
  pos = 0;
  constructor(
    private readonly bytes: Uint8Array,
    private readonly context: DvContext,
  ) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  remaining(): number {
    return this.bytes.length - this.pos;
  }
  /** Advance `n` bytes (failing, naming `what`, if they are not there); returns the old position. */
  skip(n: number, what: string): number {
    if (n > this.remaining())
      throw this.fail(`the bitmap ends after ${this.bytes.length} bytes, inside ${what}`);
    const at = this.pos;
    this.pos += n;
    return at;
  }
  u32(what: string): number {
    return this.view.getUint32(this.skip(4, what), true);
  }
  take(n: number, what: string): Uint8Array {
    const at = this.skip(n, what);
    return this.bytes.subarray(at, at + n);
  }
  fail(problem: string) {
    return corruptDv(`malformed bitmap: ${problem}`, this.context);
  }
}

/** An append-only Float64Array that doubles its capacity. */
class Float64Builder {
  private data = new Float64Array(64);
  length = 0;
  push(value: number): void {
    if (this.length === this.data.length) this.grow(1);
    this.data[this.length++] = value;
  }
  pushRange(first: number, count: number): void {
    if (this.length + count > this.data.length) this.grow(count);
    for (let i = 0; i < count; i++) this.data[this.length++] = first + i;
  }
  finish(): Float64Array {
    return this.data.slice(0, this.length);
  }
  private grow(atLeast: number): void {
    const next = new Float64Array(Math.max(this.data.length * 2, this.length + atLeast));
    next.set(this.data.subarray(0, this.length));
    this.data = next;
  }
}

// ---- writing ---------------------------------------------------------------------------

/** Index just past the values in the same bucket (same high 32 bits) as values[from]. */
function bucketEnd(values: Float64Array, from: number): number {
  const limit = (Math.floor(values[from]! / TWO_32) + 1) * TWO_32;
  let i = from + 1;
  while (i < values.length && values[i]! < limit) i++;
  return i;
}

/** Index just past the values in the same 65536-block (container) as values[from]. */
function containerEnd(values: Float64Array, from: number, to: number): number {
  const limit = (Math.floor(values[from]! / 65536) + 1) * 65536;
  let i = from + 1;
  while (i < to && values[i]! < limit) i++;
  return i;
}

function containerBytes(cardinality: number): number {
  return cardinality <= ARRAY_MAX ? 2 * cardinality : BITSET_BYTES;
}

/** Exact size of the portable serialization, so the output is allocated once. */
function portableSize(values: Float64Array): number {
  let size = 12;
  for (let i = 0; i < values.length;) {
    const end = bucketEnd(values, i);
    size += 4 + 8; // key, cookie and container count
    for (let c = i; c < end;) {
      const next = containerEnd(values, c, end);
      size += 8 + containerBytes(next - c); // header, offset, data
      c = next;
    }
    i = end;
  }
  return size;
}

/** Write one 32-bit bitmap (cookie 12346) for values[from, to) at `pos`; returns the position after it. */
function writeBitmap32(
  bytes: Uint8Array,
  view: DataView,
  pos: number,
  values: Float64Array,
  from: number,
  to: number,
): number {
  let count = 0;
  for (let c = from; c < to; c = containerEnd(values, c, to)) count++;
  const start = pos;
  view.setUint32(pos, COOKIE_NO_RUN, true);
  view.setUint32(pos + 4, count, true);
  const headers = pos + 8;
  const offsets = headers + 4 * count;
  let data = offsets + 4 * count;
  let c = 0;
  for (let i = from; i < to; c++) {
    const end = containerEnd(values, i, to);
    const cardinality = end - i;
    const blockBase = Math.floor(values[i]! / 65536) * 65536;
    view.setUint16(headers + 4 * c, (blockBase / 65536) % 65536, true);
    view.setUint16(headers + 4 * c + 2, cardinality - 1, true);
    view.setUint32(offsets + 4 * c, data - start, true);
    if (cardinality <= ARRAY_MAX) {
      for (let k = i; k < end; k++)
        view.setUint16(data + 2 * (k - i), values[k]! - blockBase, true);
    } else {
      // The output is freshly zeroed, so only set bits are written.
      for (let k = i; k < end; k++) {
        const low = values[k]! - blockBase;
        bytes[data + (low >>> 3)]! |= 1 << (low & 7);
      }
    }
    data += containerBytes(cardinality);
    i = end;
  }
  return data;
}
