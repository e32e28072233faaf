/**
 * UTC-adjusted Parquet TIMESTAMP(NANOS) columns (what pyarrow writes for pandas'
 * `datetime64[ns, UTC]`): DuckDB reads them as TIMESTAMP WITH TIME ZONE in microseconds, so the
 * last three digits are gone before any cast could check them. A Delta timestamp holds
 * microseconds, so a value with nanoseconds cannot be stored as the file holds it; it must be
 * refused, naming file, row and column.
 *
 * To see the nanoseconds, the check reads a copy of the file whose footer says
 * `isAdjustedToUTC=false` for those columns: DuckDB then reads them as TIMESTAMP_NS (the same
 * instants, as wall clocks in UTC) with every digit. Flipping the flag changes one byte of the
 * Thrift footer (a compact-protocol bool lives in its field header), so the footer keeps its
 * length and every offset in the file stays valid. The load itself reads the original file.
 */
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { DuckSession } from './duckdb.js';
import { cutNanosecondsError } from './cast-error.js';
import type { LoadFile } from './file-select.js';
import type { FileColumn } from './load-conform.js';
import { ZONED } from './parquet-timestamps.js';
import { ident, str } from './sql.js';

const UTC_NANOS = `logical_type LIKE 'TimestampType(isAdjustedToUTC=1,%NANOS=NanoSeconds()%'`;
/** Files per parquet_schema statement: one footer read each, in one statement (a batch may hold thousands). */
const SCHEMA_CHUNK = 512;

/** Refuse a batch whose Parquet files hold a UTC-adjusted nanosecond value below a microsecond. */
export async function refuseCutNanoseconds(
  session: DuckSession,
  described: ReadonlyMap<LoadFile, readonly FileColumn[]>,
): Promise<void> {
  // Only files with a zoned top-level column can hold one; most are microseconds.
  const zoned = new Map<string, { file: LoadFile; columns: Set<string> }>();
  for (const [file, columns] of described) {
    if (file.format !== 'parquet') continue;
    const names = columns.filter((c) => c.type === ZONED).map((c) => c.name);
    if (names.length > 0) zoned.set(file.localPath, { file, columns: new Set(names) });
  }
  const paths = [...zoned.keys()];
  for (let i = 0; i < paths.length; i += SCHEMA_CHUNK) {
    const list = paths
      .slice(i, i + SCHEMA_CHUNK)
      .map(str)
      .join(', ');
    const rows = await session.all(
      `SELECT file_name, name FROM parquet_schema([${list}]) WHERE ${UTC_NANOS}`,
    );
    const nanos = new Map<LoadFile, string[]>();
    for (const r of rows) {
      const entry = zoned.get(String(r['file_name']));
      if (!entry)
        throw new Error(
          `[load] parquet_schema named a file it was not asked for: ${String(r['file_name'])}`,
        );
      const { file, columns } = entry;
      const name = String(r['name']);
      if (columns.has(name)) nanos.set(file, [...(nanos.get(file) ?? []), name]);
    }
    for (const [file, names] of nanos) await checkFile(session, file, names);
  }
}

/** The first value below a microsecond of `columns` (UTC-adjusted NANOS) in `file`, refused. */
async function checkFile(session: DuckSession, file: LoadFile, columns: string[]): Promise<void> {
  // A copy in a folder of its own: the source may be read in place, from the user's folder.
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'tidemark-utc-nanos-'));
  const copy = path.join(dir, 'copy.parquet');
  try {
    await copyWithNanosUtcFlag(file.localPath, copy, false);
    for (const column of columns) {
      const c = ident(column);
      const hit = await session.one(
        `SELECT file_row_number + 1 AS row, CAST(${c} AS VARCHAR) AS value FROM read_parquet(${str(copy)}, file_row_number = true, hive_partitioning = false) ` +
          `WHERE epoch_ns(${c}) % 1000 <> 0 LIMIT 1`,
      );
      if (hit)
        throw cutNanosecondsError({ column, file: file.key, row: hit['row'], value: hit['value'] });
    }
  } finally {
    await fsp.rm(dir, { recursive: true, force: true });
  }
}

/**
 * Copy `source` to `dest` with the isAdjustedToUTC flag of every TIMESTAMP(NANOS) of its schema
 * set to `utc` (the check sets false; tests set true, to write what DuckDB cannot).
 */
export async function copyWithNanosUtcFlag(
  source: string,
  dest: string,
  utc: boolean,
): Promise<void> {
  await fsp.copyFile(source, dest);
  // Only the footer is read and patched: the file may be large.
  const handle = await fsp.open(dest, 'r+');
  try {
    const { size } = await handle.stat();
    const tail = Buffer.alloc(8);
    await handle.read(tail, 0, 8, size - 8);
    const footerLength = tail.readUInt32LE(0);
    const start = size - 8 - footerLength;
    if (tail.subarray(4).toString('latin1') !== 'PAR1' || start < 4)
      throw new Error(`not a Parquet file: ${source}`);
    const footer = Buffer.alloc(footerLength);
    await handle.read(footer, 0, footerLength, start);
    for (const at of nanosFlags(footer, 0)) {
      footer[at] = (footer[at]! & 0xf0) | (utc ? TRUE : FALSE);
      await handle.write(footer, at, 1, start + at);
    }
  } finally {
    await handle.close();
  }
}

