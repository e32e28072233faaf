/**
 * Load source files into one DuckDB table with lineage columns. Files are read in bulk: Parquet
 * files of the same columns by one read_parquet (./parquet-list.ts), CSV/TSV and JSON/NDJSON
 * files by one read_csv or read_json per group of like files into a staged table
 * (./bulk-text.ts). When DuckDB rejects a bulk read, the files are tried in parts, then alone,
 * so the error names the bad file (and its line, row and column where there is one).
 *
 * Every file is read in one schema (./load-conform.ts): the target table's, the columns the job
 * declares (`source.columns`), and for CSV columns neither knows, the types inferred once from
 * all the batch's CSV files together (./infer-text-types.ts).
 * A zero-byte CSV or JSON file holds no rows (some producers write empty files); a zero-byte
 * Parquet file is not a Parquet file.
 */
import { statSync } from 'node:fs';
import type { StructField, StructType } from '../delta/schema.js';
import { BadFileError, SchemaError } from '../errors.js';
import { refuseCutCompressedFiles } from './compressed-ends.js';
import { countCsvFields } from './csv-records.js';
import { forEachLine } from './file-lines.js';
import type { DuckSession } from './duckdb.js';
import {
  csvDialect,
  csvFirstLineSql,
  csvStrictReadSql,
  fileSelectSql,
  LINEAGE_COLUMNS,
  SOURCE_FILE,
  SOURCE_MODIFIED,
  SOURCE_ROW,
  type CsvOptions,
  type LoadFile,
} from './file-select.js';
import { parseDuckType } from './duck-type.js';
import { inferTextColumns } from './infer-text-types.js';
import {
  inexactAcrossFiles,
  inexactNumber,
  scanJson,
  type ColumnNumbers,
  type JsonScan,
} from './json-numbers.js';
import { restoreJsonTexts } from './json-texts.js';
import { refuseShiftedWallClocks } from './json-wall-clocks.js';
import { bisect, dropStaged, FILE_INDEX, stageTextFiles, type StagedGroup } from './bulk-text.js';
import { sourceFileEnum } from './parquet-list.js';
import { nestedAdditions, withNewFields } from './nested-fit.js';
import {
  checkColumnNames,
  nestedCaseClash,
  conformFile,
  csvLineError,
  describeFile,
  diagnoseFile,
  throwIfResourceFailure,
  unreadable,
  type ConformedFile,
  type FileColumn,
} from './load-conform.js';
import { parquetListSql } from './parquet-list.js';
import {
  naiveParquetTimestamps,
  refuseInstantsIntoWallClock,
  ZONED,
} from './parquet-timestamps.js';
import { refuseCutNanoseconds } from './parquet-utc-nanos.js';
import { ident, identList } from './sql.js';
import { duckTypeToDelta } from './type-map-write.js';

export {
  fileSelectSql,
  SOURCE_FILE,
  SOURCE_MODIFIED,
  SOURCE_ROW,
  type CsvOptions,
  type LoadFile,
} from './file-select.js';

export interface LoadOptions {
  /** Name of the table to create (replaced if it exists). */
  table: string;
  csv?: CsvOptions;
  /** Reads (a file, or a list of Parquet files) per UNION statement; bounds the SQL text size. */
  chunkSize?: number;
  /**
   * The target table's schema, when it exists: its columns are read in its types, and a value
   * that does not fit is a BadFileError naming file, row and column. Without it CSV columns are
   * inferred from the batch (see the module comment) and Parquet and JSON files bring their own
   * types, which the bulk read combines.
   */
  schema?: StructType;
  /** Columns whose type the job declares (`source.columns`), for columns the table lacks. */
  declared?: readonly StructField[];
  /** The job's key columns: never inferred as a floating type. */
  keyColumns?: readonly string[];
  /**
   * Struct fields the files add to the table's columns (`obj.z`) are read into the column's type
   * widened by them (`schemaEvolution: addColumns`; the MERGE then adds them to the table);
   * otherwise such a file is refused naming the fields.
   */
  addNestedFields?: boolean;
}

