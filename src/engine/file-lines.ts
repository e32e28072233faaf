/**
 * The physical lines of a text file as the load downloaded it (plain, gzip or zstd), for the
 * checks that read a file's text beside DuckDB: the JSON number scan (./json-numbers.ts) and the
 * CSV record walk (./csv-records.ts). Small files are read whole, larger ones as a stream; zstd
 * files through DuckDB's decompression (Node 20 has none).
 */
import { closeSync, createReadStream, fstatSync, openSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { createGunzip, gunzipSync } from 'node:zlib';
import { BadFileError } from '../errors.js';
import type { DuckSession } from './duckdb.js';
import type { LoadFile } from './file-select.js';
import { compressionOf } from './source-format.js';
import { str } from './sql.js';

/**
 * The longest line of a zstd file read here (DuckDB sizes its buffers from it: 1 GiB asked for
 * 16 GiB). Above read_json's default largest object (16 MiB), so that read names a too-long line.
 */
const ZSTD_LINE_BYTES = 64 * 2 ** 20;
/** Files up to this size (as stored) are read whole, larger ones as a stream. */
const WHOLE_FILE_BYTES = 4 * 2 ** 20;

/**
 * Call `visit` with each line of `file` (without its line break; `\n`, `\r\n` or `\r`) and its
 * 1-based number, in order, until it returns false. A last line break ends the last line; it
 * does not start an empty one.
 */
export async function forEachLine(
  session: DuckSession,
  file: LoadFile,
  visit: (text: string, line: number) => boolean | void,
): Promise<void> {
  try {
    await readLines(session, file, visit);
  } catch (err) {
    // A gzip stream cut off or damaged: the file's fault, named (as ./compressed-ends.ts does).
    if (isZlibError(err)) throw damagedGzip(file, err);
    throw err;
  }
}

async function readLines(
  session: DuckSession,
  file: LoadFile,
  visit: (text: string, line: number) => boolean | void,
): Promise<void> {
  if (compressionOf(file.localPath) === 'zstd') {
    // One line per row (a text file's lines hold no raw \x01). A one-column CSV read keeps a
    // blank line as a NULL row, so the rows are the file's lines.
    let rows: Awaited<ReturnType<DuckSession['all']>>;
    try {
      rows = await session.all(
        `SELECT l FROM read_csv(${str(file.localPath)}, columns = {'l': 'VARCHAR'}, delim = chr(1), quote = '', escape = '', header = false, hive_partitioning = false, ` +
          `compression = 'zstd', max_line_size = ${ZSTD_LINE_BYTES})`,
      );
    } catch (cause) {
      const why = cause instanceof Error ? cause.message.split('\n')[0] : String(cause);
      throw new BadFileError(`[load] cannot read the lines of ${file.key}: ${why}`, {
        context: { key: file.key },
        cause,
      });
    }
    for (let i = 0; i < rows.length; i++)
      if (visit(String(rows[i]!['l'] ?? ''), i + 1) === false) return;
    return;
  }
  const bytes = smallFileBytes(file.localPath);
  if (bytes !== null) {
    // A small file in one read: a stream and a line reader per file cost more than its lexing;
    // and by synchronous calls: each trip through the thread pool (open, stat, read, close,
    // gunzip) cost more CPU than the call itself, thousands of times over for small files.
    const text = (compressionOf(file.localPath) === 'gzip' ? gunzipSync(bytes) : bytes).toString(
      'utf8',
    );
    const lines = text.split(/\r\n|\n|\r/);
    if (lines.at(-1) === '') lines.pop();
    for (let i = 0; i < lines.length; i++) if (visit(lines[i]!, i + 1) === false) return;
    return;
  }
  const raw = createReadStream(file.localPath);
  const input = compressionOf(file.localPath) === 'gzip' ? raw.pipe(createGunzip()) : raw;
  let n = 0;
  try {
    for await (const text of createInterface({ input, crlfDelay: Infinity })) {
      if (visit(text, ++n) === false) return;
    }
  } finally {
    raw.destroy();
  }
}

/** The bytes of a file of at most WHOLE_FILE_BYTES (one open for the size and the read), else null. */
export function smallFileBytes(path: string): Buffer | null {
  const fd = openSync(path, 'r');
  try {
    return fstatSync(fd).size <= WHOLE_FILE_BYTES ? readFileSync(fd) : null;
  } finally {
    closeSync(fd);
  }
}

/** The BadFileError of a gzip file zlib could not inflate to its end (`err`: zlib's). */
export function damagedGzip(file: LoadFile, err: unknown): BadFileError {
  const why = err instanceof Error ? err.message : String(err);
  return new BadFileError(
    `[load] cannot read ${file.key}: its gzip data ${/unexpected end/i.test(why) ? 'ends before its end marker' : 'is damaged'} (zlib: ${why}); ` +
      'a file cut off while it was written or copied: load it again once it is whole',
    { context: { key: file.key }, cause: err },
  );
}

/** Whether `err` is zlib's (a damaged or cut-off stream), not the file system's. */
export function isZlibError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('Z_');
}