// Thrift compact protocol types (a field header's low nibble).
const TRUE = 1;
const FALSE = 2;
const I8 = 3;
const DOUBLE = 7;
const BINARY = 8;
const LIST = 9;
const SET = 10;
const MAP = 11;
const STRUCT = 12;

/**
 * Offsets of the field headers holding `isAdjustedToUTC` of the TIMESTAMP(NANOS) logical types
 * in the FileMetaData at `start` (field 2: the schema; SchemaElement field 10: its LogicalType;
 * union field 8: TimestampType {1: isAdjustedToUTC, 2: unit}; TimeUnit field 3: NANOS).
 */
function nanosFlags(bytes: Uint8Array, start: number): number[] {
  const r = new Reader(bytes, start);
  const found: number[] = [];
  r.struct((id, type) => {
    if (id !== 2 || type !== LIST) return false;
    r.list(STRUCT, () =>
      r.struct((fid, ftype) => {
        if (fid !== 10 || ftype !== STRUCT) return false;
        r.struct((lid, ltype) => {
          if (lid !== 8 || ltype !== STRUCT) return false;
          let flag = -1;
          let nanos = false;
          r.struct((tid, ttype, header) => {
            if (tid === 1 && (ttype === TRUE || ttype === FALSE)) flag = header;
            if (tid !== 2 || ttype !== STRUCT) return false;
            r.struct((uid) => {
              if (uid === 3) nanos = true;
              return false;
            });
            return true;
          });
          if (flag >= 0 && nanos) found.push(flag);
          return true;
        });
        return true;
      }),
    );
    return true;
  });
  return found;
}

/** A reader of Thrift compact-protocol bytes, enough to walk and skip any value. */
class Reader {
  constructor(
    private readonly bytes: Uint8Array,
    private pos: number,
  ) {}

  private byte(): number {
    if (this.pos >= this.bytes.length) throw new Error('Parquet footer ends early');
    return this.bytes[this.pos++]!;
  }

  private varint(): number {
    let shift = 0;
    let out = 0;
    for (;;) {
      const b = this.byte();
      out += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) return out;
      shift += 7;
    }
  }

  /** Walk a struct's fields; `visit` reads the field's value itself and returns true, or leaves it to be skipped. */
  struct(visit: (id: number, type: number, header: number) => boolean): void {
    let last = 0;
    for (;;) {
      const header = this.pos;
      const b = this.byte();
      if (b === 0) return;
      const type = b & 0x0f;
      const delta = b >> 4;
      const id = delta === 0 ? zigzag(this.varint()) : last + delta;
      last = id;
      if (!visit(id, type, header)) this.skip(type);
    }
  }

  /** Walk a list of `elementType` (any other is skipped). */
  list(elementType: number, each: () => void): void {
    const b = this.byte();
    const size = b >> 4 === 15 ? this.varint() : b >> 4;
    const type = b & 0x0f;
    for (let i = 0; i < size; i++) {
      if (type === elementType) each();
      else this.skip(type);
    }
  }

  private skip(type: number): void {
    switch (type) {
      case TRUE:
      case FALSE:
        return; // the value is in the field header (in a list: one byte, see skipElement)
      case I8:
        this.pos += 1;
        return;
      case DOUBLE:
        this.pos += 8;
        return;
      case BINARY: {
        const length = this.varint(); // read first: `pos += varint()` would lose its own bytes
        this.pos += length;
        return;
      }
      case LIST:
      case SET: {
        const b = this.byte();
        const size = b >> 4 === 15 ? this.varint() : b >> 4;
        for (let i = 0; i < size; i++) this.skipElement(b & 0x0f);
        return;
      }
      case MAP: {
        const size = this.varint();
        if (size === 0) return;
        const kv = this.byte();
        for (let i = 0; i < size; i++) {
          this.skipElement(kv >> 4);
          this.skipElement(kv & 0x0f);
        }
        return;
      }
      case STRUCT:
        this.struct(() => false);
        return;
      default:
        this.varint(); // I16, I32, I64: zigzag varints
    }
  }

  /** A list, set or map element: a bool there takes a byte of its own. */
  private skipElement(type: number): void {
    if (type === TRUE || type === FALSE) this.pos += 1;
    else this.skip(type);
  }
}

function zigzag(n: number): number {
  return n % 2 === 0 ? n / 2 : -(n + 1) / 2;
}