/** A column the files bring that the target schema lacks. */
export interface NewColumn {
  name: string;
  /** Keys of the files that have it. */
  files: string[];
}

/** What a load read. */
export interface LoadResult {
  rows: number;
  /** Columns not in `LoadOptions.schema`, with their files (empty without a schema). */
  newColumns: NewColumn[];
  /** Keys of zero-byte files, which hold no rows. */
  emptyFiles: string[];
  /** Columns the batch creates that Parquet files hold as naive timestamps: wall clocks, so `timestamp_ntz` (./parquet-timestamps.ts). */
  naiveTimestamps: string[];
  /** Each read file's own column names, by its key (a staged group's files: the group's). */
  fileColumns: ReadonlyMap<string, readonly string[]>;
}

/** Load `files` into `opts.table`; returns the row count. Nothing to read creates no table and returns 0. */
export async function loadFiles(
  session: DuckSession,
  files: LoadFile[],
  opts: LoadOptions,
): Promise<number> {
  return (await loadSourceFiles(session, files, opts)).rows;
}

/** Load `files` into `opts.table` (see the module comment). Nothing to read creates no table. */
export async function loadSourceFiles(
  session: DuckSession,
  files: readonly LoadFile[],
  opts: LoadOptions,
): Promise<LoadResult> {
  const { readable, emptyFiles } = await skipEmpty(files);
  if (readable.length === 0)
    return { rows: 0, newColumns: [], emptyFiles, naiveTimestamps: [], fileColumns: new Map() };
  await refuseCutCompressedFiles(readable);
  const jsons = await scanJsonFiles(session, readable, opts);
  const staged = await stageAll(session, readable, opts.csv, jsons);
  try {
    const described = new Map<LoadFile, FileColumn[]>();
    for (const g of staged) for (const f of g.files) described.set(f, g.columns);
    const inStage = new Set(staged.flatMap((g) => g.files));
    const alone = readable.filter((f) => !inStage.has(f));
    const schema = await batchSchema(session, readable, opts, described, { staged, jsons });
    await refuseTypesWithoutDelta(session, described, schema, staged, opts.csv);
    refuseInstantsIntoWallClock(described, opts.schema, opts.declared);
    await refuseCutNanoseconds(session, described);
    await refuseShiftedWallClocks(session, jsons.keys(), described, schema);
    const plans = schema ? await conformAll(session, alone, schema, opts.csv, described) : null;
    const stagedPlans = schema
      ? await Promise.all(
          staged.map((g) => conformFile(session, g.files[0]!, schema, opts.csv, g.columns)),
        )
      : null;
    const units = [
      ...readUnits(alone, plans, opts.csv),
      ...staged.map((g, i) => stagedUnit(g, stagedPlans?.[i] ?? null)),
    ];
    const chunkSize = opts.chunkSize ?? 64;
    const readOpts = schema ? { ...opts, schema } : opts;
    if (units.reduce((n, u) => n + u.scans, 0) <= chunkSize) {
      // The common case: one statement creates the table, with no intermediate copy.
      await createFrom(session, opts.table, units, readOpts);
    } else {
      await createInParts(session, units, chunkSize, readOpts);
    }
    // String columns get the JSON files' own texts of their numbers and objects (./json-texts.ts).
    await restoreJsonTexts(
      session,
      opts.table,
      [...jsons].map(([file, scan]) => ({ file, scan, read: described.get(file) ?? [] })),
    );
    const row = await session.one(`SELECT count(*)::BIGINT AS n FROM ${ident(opts.table)}`);
    const columnsOf = [
      ...(plans ?? []),
      ...staged.flatMap((g) => g.files.map((file) => ({ file, columns: g.columns }))),
    ];
    return {
      rows: Number(row?.['n'] ?? 0),
      newColumns: plans && opts.schema ? newColumnsOf(columnsOf, opts.schema) : [],
      emptyFiles,
      naiveTimestamps: naiveParquetTimestamps(described, opts.schema, opts.declared),
      fileColumns: new Map([...described].map(([f, cs]) => [f.key, cs.map((c) => c.name)])),
    };
  } finally {
    await dropStaged(session, staged);
  }
}

