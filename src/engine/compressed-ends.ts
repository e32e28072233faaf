/**
 * A compressed source file must be whole. DuckDB's gzip and zstd readers stop quietly where the
 * data stops: a file cut off while it was written or copied (a gzip stream without its end, a
 * zstd frame without its last block) loaded the rows before the cut with exit 0. So every gzip
 * file is inflated to its end once (zlib checks the end marker, the CRC and the length; the JSON
 * number scan already does this for JSON files, through ./file-lines.ts), and every zstd file's
 * frames are walked from header to header (no decompression: each block header gives its size),
 * and a file that ends early or holds bytes past its last frame is refused, naming it.
 */
import { closeSync, createReadStream, fstatSync, openSync, readSync } from 'node:fs';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip, gunzipSync } from 'node:zlib';
import { BadFileError } from '../errors.js';
import { damagedGzip, isZlibError, smallFileBytes } from './file-lines.js';
import type { LoadFile } from './file-select.js';
import { compressionOf } from './source-format.js';

/** Files checked at once: inflating overlaps on the thread pool. */
const CHECKS_AT_ONCE = 8;

/** Refuse the first of `files` whose compressed data is cut off or damaged. */
export async function refuseCutCompressedFiles(files: readonly LoadFile[]): Promise<void> {
  // JSON files' gzip is inflated to its end by the number scan (./json-numbers.ts) already.
  const gzip = files.filter(
    (f) => compressionOf(f.localPath) === 'gzip' && f.format !== 'json' && f.format !== 'ndjson',
  );
  for (const f of files) if (compressionOf(f.localPath) === 'zstd') checkZstdFrames(f);
  for (let i = 0; i < gzip.length; i += CHECKS_AT_ONCE)
    await Promise.all(gzip.slice(i, i + CHECKS_AT_ONCE).map(inflateToEnd));
}

async function inflateToEnd(file: LoadFile): Promise<void> {
  const small = smallFileBytes(file.localPath);
  try {
    if (small) gunzipSync(small);
    else
      await pipeline(
        createReadStream(file.localPath),
        createGunzip(),
        new Writable({ write: (_chunk, _enc, done) => done() }),
      );
  } catch (err) {
    if (isZlibError(err)) throw damagedGzip(file, err);
    throw err;
  }
}

const ZSTD_MAGIC = 0xfd2fb528;
/** Skippable frames: magic 0x184D2A50 to 0x184D2A5F, then a 4-byte size. */
const SKIPPABLE_MASK = 0xfffffff0;
const SKIPPABLE_MAGIC = 0x184d2a50;

/** Walk a zstd file's frames (RFC 8878 §3.1): each must end with its last block, the file with a frame. */
function checkZstdFrames(file: LoadFile): void {
  const fd = openSync(file.localPath, 'r');
  try {
    const size = fstatSync(fd).size;
    const buf = Buffer.alloc(18);
    const read = (at: number, n: number): Buffer | null =>
      at + n <= size && readSync(fd, buf, 0, n, at) === n ? buf : null;
    const cut = (why: string) =>
      new BadFileError(
        `[load] cannot read ${file.key}: its zstd data ${why}; a file cut off while it was written or copied: load it again once it is whole`,
        { context: { key: file.key } },
      );
    const inside = () => cut(`ends at byte ${size}, inside a frame (before its last block's end)`);
    let at = 0;
    while (at < size) {
      const head = read(at, 4);
      if (!head) throw inside();
      const magic = head.readUInt32LE(0);
      if ((magic & SKIPPABLE_MASK) >>> 0 === SKIPPABLE_MAGIC) {
        const len = read(at + 4, 4);
        if (!len) throw inside();
        at += 8 + len.readUInt32LE(0);
        if (at > size) throw inside();
        continue;
      }
      if (magic !== ZSTD_MAGIC) throw cut(`holds bytes that are no zstd frame at byte ${at}`);
      const descriptor = read(at + 4, 1)?.[0];
      if (descriptor === undefined) throw inside();
      const fcsFlag = descriptor >> 6;
      const singleSegment = (descriptor >> 5) & 1;
      const checksum = (descriptor >> 2) & 1;
      const didFlag = descriptor & 3;
      const fcsBytes = [singleSegment ? 1 : 0, 2, 4, 8][fcsFlag]!;
      at += 5 + (singleSegment ? 0 : 1) + [0, 1, 2, 4][didFlag]! + fcsBytes;
      for (let last = false; !last;) {
        const block = read(at, 3);
        if (!block) throw inside();
        const header = block[0]! | (block[1]! << 8) | (block[2]! << 16);
        last = (header & 1) === 1;
        const type = (header >> 1) & 3;
        if (type === 3) throw cut(`has a block of a reserved type at byte ${at}`);
        at += 3 + (type === 1 ? 1 : header >>> 3);
      }
      at += checksum ? 4 : 0;
      if (at > size) throw inside();
    }
  } finally {
    closeSync(fd);
  }
}
