/**
 * CSV/TSV and JSON/NDJSON files read in bulk: the files of one kind are grouped so that one
 * `read_csv([...])` or `read_json([...])` of the group's list reads each file exactly as reading
 * it alone would, into one temp table of the group's rows plus lineage columns. Thousands of
 * small files then cost a few statements instead of several per file (a per-file read is
 * planned, sniffed and bound alone: about 2-4 ms whatever the file's size).
 *
 * - CSV files of one format and compression whose first lines are the same bytes have the same
 *   columns under the job's one dialect: one file of each group is described (its names checked,
 *   ./load-conform.ts), and the group is read with those columns, all as text, without the
 *   sniffer (the later conversions are the exact rules of ./text-cast.ts). A file whose first
 *   line cannot be read here (zstd, no line end in the first 64 KiB, a quoted field running past
 *   it) is a group alone.
 * - JSON files of one format and compression with the same top-level keys (in the same order,
 *   as ./json-numbers.ts's scan saw them) are read by one read_json with `union_by_name`, which
 *   detects each file's types as a read of it alone would, and combines them; the group's
 *   columns are the table's.
 *
 * Lineage: `_source_file` and `_source_modified` come from the file's path (DuckDB's `filename`);
 * `_source_row` is the row's place in its file: the scan's rows numbered in order (DuckDB keeps a
 * file list's rows in file order, as a single file's), less the number of the file's first row.
 * A group read that fails is read again in halves until one file fails alone, which is named.
 */
import { open } from 'node:fs/promises';
import { constants, gunzipSync } from 'node:zlib';
import { BadFileError } from '../errors.js';
import { countCsvFields, refuseSkippedBlankLines } from './csv-records.js';
import type { DuckSession } from './duckdb.js';
import {
  csvDialect,
  csvListArgs,
  LINEAGE_COLUMNS,
  SOURCE_FILE,
  SOURCE_MODIFIED,
  SOURCE_ROW,
  type CsvOptions,
  type LoadFile,
} from './file-select.js';
import {
  csvLineError,
  describeFile,
  throwIfResourceFailure,
  unreadable,
  type FileColumn,
} from './load-conform.js';
import { safeReadPath } from './safe-alias.js';
import { compressionOf } from './source-format.js';
import { ident, identList, jsonRows, str } from './sql.js';

/** Files read together into one temp table. */
export interface StagedGroup {
  kind: 'csv' | 'json';
  /** The temp table: the files' data columns, then the lineage columns, then FILE_INDEX. */
  table: string;
  files: LoadFile[];
  /** Every file's data columns as read (CSV: all text). */
  columns: FileColumn[];
}

/** Column of a staged table: the row's file, as its place in `StagedGroup.files`. */
export const FILE_INDEX = '__tm_file';

const PATH_COLUMN = '__tm_path';
const ROW_COLUMN = '__tm_row';
/** Files per read statement: bounds the SQL text (a path and a lineage row per file). */
const FILES_PER_READ = 2000;
/** Bytes read to find a CSV file's first line. */
const FIRST_LINE_BYTES = 64 * 1024;
const HEADER_READS = 32;

let tableCounter = 0;

/** A JSON file's keys: its top-level ones, and the paths of its nested ones (segments joined by \u0001). */
export interface JsonKeys {
  top: readonly string[];
  nested: readonly string[];
}