/**
 * Every JSON file's text read once (./json-numbers.ts): a number DuckDB would not give back
 * exactly is refused, naming the first such file of the batch; its top-level keys group it for
 * the bulk read.
 */
async function scanJsonFiles(
  session: DuckSession,
  files: readonly LoadFile[],
  opts: LoadOptions,
): Promise<Map<LoadFile, JsonScan>> {
  const jsonFiles = files.filter((f) => f.format === 'json' || f.format === 'ndjson');
  const scans = new Map<LoadFile, JsonScan>();
  // String columns the table has or the job declares keep every number's text: none is refused there.
  const text = new Set(
    [...(opts.schema?.fields ?? []), ...(opts.declared ?? [])]
      .filter((f) => f.type === 'string')
      .map((f) => f.name.toLowerCase()),
  );
  for (let i = 0; i < jsonFiles.length; i += JSON_SCANS) {
    const batch = jsonFiles.slice(i, i + JSON_SCANS);
    const results = await Promise.all(batch.map((f) => scanJson(session, f)));
    batch.forEach((f, j) => scans.set(f, results[j]!));
    for (const f of batch) {
      checkColumnNames(f, scans.get(f)!.keys);
      const bad = inexactNumber(f, scans.get(f)!.numbers, text);
      if (bad) throw bad;
    }
  }
  return scans;
}

/** JSON files scanned at once: reading and gunzip overlap, the lexing itself is one thread. */
const JSON_SCANS = 16;

/** The batch's text files staged in bulk (./bulk-text.ts); a file that cannot be read is named, with its line for CSV. */
async function stageAll(
  session: DuckSession,
  files: readonly LoadFile[],
  csv: CsvOptions | undefined,
  jsons: ReadonlyMap<LoadFile, Pick<JsonScan, 'keys' | 'values'>>,
): Promise<StagedGroup[]> {
  const jsonKeys = new Map(
    [...jsons].map(([f, s]) => [
      f,
      {
        top: s.keys,
        nested: [...s.values.values()]
          .filter((p) => p.segments.length > 1)
          .map((p) => p.segments.join('\u0001')),
      },
    ]),
  );
  try {
    return await stageTextFiles(session, files, { ...(csv ? { csv } : {}), jsonKeys });
  } catch (err) {
    if (!(err instanceof BadFileError)) throw err;
    const key = err.context.key;
    const file = files.find((f) => f.key === key);
    const scan = file && jsons.get(file);
    const duplicate = /Duplicate name "(.*)" in struct/.exec(err.message)?.[1];
    if (scan && duplicate !== undefined)
      throw nestedCaseClash(file, scan.values.values(), duplicate) ?? err;
    if (file && jsons.has(file)) throw await withJsonLine(session, file, err);
    throw file ? await withCsvLine(session, file, csv, err) : err;
  }
}

/**
 * DuckDB's "Malformed JSON … in line N" (NDJSON) or "in record/value N" (JSON) counts one past
 * the record at fault (DuckDB 1.5: a bad first record is "line 2"), and skips blank lines: the
 * error names the record and, for NDJSON, its line. `bad` itself for other errors.
 */
async function withJsonLine(
  session: DuckSession,
  file: LoadFile,
  bad: BadFileError,
): Promise<BadFileError> {
  const m =
    /Malformed JSON in file .*?, at byte \d+ in (line|record\/value) (\d+): (.*?)\.?\s*$/.exec(
      bad.message.split('\n')[0]!,
    );
  if (!m) return bad;
  const record = Number(m[2]) - 1;
  let line: number | undefined;
  if (m[1] === 'line') {
    let seen = 0;
    try {
      await forEachLine(session, file, (text, n) => {
        if (text.trim() === '' || ++seen < record) return true;
        line = n;
        return false;
      });
    } catch {
      // the error names the record still
    }
  }
  const where = line !== undefined ? `line ${line} (record ${record})` : `record ${record}`;
  return new BadFileError(`[load] cannot read ${file.key}: ${where}: malformed JSON, ${m[3]}`, {
    context: { key: file.key, row: record, ...(line !== undefined ? { line } : {}) },
    cause: bad.cause ?? bad,
  });
}

