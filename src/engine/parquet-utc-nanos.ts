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
 *
 * INT96 timestamps (Impala's, Hive's and older Spark's legacy encoding: nanoseconds of the day,
 * then a Julian day) are read by DuckDB in microseconds too (duckdb/duckdb#25857), and no
 * read_parquet option reads them otherwise (its `schema` parameter casts after the reader, and
 * INT96 has no statistics). So the check reads a copy whose footer says FIXED_LEN_BYTE_ARRAY(12)
 * for them, which DuckDB reads as the raw 12 bytes (the same PLAIN and dictionary encodings),
 * and decodes the nanoseconds of the day in SQL. That footer grows by two bytes per column
 * (the type_length field), so the copy gets a rewritten footer and length; the data before the
 * footer, and every offset into it, stay as they were.
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

/** Refuse a batch whose Parquet files hold a UTC-adjusted nanosecond or an INT96 value below a microsecond. */
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
  // describeFile marked the INT96 columns (markInt96): no other file pays for this.
  for (const [file, columns] of described) {
    const int96 = columns.filter((c) => c.int96 === true).map((c) => c.name);
    if (file.format === 'parquet' && int96.length > 0) await checkInt96File(session, file, int96);
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

/** `x`'s last `n` bytes in the other order: DuckDB reads a BLOB as a BIT string big-endian. */
function byteSwap(x: string, n: number): string {
  return Array.from(
    { length: n },
    (_, k) => `(((${x} >> ${8 * k}) & 255) << ${8 * (n - 1 - k)})`,
  ).join(' | ');
}

/**
 * The rows of `copy` (written by copyWithInt96AsBytes) with its INT96 `column` in parts:
 * `file_row_number`, `u` (the nanoseconds of the day: the first 8 bytes, little-endian, as a
 * UBIGINT; a signed value below 0 reads 2^64 above it), `day` (the Julian day: the last 4
 * bytes, little-endian), and `keep` columns as they are. Integer operations only: hex text
 * took about 3x the CPU time.
 */
export function int96PartsSql(copy: string, column: string, keep: readonly string[] = []): string {
  const c = ident(column);
  const kept = keep.map((k) => `${ident(k)}, `).join('');
  const bytes =
    `SELECT file_row_number, ${kept}${c}[1:8]::BIT::UBIGINT AS lo, ${c}[9:12]::BIT::UINTEGER::UBIGINT AS hi ` +
    `FROM read_parquet(${str(copy)}, file_row_number = true, hive_partitioning = false)`;
  return `SELECT file_row_number, ${kept}${byteSwap('lo', 8)} AS u, ${byteSwap('hi', 4)} AS day FROM (${bytes})`;
}

/** Nanoseconds since 1970 (a HUGEINT) of the parts `u` and `day` of int96PartsSql. */
export function int96EpochNsSql(): string {
  const nanos = `CASE WHEN u >= ${2n ** 63n} THEN u::HUGEINT - ${2n ** 64n} ELSE u::HUGEINT END`;
  return `((day::HUGEINT - ${UNIX_EPOCH_JULIAN_DAY}) * ${NANOS_PER_DAY} + ${nanos})`;
}

/** The Julian day of 1970-01-01. */
const UNIX_EPOCH_JULIAN_DAY = 2440588;
const NANOS_PER_DAY = 86_400n * 10n ** 9n;
/** A negative i64 read as a UBIGINT is 2^64 above it, so its remainder by 1000 is 2^64's above. */
const WRAPPED_REMAINDER = 2n ** 64n % 1000n;

/** The first INT96 value below a microsecond of `columns` in `file`, refused. */
async function checkInt96File(
  session: DuckSession,
  file: LoadFile,
  columns: string[],
): Promise<void> {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'tidemark-int96-'));
  const copy = path.join(dir, 'copy.parquet');
  try {
    await copyWithInt96AsBytes(file.localPath, copy);
    for (const column of columns) {
      const cut = `u % 1000 <> CASE WHEN u >= ${2n ** 63n} THEN ${WRAPPED_REMAINDER} ELSE 0 END`;
      // The value as the file holds it, with every digit (a day out of range: its raw parts).
      const value =
        `COALESCE(CAST(make_timestamp_ns(TRY_CAST(${int96EpochNsSql()} AS BIGINT)) AS VARCHAR), ` +
        `'Julian day ' || day || ', nanosecond of the day ' || u)`;
      const hit = await session.one(
        `SELECT file_row_number + 1 AS row, ${value} AS value FROM (SELECT * FROM (${int96PartsSql(copy, column)}) WHERE ${cut} LIMIT 1)`,
      );
      if (hit)
        throw cutNanosecondsError(
          { column, file: file.key, row: hit['row'], value: hit['value'] },
          'int96',
        );
    }
  } finally {
    await fsp.rm(dir, { recursive: true, force: true });
  }
}

/**
 * Copy `source` to `dest` with every INT96 column of its schema (and of its column chunks)
 * typed FIXED_LEN_BYTE_ARRAY(12): DuckDB then reads the raw bytes. Only the footer changes.
 */
export async function copyWithInt96AsBytes(source: string, dest: string): Promise<void> {
  await fsp.copyFile(source, dest);
  const handle = await fsp.open(dest, 'r+');
  try {
    const { start, footer } = await readFooter(handle, source);
    const edited = int96AsFixed(footer);
    if (edited === footer) return;
    const tail = Buffer.alloc(8);
    tail.writeUInt32LE(edited.length, 0);
    tail.write('PAR1', 4, 'latin1');
    await handle.write(edited, 0, edited.length, start);
    await handle.write(tail, 0, 8, start + edited.length);
    await handle.truncate(start + edited.length + 8);
  } finally {
    await handle.close();
  }
}