/** Stage every CSV/TSV and JSON/NDJSON file of `files`; `jsonKeys`: each JSON file's keys. */
export async function stageTextFiles(
  session: DuckSession,
  files: readonly LoadFile[],
  opts: { csv?: CsvOptions; jsonKeys: ReadonlyMap<LoadFile, JsonKeys> },
): Promise<StagedGroup[]> {
  const groups: StagedGroup[] = [];
  try {
    for (const [kind, members] of await groupFiles(files, opts)) {
      const table = `__tm_text_${++tableCounter}`;
      const columns = kind === 'csv' ? await describeFile(session, members[0]!, opts.csv) : null;
      if (kind === 'csv' && columns?.length === 1 && opts.csv?.nullstr !== undefined) {
        const dialect = csvDialect(members[0]!.format as 'csv' | 'tsv', opts.csv);
        for (const f of members)
          await refuseSkippedBlankLines(session, f, dialect, columns[0]!.name);
      }
      const group: StagedGroup = { kind, table, files: members, columns: columns ?? [] };
      groups.push(group);
      await readGroup(session, group, opts.csv);
      if (kind === 'json') group.columns = await dataColumns(session, group);
    }
    return groups;
  } catch (err) {
    await dropStaged(session, groups);
    throw err;
  }
}

/** Drop the staged tables. */
export async function dropStaged(
  session: DuckSession,
  groups: readonly StagedGroup[],
): Promise<void> {
  for (const g of groups) await session.run(`DROP TABLE IF EXISTS ${ident(g.table)}`);
}

/** Groups in the order of their first file. */
async function groupFiles(
  files: readonly LoadFile[],
  opts: { csv?: CsvOptions; jsonKeys: ReadonlyMap<LoadFile, JsonKeys> },
): Promise<[StagedGroup['kind'], LoadFile[]][]> {
  const csvFiles = files.filter((f) => f.format === 'csv' || f.format === 'tsv');
  const signatures = new Map<LoadFile, string | null>();
  await inBatches(csvFiles, HEADER_READS, async (f) =>
    signatures.set(f, await csvSignature(f, opts.csv)),
  );
  const groups = new Map<string, [StagedGroup['kind'], LoadFile[]]>();
  let alone = 0;
  for (const f of files) {
    let signature: string;
    if (f.format === 'csv' || f.format === 'tsv') {
      const s = signatures.get(f);
      signature =
        s === null || s === undefined
          ? `alone:${alone++}`
          : `${f.format}:${compressionOf(f.localPath)}:${s}`;
    } else if (f.format === 'json' || f.format === 'ndjson') {
      signature = `${f.format}:${compressionOf(f.localPath)}:${JSON.stringify(opts.jsonKeys.get(f)?.top ?? [])}`;
    } else continue;
    const group = groups.get(signature);
    if (group) group[1].push(f);
    else
      groups.set(signature, [f.format === 'json' || f.format === 'ndjson' ? 'json' : 'csv', [f]]);
  }
  return [...groups.values()].flatMap(([kind, members]): [StagedGroup['kind'], LoadFile[]][] =>
    kind === 'json'
      ? splitByKeyCase(members, opts.jsonKeys).map((part) => [kind, part])
      : [[kind, members]],
  );
}

/**
 * A JSON group split where its files spell one nested key two ways (`s.a` in one file, `s.A` in
 * the next): one read of both stops at the duplicate struct field, where read apart the batch's
 * schema matches the spellings ignoring case, as it does top-level names. (Two spellings in one
 * file fail the read, told as nestedCaseClash, or are a MAP's keys.)
 */
function splitByKeyCase(
  files: readonly LoadFile[],
  keys: ReadonlyMap<LoadFile, JsonKeys>,
): LoadFile[][] {
  const parts: { files: LoadFile[]; spelling: Map<string, string> }[] = [];
  for (const f of files) {
    // A file's own keys that differ only by case are a MAP's to DuckDB (else the read fails): no spelling.
    const spelled = new Map<string, string | null>();
    for (const path of keys.get(f)?.nested ?? []) {
      const lower = path.toLowerCase();
      spelled.set(lower, spelled.has(lower) && spelled.get(lower) !== path ? null : path);
    }
    const own = [...spelled.values()].filter((p): p is string => p !== null);
    let part = parts.find((p) =>
      own.every((path) => (p.spelling.get(path.toLowerCase()) ?? path) === path),
    );
    if (!part) {
      part = { files: [], spelling: new Map() };
      parts.push(part);
    }
    part.files.push(f);
    for (const path of own) part.spelling.set(path.toLowerCase(), path);
  }
  return parts.map((p) => p.files);
}