/**
 * The read of a staged group: its table's rows in the batch's types (`plan`: the group's
 * conversions, the same for every file of it), `_source_file` as an ENUM like Parquet's.
 */
function stagedUnit(group: StagedGroup, plan: ConformedFile | null): ReadUnit {
  const file = `CAST(${ident(SOURCE_FILE)} AS ${sourceFileEnum(group.files.map((f) => f.key))})`;
  const lineage = [`${file} AS ${ident(SOURCE_FILE)}`, ident(SOURCE_MODIFIED), ident(SOURCE_ROW)];
  // A column DuckDB reads as JSON (texts mixed with other values) is read as text; ./json-texts.ts puts the file's texts in.
  const json = group.columns
    .filter((c) => c.type === 'JSON')
    .map((c) => `CAST(${ident(c.name)} AS VARCHAR) AS ${ident(c.name)}`);
  const columns = plan
    ? plan.projection
    : `* EXCLUDE (${identList([FILE_INDEX, ...LINEAGE_COLUMNS])})${json.length > 0 ? ` REPLACE (${json.join(', ')})` : ''}`;
  const selectFrom = (relation: string) =>
    `SELECT ${columns}, ${lineage.join(', ')} FROM ${relation}`;
  return {
    files: group.files,
    select: selectFrom(ident(group.table)),
    perFile: [],
    scans: 1,
    staged: { group, selectFrom },
  };
}

/** Too many reads for one statement: a temp table per chunk, then one table of them all. */
async function createInParts(
  session: DuckSession,
  units: readonly ReadUnit[],
  chunkSize: number,
  opts: LoadOptions,
): Promise<void> {
  const parts: string[] = [];
  try {
    for (const chunk of chunks(units, chunkSize)) {
      const part = `${opts.table}__part${parts.length}`;
      await createFrom(session, part, chunk, opts);
      parts.push(part);
    }
    const all = parts.map((p) => `SELECT * FROM ${ident(p)}`).join('\nUNION ALL BY NAME\n');
    await session.run(`CREATE OR REPLACE TEMP TABLE ${ident(opts.table)} AS ${all}`);
  } finally {
    for (const p of parts) await session.run(`DROP TABLE IF EXISTS ${ident(p)}`);
  }
}

/**
 * Create `table` from the UNION ALL BY NAME of `units`. When that fails and some unit reads many
 * Parquet files at once, the files are read one by one instead (DuckDB's union_by_name can refuse
 * types that UNION ALL BY NAME combines); when that fails too, the bad file is named.
 */
async function createFrom(
  session: DuckSession,
  table: string,
  units: readonly ReadUnit[],
  opts: LoadOptions,
): Promise<void> {
  const create = (selects: readonly string[]) =>
    session.run(
      `CREATE OR REPLACE TEMP TABLE ${ident(table)} AS ${selects.join('\nUNION ALL BY NAME\n')}`,
    );
  try {
    await create(units.map((u) => u.select));
    return;
  } catch (err) {
    // A staged group whose conversions fail: the file is found within its table, then named.
    for (const u of units) if (u.staged) await locateInStaged(session, u, opts, err);
    const files = units.flatMap((u) => u.files);
    if (!units.some((u) => u.perFile.length > 1)) return diagnose(session, files, opts, err);
  }
  try {
    await create(units.flatMap((u) => (u.staged ? [u.select] : u.perFile)));
  } catch (err) {
    await diagnose(
      session,
      units.flatMap((u) => u.files),
      opts,
      err,
    );
  }
}