/** The Thrift footer of the Parquet file open in `handle`, and where it starts. */
async function readFooter(
  handle: fsp.FileHandle,
  source: string,
): Promise<{ start: number; footer: Buffer }> {
  const { size } = await handle.stat();
  const tail = Buffer.alloc(8);
  if (size < 12) throw new Error(`not a Parquet file: ${source}`);
  await handle.read(tail, 0, 8, size - 8);
  const footerLength = tail.readUInt32LE(0);
  const start = size - 8 - footerLength;
  if (tail.subarray(4).toString('latin1') !== 'PAR1' || start < 4)
    throw new Error(`not a Parquet file: ${source}`);
  const footer = Buffer.alloc(footerLength);
  await handle.read(footer, 0, footerLength, start);
  return { start, footer };
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
    const { start, footer } = await readFooter(handle, source);
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
const I32 = 5;
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

// Parquet physical types (SchemaElement.type, ColumnMetaData.type).
const INT96 = 3;
const FIXED_LEN_BYTE_ARRAY = 7;
/** The bytes of an INT96 value. */
const INT96_LENGTH = 12;

/** A byte edit of a footer: `remove` bytes at `at` replaced by `insert`. */
interface Edit {
  at: number;
  remove: number;
  insert: number[];
}

/**
 * The FileMetaData `footer` with every INT96 typed FIXED_LEN_BYTE_ARRAY of length 12: the
 * SchemaElements (field 2: schema; element field 1: type, field 2: type_length) and the
 * ColumnMetaData of every column chunk (field 4: row_groups; RowGroup field 1: columns;
 * ColumnChunk field 3: meta_data; its field 1: type). `footer` itself when it has none.
 */
function int96AsFixed(footer: Buffer): Buffer {
  const r = new Reader(footer, 0);
  const edits: Edit[] = [];
  /** The I32 physical type at the reader: INT96 is recorded as an edit to FIXED_LEN_BYTE_ARRAY. */
  const physical = (): boolean => {
    const at = r.at;
    const int96 = r.i32() === INT96;
    if (int96) edits.push({ at, remove: r.at - at, insert: [zigzagByte(FIXED_LEN_BYTE_ARRAY)] });
    return int96;
  };
  r.struct((id, type) => {
    if (id === 2 && type === LIST) {
      r.list(STRUCT, () => schemaElement(r, physical, edits));
      return true;
    }
    if (id !== 4 || type !== LIST) return false;
    r.list(STRUCT, () =>
      r.struct((gid, gtype) => {
        if (gid !== 1 || gtype !== LIST) return false;
        r.list(STRUCT, () =>
          r.struct((cid, ctype) => {
            if (cid !== 3 || ctype !== STRUCT) return false;
            r.struct((mid, mtype) => {
              if (mid !== 1 || mtype !== I32) return false;
              physical();
              return true;
            });
            return true;
          }),
        );
        return true;
      }),
    );
    return true;
  });
  if (edits.length === 0) return footer;
  const parts: Buffer[] = [];
  let from = 0;
  for (const e of edits.sort((a, b) => a.at - b.at)) {
    parts.push(footer.subarray(from, e.at), Buffer.from(e.insert));
    from = e.at + e.remove;
  }
  parts.push(footer.subarray(from));
  return Buffer.concat(parts);
}

/** One SchemaElement: an INT96 one gets type FIXED_LEN_BYTE_ARRAY and type_length 12. */
function schemaElement(r: Reader, physical: () => boolean, edits: Edit[]): void {
  let typeEnd = -1;
  let length: { at: number; end: number; value: number } | null = null;
  r.struct((id, type) => {
    if (id === 1 && type === I32) {
      if (physical()) typeEnd = r.at;
      return true;
    }
    if (id === 2 && type === I32) {
      const at = r.at;
      const value = r.i32();
      length = { at, end: r.at, value };
      return true;
    }
    return false;
  });
  if (typeEnd < 0) return;
  const twelve = zigzagByte(INT96_LENGTH);
  if (length !== null) {
    const { at, end, value } = length;
    if (value !== INT96_LENGTH) edits.push({ at, remove: end - at, insert: [twelve] });
    return;
  }
  // type_length goes right after the type (field 2 after field 1: header delta 1, I32). The
  // next field's header, if short, counted its id from 1; it now counts from 2.
  const next = r.byteAt(typeEnd);
  const short = next !== 0 && next >> 4 !== 0;
  edits.push({
    at: typeEnd,
    remove: short ? 1 : 0,
    insert: [(1 << 4) | I32, twelve, ...(short ? [next - (1 << 4)] : [])],
  });
}

/** The one-byte zigzag varint of a small non-negative i32 (below 64). */
function zigzagByte(n: number): number {
  return n * 2;
}

/** A reader of Thrift compact-protocol bytes, enough to walk and skip any value. */
class Reader {
  constructor(
    private readonly bytes: Uint8Array,
    private pos: number,
  ) {}

  /** Where the reader is. */
  get at(): number {
    return this.pos;
  }

  /** The byte at `offset`, without moving. */
  byteAt(offset: number): number {
    if (offset >= this.bytes.length) throw new Error('Parquet footer ends early');
    return this.bytes[offset]!;
  }

  /** An i32 (or enum) value: a zigzag varint. */
  i32(): number {
    return zigzag(this.varint());
  }

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
