/**
 * Test helpers for deletion vectors: a hand-written RoaringFormatSpec encoder (independent
 * of the codec under test, and able to write run containers and empty buckets as Spark
 * does), and a reader of the DV descriptors in a real table's JSON commits.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AddFile, DeletionVectorDescriptor, RemoveFile } from '../../../src/delta/actions.js';
import { fileActionKey, parseCommit } from '../../../src/delta/actions.js';

/** One container of a hand-built 32-bit bitmap. Runs are [first, last] inclusive. */
export type TestContainer =
  | { key: number; array: number[] }
  | { key: number; bitset: number[] }
  | { key: number; runs: Array<[number, number]> };

/** Little-endian byte writer. */
class Bytes {
  private readonly out: number[] = [];
  get length(): number {
    return this.out.length;
  }
  u8(n: number): this {
    this.out.push(n & 0xff);
    return this;
  }
  u16(n: number): this {
    return this.u8(n).u8(n >>> 8);
  }
  u32(n: number): this {
    return this.u16(n & 0xffff).u16(n >>> 16);
  }
  u64(n: number): this {
    return this.u32(n % 2 ** 32).u32(Math.floor(n / 2 ** 32));
  }
  raw(bytes: Uint8Array | number[]): this {
    for (const b of bytes) this.out.push(b);
    return this;
  }
  done(): Uint8Array {
    return Uint8Array.from(this.out);
  }
}

function cardinalityOf(c: TestContainer): number {
  if ('array' in c) return c.array.length;
  if ('bitset' in c) return c.bitset.length;
  return c.runs.reduce((n, [first, last]) => n + last - first + 1, 0);
}

function containerData(c: TestContainer): Uint8Array {
  const b = new Bytes();
  if ('array' in c) c.array.forEach((v) => b.u16(v));
  else if ('runs' in c) {
    b.u16(c.runs.length);
    for (const [first, last] of c.runs) b.u16(first).u16(last - first);
  } else {
    const bits = new Uint8Array(8192);
    for (const v of c.bitset) bits[v >>> 3]! |= 1 << (v & 7);
    b.raw(bits);
  }
  return b.done();
}

/**
 * A standard 32-bit RoaringBitmap. With `runCookie` (forced when any container is a run
 * container) it uses cookie 12347 and its run-flag bitset, and offsets only from 4 containers on.
 */
export function bitmap32(
  containers: TestContainer[],
  opts: { runCookie?: boolean } = {},
): Uint8Array {
  const runCookie = opts.runCookie ?? containers.some((c) => 'runs' in c);
  const n = containers.length;
  const head = new Bytes();
  if (runCookie) {
    head.u32(12347 | ((n - 1) << 16));
    const flags = new Uint8Array(Math.ceil(n / 8));
    containers.forEach((c, i) => {
      if ('runs' in c) flags[i >>> 3]! |= 1 << (i & 7);
    });
    head.raw(flags);
  } else {
    head.u32(12346).u32(n);
  }
  for (const c of containers) head.u16(c.key).u16(cardinalityOf(c) - 1);
  const data = containers.map(containerData);
  const withOffsets = !runCookie || n >= 4;
  if (withOffsets) {
    let offset = head.length + 4 * n;
    for (const d of data) {
      head.u32(offset);
      offset += d.length;
    }
  }
  for (const d of data) head.raw(d);
  return head.done();
}

/** A portable RoaringBitmapArray (magic 1681511377) from [bucket key, 32-bit bitmap] pairs. */
export function portableArray(buckets: Array<[number, Uint8Array]>): Uint8Array {
  const b = new Bytes().u32(1681511377).u64(buckets.length);
  for (const [key, bitmap] of buckets) b.u32(key).raw(bitmap);
  return b.done();
}

/** A native RoaringBitmapArray (magic 1681511376): bucket i is the i-th bitmap. */
export function nativeArray(bitmaps: Uint8Array[]): Uint8Array {
  const b = new Bytes().u32(1681511376).u32(bitmaps.length);
  for (const bitmap of bitmaps) b.u32(bitmap.length).raw(bitmap);
  return b.done();
}

/** A file action that carries a DV, with the version of the commit it is in. */
export interface LoggedDv {
  version: number;
  action: 'add' | 'remove';
  path: string;
  dv: DeletionVectorDescriptor;
}

function commits(
  tableDir: string,
): Array<{ version: number; actions: ReturnType<typeof parseCommit> }> {
  const log = join(tableDir, '_delta_log');
  return readdirSync(log)
    .filter((name) => /^\d{20}\.json$/.test(name))
    .sort()
    .map((name) => {
      const version = Number(name.slice(0, 20));
      return {
        version,
        actions: parseCommit(readFileSync(join(log, name), 'utf8'), version, tableDir),
      };
    });
}

/** Every add and remove with a DV in the table's JSON commits, in log order. */
export function loggedDvs(tableDir: string): LoggedDv[] {
  const out: LoggedDv[] = [];
  for (const { version, actions } of commits(tableDir)) {
    for (const a of actions) {
      const file: AddFile | RemoveFile | undefined =
        'add' in a ? a.add : 'remove' in a ? a.remove : undefined;
      if (file?.deletionVector)
        out.push({
          version,
          action: 'add' in a ? 'add' : 'remove',
          path: file.path,
          dv: file.deletionVector,
        });
    }
  }
  return out;
}

/**
 * The live files that carry a DV after replaying the JSON commits up to `version` (all when
 * omitted), keyed on (path, DV unique id) as the protocol says: path → descriptor.
 */
export function liveDvs(
  tableDir: string,
  version = Infinity,
): Map<string, DeletionVectorDescriptor> {
  const live = new Map<string, AddFile>();
  for (const c of commits(tableDir)) {
    if (c.version > version) break;
    for (const a of c.actions) {
      if ('add' in a) live.set(fileActionKey(a.add.path, a.add.deletionVector), a.add);
      if ('remove' in a) live.delete(fileActionKey(a.remove.path, a.remove.deletionVector));
    }
  }
  const out = new Map<string, DeletionVectorDescriptor>();
  for (const add of live.values()) if (add.deletionVector) out.set(add.path, add.deletionVector);
  return out;
}