/** One SELECT reading some of the files, and the same files' reads one by one. */
interface ReadUnit {
  files: LoadFile[];
  select: string;
  perFile: string[];
  /** File scans the SELECT opens at once (a read_parquet of many files is one; each CSV read is one): each holds its buffers. */
  scans: number;
  /** The staged group the SELECT reads (./bulk-text.ts), and the same SELECT from another relation (some of its rows). */
  staged?: { group: StagedGroup; selectFrom: (relation: string) => string };
}

/**
 * When `unit`'s SELECT fails on its own, the first file whose rows fail (halving the group's
 * files within its table), then named by reading it alone; returns when the SELECT succeeds.
 */
async function locateInStaged(
  session: DuckSession,
  unit: ReadUnit,
  opts: LoadOptions,
  bulkError: unknown,
): Promise<void> {
  const attempt = async (lo: number, hi: number): Promise<unknown> => {
    try {
      const some = `(SELECT * FROM ${ident(unit.staged!.group.table)} WHERE ${ident(FILE_INDEX)} >= ${lo} AND ${ident(FILE_INDEX)} < ${hi})`;
      await session.run(
        `CREATE OR REPLACE TEMP TABLE __tm_probe AS ${unit.staged!.selectFrom(some)}`,
      );
      return null;
    } catch (err) {
      return err;
    } finally {
      await session.run('DROP TABLE IF EXISTS __tm_probe');
    }
  };
  const found = await bisect(0, unit.files.length, attempt);
  if (found) await diagnose(session, [unit.files[found.index]!], opts, bulkError);
}

/** Consecutive units of at most `size` scans each (a unit larger than that alone). */
function chunks(units: readonly ReadUnit[], size: number): ReadUnit[][] {
  const out: ReadUnit[][] = [];
  let current: ReadUnit[] = [];
  let scans = 0;
  for (const u of units) {
    if (current.length > 0 && scans + u.scans > size) {
      out.push(current);
      current = [];
      scans = 0;
    }
    current.push(u);
    scans += u.scans;
  }
  if (current.length > 0) out.push(current);
  return out;
}

/** Parquet files read together by one read_parquet. */
interface ReadGroup {
  files: LoadFile[];
  perFile: string[];
  projection?: string;
}

/**
 * How to read the files not staged (./bulk-text.ts stages every CSV and JSON file): Parquet
 * files that DuckDB reads with the same columns (all of them, without a schema; those of equal
 * described columns, with one) in one read_parquet. Units keep the order of the files' first
 * appearance.
 */
function readUnits(
  files: readonly LoadFile[],
  plans: readonly ConformedFile[] | null,
  csv?: CsvOptions,
): ReadUnit[] {
  const open = new Map<string, ReadGroup>();
  const order: (ReadUnit | ReadGroup)[] = [];
  files.forEach((file, i) => {
    const plan = plans?.[i];
    const select = plan ? plan.select : fileSelectSql(file, csv);
    if (file.format !== 'parquet')
      return void order.push({ files: [file], select, perFile: [select], scans: 1 });
    const signature = plan ? JSON.stringify(plan.columns) : '*';
    let group = open.get(signature);
    if (!group) {
      group = { files: [], perFile: [], ...(plan ? { projection: plan.projection } : {}) };
      open.set(signature, group);
      order.push(group);
    }
    group.files.push(file);
    group.perFile.push(select);
  });
  return order.map((entry) =>
    'select' in entry
      ? entry
      : { files: entry.files, select: groupSelect(entry), perFile: entry.perFile, scans: 1 },
  );
}

function groupSelect(g: ReadGroup): string {
  if (g.files.length === 1) return g.perFile[0]!;
  return parquetListSql(g.files, {
    unionByName: g.projection === undefined,
    ...(g.projection === undefined ? {} : { projection: g.projection }),
  });
}

/** Files `skipEmpty` stats at once. */
const STATS_AT_ONCE = 32;