async function inBatches<T>(
  items: readonly T[],
  size: number,
  fn: (item: T) => Promise<unknown>,
): Promise<void> {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(fn));
}

/**
 * What decides a CSV file's columns under the job's dialect: its first line (with a header row),
 * or its number of fields (without); null when the first line cannot be known here.
 */
async function csvSignature(file: LoadFile, csv?: CsvOptions): Promise<string | null> {
  const compression = compressionOf(file.localPath);
  if (compression === 'zstd') return null;
  const handle = await open(file.localPath, 'r');
  let bytes: Buffer;
  try {
    const buffer = Buffer.alloc(FIRST_LINE_BYTES);
    const { bytesRead } = await handle.read(buffer, 0, FIRST_LINE_BYTES, 0);
    bytes = buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
  if (compression === 'gzip') {
    try {
      // Only the start of the stream: decompress what is there without asking for its end.
      bytes = gunzipSync(bytes, { finishFlush: constants.Z_SYNC_FLUSH });
    } catch {
      return null;
    }
  }
  const end = bytes.indexOf(0x0a);
  if (end < 0) return null;
  const line = bytes.subarray(0, end).toString('utf8');
  const dialect = csvDialect(file.format as 'csv' | 'tsv', csv);
  const fields = countCsvFields(line, dialect);
  if (fields === null) return null;
  return dialect.header ? `header:${line}` : `fields:${fields}`;
}

/** The group's data columns as the staged table holds them. */
async function dataColumns(session: DuckSession, group: StagedGroup): Promise<FileColumn[]> {
  const rows = await session.all(`DESCRIBE ${ident(group.table)}`);
  const skip = new Set<string>([...LINEAGE_COLUMNS, FILE_INDEX]);
  return rows
    .map((r) => ({ name: String(r['column_name']), type: String(r['column_type']) }))
    .filter((c) => !skip.has(c.name));
}

/** The reader of `files` (paths as given) for the group. */
function readerSql(
  group: StagedGroup,
  paths: readonly string[],
  csv: CsvOptions | undefined,
): string {
  const list = `[${paths.map(str).join(', ')}]`;
  const first = group.files[0]!;
  if (group.kind === 'csv') {
    const columns = `{${group.columns.map((c) => `${str(c.name)}: 'VARCHAR'`).join(', ')}}`;
    return `read_csv(${list}, ${csvListArgs(first.format as 'csv' | 'tsv', csv, first.localPath)}, auto_detect = false, columns = ${columns}, filename = ${str(PATH_COLUMN)})`;
  }
  const compression = compressionOf(first.localPath);
  const format = first.format === 'ndjson' ? "'newline_delimited'" : "'auto'";
  return `read_json(${list}, format = ${format}, union_by_name = true, hive_partitioning = false, filename = ${str(PATH_COLUMN)}${compression === 'none' ? '' : `, compression = ${str(compression)}`})`;
}

/** SELECT of files [from, to) of the group with lineage and FILE_INDEX. */
function groupSelect(
  group: StagedGroup,
  from: number,
  to: number,
  csv: CsvOptions | undefined,
): string {
  const files = group.files.slice(from, to);
  const paths = files.map((f) => safeReadPath(f.localPath));
  // The file map as one JSON literal (./sql.ts jsonRows): DuckDB parses 2,000 of these rows in
  // about 10 ms of CPU, where a VALUES list of them took about 120 ms.
  const map = jsonRows(
    files.map((f, i) => ({
      p: paths[i]!,
      k: f.key,
      t: f.lastModified.toISOString(),
      i: from + i,
    })),
    { p: 'VARCHAR', k: 'VARCHAR', t: 'VARCHAR', i: 'INTEGER' },
  );
  const numbered = `SELECT *, row_number() OVER () AS ${ident(ROW_COLUMN)} FROM ${readerSql(group, paths, csv)}`;
  return (
    `SELECT r.* EXCLUDE (${identList([PATH_COLUMN, ROW_COLUMN])}), m.k AS ${ident(SOURCE_FILE)}, m.t::TIMESTAMPTZ AS ${ident(SOURCE_MODIFIED)}, ` +
    `r.${ident(ROW_COLUMN)} - min(r.${ident(ROW_COLUMN)}) OVER (PARTITION BY r.${ident(PATH_COLUMN)}) + 1 AS ${ident(SOURCE_ROW)}, m.i AS ${ident(FILE_INDEX)} ` +
    `FROM (${numbered}) AS r JOIN ${map} AS m ON r.${ident(PATH_COLUMN)} = m.p`
  );
}

async function readGroup(
  session: DuckSession,
  group: StagedGroup,
  csv: CsvOptions | undefined,
): Promise<void> {
  const table = ident(group.table);
  for (let at = 0; at < group.files.length; at += FILES_PER_READ) {
    const to = Math.min(group.files.length, at + FILES_PER_READ);
    try {
      const select = groupSelect(group, at, to, csv);
      await session.run(
        at === 0
          ? `CREATE OR REPLACE TEMP TABLE ${table} AS ${select}`
          : `INSERT INTO ${table} BY NAME ${select}`,
      );
    } catch (err) {
      throw await failingFile(session, group, at, to, csv, err);
    }
  }
}

/** The file of [from, to) that fails to read alone, as a BadFileError naming it. */
async function failingFile(
  session: DuckSession,
  group: StagedGroup,
  from: number,
  to: number,
  csv: CsvOptions | undefined,
  bulkError: unknown,
): Promise<unknown> {
  throwIfResourceFailure(`${to - from} files`, bulkError, to - from);
  const attempt = async (lo: number, hi: number): Promise<unknown> => {
    try {
      await session.run(
        `CREATE OR REPLACE TEMP TABLE __tm_probe AS ${groupSelect(group, lo, hi, csv)}`,
      );
      return null;
    } catch (err) {
      return err;
    } finally {
      await session.run('DROP TABLE IF EXISTS __tm_probe');
    }
  };
  const found = await bisect(from, to, attempt);
  if (found) {
    const file = group.files[found.index]!;
    const bad = unreadable(file, found.error);
    return (
      (group.kind === 'csv' &&
        (await csvLineError(
          session,
          file,
          csvDialect(file.format as 'csv' | 'tsv', csv),
          found.error,
          bad.cause,
        ))) ||
      bad
    );
  }
  const files = group.files.slice(from, to);
  const message = bulkError instanceof Error ? bulkError.message.split('\n')[0] : String(bulkError);
  return new BadFileError(
    `[load] files ${files
      .slice(0, 5)
      .map((f) => f.key)
      .join(
        ', ',
      )}${files.length > 5 ? ` and ${files.length - 5} more` : ''} cannot be read together: ${message}`,
    {
      context: { key: files[0]?.key },
      cause: bulkError,
    },
  );
}

/**
 * The first index of [from, to) that fails alone (halving the range: about log2 attempts), with
 * its error; null when [from, to) reads, or fails only as a whole.
 */
export async function bisect(
  from: number,
  to: number,
  attempt: (lo: number, hi: number) => Promise<unknown>,
): Promise<{ index: number; error: unknown } | null> {
  let lo = from;
  let hi = to;
  let error = await attempt(lo, hi);
  if (error === null) return null;
  while (hi - lo > 1) {
    const mid = lo + Math.floor((hi - lo) / 2);
    const left = await attempt(lo, mid);
    if (left !== null) {
      hi = mid;
      error = left;
      continue;
    }
    const right = await attempt(mid, hi);
    if (right === null) return null;
    lo = mid;
    error = right;
  }
  return { index: lo, error };
}