/** Zero-byte files hold no rows, except that a Parquet file cannot be empty. */
async function skipEmpty(
  files: readonly LoadFile[],
): Promise<{ readable: LoadFile[]; emptyFiles: string[] }> {
  const readable: LoadFile[] = [];
  const emptyFiles: string[] = [];
  // Synchronous stats, a few at a time with the event loop's turn between: through the thread
  // pool each stat of thousands of small files cost three times its CPU.
  const sizes: number[] = [];
  for (let i = 0; i < files.length; i += STATS_AT_ONCE) {
    for (const f of files.slice(i, i + STATS_AT_ONCE)) sizes.push(statSync(f.localPath).size);
    await new Promise((resolve) => setImmediate(resolve));
  }
  for (const [i, file] of files.entries()) {
    const size = sizes[i]!;
    if (size > 0) readable.push(file);
    else if (file.format === 'parquet') {
      throw new BadFileError(
        `[load] cannot read ${file.key}: the file is empty (0 bytes), not a Parquet file`,
        { context: { key: file.key } },
      );
    } else emptyFiles.push(file.key);
  }
  return { readable, emptyFiles };
}

/**
 * The types the batch is read in: the table's, then the declared columns it lacks, then the
 * inferred types of CSV columns still unknown (./infer-text-types.ts: from all the batch's CSV
 * files together, never per file). Undefined when there is nothing to read in given types (no
 * table, nothing declared, no CSV): Parquet and JSON files bring their own types.
 */
async function batchSchema(
  session: DuckSession,
  files: readonly LoadFile[],
  opts: LoadOptions,
  described: Map<LoadFile, FileColumn[]>,
  text: {
    staged: readonly StagedGroup[];
    jsons: ReadonlyMap<LoadFile, { numbers: Map<string, ColumnNumbers> }>;
  },
): Promise<StructType | undefined> {
  const base = [...(opts.schema?.fields ?? [])];
  const known = new Set(base.map((f) => f.name.toLowerCase()));
  for (const f of opts.declared ?? []) {
    if (known.has(f.name.toLowerCase())) continue;
    base.push(f);
    known.add(f.name.toLowerCase());
  }
  // Every file is described once (its names checked, ./load-conform.ts; staged files by their
  // group), and CSV columns the types do not know yet are inferred from their texts.
  for (const file of files) {
    if (!described.has(file)) described.set(file, await describeFile(session, file, opts.csv));
  }
  const jsons = [...text.jsons].map(([file, scan]) => ({ file, numbers: scan.numbers }));
  const mixed = inexactAcrossFiles(jsons, known);
  if (mixed) throw mixed;
  if (opts.addNestedFields) widenNested(base, described);
  const tables = text.staged
    .filter((g) => g.kind === 'csv')
    .map((g) => ({ table: g.table, columns: g.columns.map((c) => c.name) }));
  const inferred = await inferTextColumns(session, {
    tables,
    known,
    ...(opts.csv ? { csv: opts.csv } : {}),
    ...(opts.keyColumns ? { keyColumns: opts.keyColumns } : {}),
  });
  for (const f of inferred) known.add(f.name.toLowerCase());
  const combined = await parquetTypesAcross(session, files, described, known);
  const fields = [...base, ...inferred, ...combined];
  return fields.length === 0 && !opts.schema ? undefined : { type: 'struct', fields };
}

/**
 * Columns the types do not know yet that the batch's Parquet files bring in different types
 * (nested ones too): each in the type DuckDB's union_by_name would combine them into, as a field of the
 * batch's schema, so every file's values are checked into it (./fit-cast.ts). Read as one, a
 * BIGINT beside a DOUBLE would become DOUBLE, 9007199254740993 stored as 9007199254740992, at the
 * top level or as a struct field or list element.
 */
async function parquetTypesAcross(
  session: DuckSession,
  files: readonly LoadFile[],
  described: ReadonlyMap<LoadFile, FileColumn[]>,
  known: ReadonlySet<string>,
): Promise<StructField[]> {
  const byName = new Map<string, Map<string, LoadFile>>();
  for (const file of files) {
    if (file.format !== 'parquet') continue;
    for (const c of described.get(file) ?? []) {
      const name = c.name.toLowerCase();
      if (known.has(name)) continue;
      const types = byName.get(name) ?? new Map<string, LoadFile>();
      if (!types.has(c.type)) types.set(c.type, file);
      byName.set(name, types);
    }
  }
  const fields: StructField[] = [];
  for (const [name, types] of byName) {
    if (types.size < 2) continue;
    // One file of each type says what DuckDB combines them into (their footers only).
    const one = [...types.values()];
    const rows = await session.all(
      `SELECT column_name, column_type FROM (DESCRIBE ${parquetListSql(one, { unionByName: true })})`,
    );
    const row = rows.find((r) => String(r['column_name']).toLowerCase() === name);
    if (!row) continue;
    const column = String(row['column_name']);
    const type = duckTypeToDelta(String(row['column_type']), column);
    // Naive timestamps combine into a naive one: a wall clock (./parquet-timestamps.ts).
    const naive = type === 'timestamp' && String(row['column_type']) !== ZONED;
    fields.push({
      name: column,
      type: naive ? 'timestamp_ntz' : type,
      nullable: true,
      metadata: {},
    });
  }
  return fields;
}

/**
 * A column the batch's types do not give (a new one) whose file type has no Delta type (a Parquet
 * TIME, a JSON text DuckDB reads as TIME, a UNION) is refused here, naming the file that holds
 * it, so `onBadFile: quarantine` can set that file aside; found only once the batch was read, the
 * same refusal named no file. A staged group's columns are those of all its files together: on
 * a refusal its files are described one by one to name one that holds the column.
 */
async function refuseTypesWithoutDelta(
  session: DuckSession,
  described: ReadonlyMap<LoadFile, FileColumn[]>,
  schema: StructType | undefined,
  staged: readonly StagedGroup[],
  csv: CsvOptions | undefined,
): Promise<void> {
  const known = new Set((schema?.fields ?? []).map((f) => f.name.toLowerCase()));
  for (const [file, columns] of described) {
    for (const c of columns) {
      if (known.has(c.name.toLowerCase())) continue;
      try {
        duckTypeToDelta(c.type, c.name);
      } catch (err) {
        if (!(err instanceof SchemaError)) throw err;
        const group = staged.find((g) => g.files.includes(file));
        const holder =
          group && group.files.length > 1 ? await fileHolding(session, group.files, c, csv) : file;
        throw new BadFileError(`[load] ${holder.key}: ${err.message.replace(/^\[schema\] /, '')}`, {
          context: { ...err.context, key: holder.key },
        });
      }
    }
  }
}

/**
 * The first of `files` whose own `column` has no Delta type either (the group's first if none
 * has): a nested one differs from the group's (`STRUCT(x, t TIME)` of `{"x"}` and `{"t"}` files).
 */
async function fileHolding(
  session: DuckSession,
  files: readonly LoadFile[],
  column: FileColumn,
  csv: CsvOptions | undefined,
): Promise<LoadFile> {
  for (const file of files) {
    const own = await describeFile(session, file, csv);
    if (own.some((c) => c.name.toLowerCase() === column.name.toLowerCase() && !hasDeltaType(c)))
      return file;
  }
  return files[0]!;
}

function hasDeltaType(column: FileColumn): boolean {
  try {
    duckTypeToDelta(column.type, column.name);
    return true;
  } catch (err) {
    if (err instanceof SchemaError) return false;
    throw err;
  }
}

/** The fields of `fields` widened, in place, by the struct fields the described files add to them. */
function widenNested(fields: StructField[], described: ReadonlyMap<LoadFile, FileColumn[]>): void {
  // The files of a staged group share one columns array: each array is looked at once.
  for (const columns of new Set(described.values())) {
    for (const c of columns) {
      const i = fields.findIndex((f) => f.name.toLowerCase() === c.name.toLowerCase());
      const field = fields[i];
      if (!field || nestedAdditions(c.type, field.type, field.name).length === 0) continue;
      fields[i] = { ...field, type: withNewFields(field.type, parseDuckType(c.type), field.name) };
    }
  }
}

async function conformAll(
  session: DuckSession,
  files: readonly LoadFile[],
  schema: StructType,
  csv: CsvOptions | undefined,
  described: ReadonlyMap<LoadFile, FileColumn[]>,
): Promise<ConformedFile[]> {
  const plans: ConformedFile[] = [];
  for (const file of files) {
    try {
      plans.push(await conformFile(session, file, schema, csv, described.get(file)));
    } catch (err) {
      throw err instanceof BadFileError ? await withCsvLine(session, file, csv, err) : err;
    }
  }
  return plans;
}

/** The columns the files bring that `schema` (the table's) lacks. */
function newColumnsOf(
  plans: readonly Pick<ConformedFile, 'file' | 'columns'>[],
  schema: StructType,
): NewColumn[] {
  const byName = new Map<string, NewColumn>();
  const known = new Set(schema.fields.map((f) => f.name.toLowerCase()));
  for (const p of plans) {
    for (const { name } of p.columns.filter((c) => !known.has(c.name.toLowerCase()))) {
      const entry = byName.get(name.toLowerCase()) ?? { name, files: [] };
      entry.files.push(p.file.key);
      byName.set(name.toLowerCase(), entry);
    }
  }
  return [...byName.values()];
}

/** Find the first file DuckDB cannot read on its own; throws a BadFileError naming it. */
async function diagnose(
  session: DuckSession,
  files: readonly LoadFile[],
  opts: LoadOptions,
  bulkError: unknown,
): Promise<never> {
  for (const file of files) {
    if (opts.schema) {
      const bad = await diagnoseFile(session, file, opts.schema, opts.csv);
      if (bad) throw await withCsvLine(session, file, opts.csv, bad);
      continue;
    }
    try {
      await session.run(
        `CREATE OR REPLACE TEMP TABLE __tm_probe AS ${fileSelectSql(file, opts.csv)}`,
      );
    } catch (err) {
      throw await withCsvLine(session, file, opts.csv, unreadable(file, err));
    } finally {
      await session.run('DROP TABLE IF EXISTS __tm_probe');
    }
  }
  // Every file reads alone: the files disagree with each other (e.g. incompatible column types),
  // or the machine could not hold them all at once.
  throwIfResourceFailure(`${files.length} files`, bulkError, files.length);
  const message = bulkError instanceof Error ? bulkError.message.split('\n')[0] : String(bulkError);
  const named =
    files.length > 5
      ? `${files
          .slice(0, 5)
          .map((f) => f.key)
          .join(', ')} and ${files.length - 5} more`
      : files.map((f) => f.key).join(', ');
  throw new BadFileError(`[load] files ${named} cannot be combined: ${message}`, {
    context: { key: files[0]?.key },
    cause: bulkError,
  });
}

/**
 * DuckDB's sniffer refuses a CSV file that breaks the pinned dialect within its sample
 * ("not possible to automatically detect the CSV parsing dialect") without naming a line. Read
 * the file again without the sniffer, as many text columns as the first line has fields, so
 * DuckDB names the line; `bad` itself when the file is not CSV, already names a line, row or
 * column, or reads that way (the problem is elsewhere).
 */
async function withCsvLine(
  session: DuckSession,
  file: LoadFile,
  csv: CsvOptions | undefined,
  bad: BadFileError,
): Promise<BadFileError> {
  if (file.format !== 'csv' && file.format !== 'tsv') return bad;
  if (
    bad.context.line !== undefined ||
    bad.context.row !== undefined ||
    bad.context.column !== undefined
  )
    return bad;
  const dialect = csvDialect(file.format, csv);
  try {
    const first = await session.one(csvFirstLineSql(file.localPath));
    const fields =
      typeof first?.['line'] === 'string' ? countCsvFields(first['line'], dialect) : null;
    if (fields === null) return bad;
    await session.run(csvStrictReadSql(file.localPath, dialect, fields));
    return bad;
  } catch (err) {
    return (await csvLineError(session, file, dialect, err, bad.cause ?? err)) ?? bad;
  }
}
