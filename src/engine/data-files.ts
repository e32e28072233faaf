/**
 * Writes the Parquet data files of a Delta commit from a DuckDB relation: one file per partition
 * (several when a partition exceeds `targetFileRows`), partition columns left out of the files,
 * every column cast to the physical type of its Delta type, plus per-file stats.
 *
 * Unpartitioned rows that fit in one file are written directly by one COPY (./data-files-direct.ts).
 * All other writes are staged. Steps: (1) stage the relation once into a table (not TEMP: step 3 reads it from other
 * connections too) with the cast columns and the partition value strings; unpartitioned, by a
 * plain parallel CREATE TABLE AS whose rowid is the source order, so file k is a rowid range;
 * partitioned, also with the source order (`ord`), a partition group number (`g`, in order of
 * first appearance) and a chunk number within the group (`k`), sorted by (g, k, ord) so each
 * file's rows are contiguous; (2) one aggregate query over the staged rows gives the file list
 * and all stats; (3) one `COPY (… WHERE <file's rows>) TO … (FORMAT parquet)` per file, several
 * at once on extra connections when files are small (such a COPY keeps one core busy). Not COPY's
 * PARTITION_BY: it encodes folder names differently from Spark and names every file data_0.
 *
 * Files are written to a flat local folder under safe names; `relativePath` is the key the caller
 * uploads each one to, and `logPath` the encoded form for `add.path`.
 *
 * Under column mapping (./column-mapping-write.ts) the rows are cast and renamed to the physical
 * schema when staged, so the files, their stats and the partitionValues keys all carry physical
 * names, the COPY writes the field ids, and the files go into random two-character folders.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { physicalField, physicalName, type ColumnMappingMode } from '../delta/column-mapping.js';
import { encodeLogPath, hivePartitionFolder } from '../delta/partition-encode.js';
import { partitionValueStringSql } from './partition-sql.js';
import type { StructField, StructType } from '../delta/schema.js';
import type { PartitionValues } from '../delta/actions.js';
import { SchemaError, TidemarkError } from '../errors.js';
import { fieldIdsOption, physicalValueSql, randomPrefixFolder } from './column-mapping-write.js';
import { writeDirect } from './data-files-direct.js';
import type { HiddenColumn } from './row-ids.js';
import type { WrittenFile } from './written-file.js';
import { parquetOptions } from './parquet-options.js';
import type { DuckSession, Row } from './duckdb.js';
import {
  statsAggregatesSql,
  statsFromRow,
  statsLeaves,
  type StatsLeaf,
  type StatsPolicy,
} from './file-stats.js';
import { ident, str } from './sql.js';
import { castToDeltaSql, deltaTypeToDuckForWrite } from './type-map-write.js';

export type { WrittenFile } from './written-file.js';

/** Options of writeDataFiles. */
export interface WriteDataFilesOptions {
  /**
   * The rows to write: a query (`SELECT …`, `WITH …`, `FROM …`, `VALUES …`, `(…)`) or a table or
   * view name usable after FROM (quote it with `ident` if needed). Columns are matched to the
   * schema by name (exactly, else ignoring case); extra columns are ignored; a nullable schema
   * column the relation lacks is written as nulls.
   */
  relationSql: string;
  /** The table schema (Delta types). Data files hold its non-partition columns, in this order. */
  schema: StructType;
  /** Partition columns, in folder nesting order (metaData.partitionColumns). */
  partitionColumns: readonly string[];
  /** Local folder for the Parquet files (created if missing); files get flat unique names. */
  localDir: string;
  /** Split a partition into files of at most this many rows, keeping the relation's order. */
  targetFileRows?: number;
  /**
   * An upper bound on the relation's rows, when the caller knows one. Unpartitioned rows that fit
   * in one file (this bound within targetFileRows, or no targetFileRows) are written by one COPY
   * (./data-files-direct.ts) instead of being staged first.
   */
  rowsAtMost?: number;
  /** Parquet codec; Delta's default (delta.parquet.compression.codec unset) is zstd. */
  compression?: 'zstd' | 'snappy';
  /** Parquet row group size in rows; DuckDB's default when unset. */
  rowGroupSize?: number;
  /** Which columns get statistics (the table's `statsPolicyOf`); default: the first 32 leaves. */
  stats?: StatsPolicy;
  /** The table's column mapping mode (`schema` carries the ids and physical names); default none. */
  columnMapping?: ColumnMappingMode;
  /**
   * BIGINT columns written after the schema's but not part of it and without stats: the hidden
   * columns of row tracking (./row-ids.ts), filled from relation columns. Never mapped (no field id).
   */
  hiddenColumns?: readonly HiddenColumn[];
}

/**
 * Write the relation's rows as Parquet data files for a Delta table. Returns one entry per file
 * in partition order of first appearance; an empty relation writes nothing and returns [].
 * Stages the rows in a uniquely named table of the session's database (dropped afterwards) and
 * opens a few short-lived extra connections to it; do not run two writes on one session at once.
 */
export async function writeDataFiles(
  session: DuckSession,
  opts: WriteDataFilesOptions,
): Promise<WrittenFile[]> {
  const { dataFields, partitionFields } = splitSchema(opts.schema, opts.partitionColumns);
  if (
    opts.targetFileRows !== undefined &&
    !(Number.isInteger(opts.targetFileRows) && opts.targetFileRows > 0)
  ) {
    throw new TidemarkError(
      `[write] targetFileRows must be a positive integer, got ${opts.targetFileRows}`,
      { kind: 'usage' },
    );
  }
  const { keepsOrder, threads } = await checkSession(session);
  const from = fromClause(opts.relationSql);
  const sourceTypes = await describe(session, from);
  const mode = opts.columnMapping ?? 'none';
  // The columns as files hold them: physical names (at every depth) under column mapping.
  const fileFields = dataFields.map((f) => physicalField(f, mode));
  const dataCasts = dataFields.map((f) => physicalValueSql(castFor(f, sourceTypes), f.type, mode));
  const hidden = opts.hiddenColumns ?? [];
  const hiddenCasts = hidden.map((h) => `CAST(${ident(h.from)} AS BIGINT)`);
  const pvs = partitionFields.map((f) =>
    partitionValueStringSql(castFor(f, sourceTypes), f.type, f.name),
  );
  const layout: FileLayout = {
    partitionKeys: partitionFields.map((f) => physicalName(f, mode)),
    copyOptions: [fieldIdsOption(dataFields, mode)].filter((o): o is string => o !== null),
    mapped: mode !== 'none',
  };
  // The policy names columns as the table does; the files (and so the stats) use physical names.
  const always = new Set(opts.stats?.alwaysIndexed ?? []);
  const policy: StatsPolicy = {
    ...opts.stats,
    alwaysIndexed: dataFields.filter((f) => always.has(f.name)).map((f) => physicalName(f, mode)),
  };
  if (
    partitionFields.length === 0 &&
    keepsOrder &&
    opts.rowGroupSize === undefined &&
    fitsOneFile(opts)
  ) {
    const direct = await writeDirect(session, {
      from,
      select: [
        ...fileFields.map((f, i) => `${dataCasts[i]} AS ${ident(f.name)}`),
        ...hidden.map((h, i) => `${hiddenCasts[i]} AS ${ident(h.name)}`),
      ],
      leaves: statsLeaves(
        fileFields.map((f) => ({ name: f.name, type: f.type, sql: ident(f.name) })),
        policy,
      ),
      localDir: opts.localDir,
      folder: layout.mapped ? randomPrefixFolder() : '',
      codec: opts.compression ?? 'zstd',
      copyOptions: layout.copyOptions,
      targetFileRows: opts.targetFileRows,
      runCopy: (sql) => staging(() => session.allJson(sql)),
    });
    if (direct) return direct;
  }
  const name = `__tidemark_write_${randomUUID().replaceAll('-', '')}`;
  const staged = await stage(session, {
    name,
    from,
    dataCasts,
    hiddenCasts,
    pvs,
    targetFileRows: opts.targetFileRows,
  });
  try {
    const columns = fileFields.map((f, i) => ({ name: f.name, type: f.type, sql: `c${i}` }));
    const leaves = statsLeaves(columns, policy);
    const groups = await session.all(fileListSql(staged.keyedSql, pvs.length, leaves));
    await mkdir(opts.localDir, { recursive: true });
    const write = (conn: DuckSession, index: number) =>
      writeOneFile(conn, {
        opts,
        staged,
        fileFields,
        layout,
        leaves,
        row: groups[index]!,
        index,
        keepsOrder,
      });
    return await inParallel(session, copyLanes(groups, threads), groups.length, write);
  } finally {
    await session.run(`DROP TABLE IF EXISTS ${staged.table}`);
  }
}

/** One file will do: no split asked for, or the caller's bound on the rows is within it. */
function fitsOneFile(opts: WriteDataFilesOptions): boolean {
  if (opts.targetFileRows === undefined) return true;
  return opts.rowsAtMost !== undefined && opts.rowsAtMost <= opts.targetFileRows;
}

function splitSchema(schema: StructType, partitionColumns: readonly string[]) {
  const byName = new Map(schema.fields.map((f) => [f.name, f]));
  const partitionFields = partitionColumns.map((name) => {
    const field = byName.get(name);
    if (!field) {
      throw new SchemaError(`[write] partition column "${name}" is not in the table schema`, {
        context: { column: name },
      });
    }
    return field;
  });
  // `void` columns are always null and never stored in data files (docs/delta-protocol.md, Schema and types).
  const dataFields = schema.fields.filter(
    (f) => !partitionColumns.includes(f.name) && f.type !== 'void',
  );
  if (dataFields.length === 0) {
    throw new SchemaError(
      '[write] every column is a partition column; a Delta table needs at least one data column',
    );
  }
  return { dataFields, partitionFields };
}

/**
 * Nested naive timestamps are cast with the session zone (see castToDeltaSql), so insist on UTC.
 * Returns whether DuckDB keeps insertion order (its default); if not, each COPY sorts by `ord`.
 */
async function checkSession(
  session: DuckSession,
): Promise<{ keepsOrder: boolean; threads: number }> {
  const row = await session.one(
    `SELECT current_setting('TimeZone') AS tz, current_setting('preserve_insertion_order') AS keeps_order, ` +
      `current_setting('threads') AS threads`,
  );
  if (row?.['tz'] !== 'UTC') {
    throw new TidemarkError(
      `[write] the DuckDB session time zone must be UTC, found ${String(row?.['tz'])}`,
    );
  }
  return {
    keepsOrder: row['keeps_order'] === true,
    threads: Math.max(1, Number(row['threads']) || 1),
  };
}

/** Files are written on at most this many connections at once. */
const MAX_PARALLEL_COPIES = 4;
/** Rows of a DuckDB storage row group: a COPY runs one scan task per row group it reads. */
const DUCKDB_ROW_GROUP_ROWS = 122_880;

/**
 * How many files to write at once. A COPY reading fewer than two row groups keeps about one core
 * busy, so small files go on parallel connections (up to DuckDB's threads); bigger files already
 * use the cores, and writing them side by side gained nothing (5M rows in 250k-row files: 1.8 s
 * either way; in 160k-row files 1.85 s vs 2.2 s one at a time; 10M in 100k-row files 3.9 s vs 4.9 s).
 */
function copyLanes(files: readonly Row[], threads: number): number {
  const rows = files.reduce((sum, f) => sum + Number(f['n']), 0);
  if (files.length < 2 || rows / files.length >= 2 * DUCKDB_ROW_GROUP_ROWS) return 1;
  return Math.min(files.length, threads, MAX_PARALLEL_COPIES);
}

/**
 * Run `task(conn, i)` for i in [0, count) on `lanes` connections (the session plus lanes - 1
 * opened for the purpose), each taking the next index when it finishes; results in index order.
 * After the first failure no new task starts; the first error is thrown once all lanes stop.
 */
async function inParallel<T>(
  session: DuckSession,
  lanes: number,
  count: number,
  task: (conn: DuckSession, index: number) => Promise<T>,
): Promise<T[]> {
  const extra = await Promise.all(
    Array.from({ length: Math.max(0, lanes - 1) }, () => session.connect()),
  );
  const results: T[] = new Array<T>(count);
  let next = 0;
  let failed = false;
  const lane = async (conn: DuckSession) => {
    while (!failed && next < count) {
      const index = next++;
      try {
        results[index] = await task(conn, index);
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  };
  try {
    const outcomes = await Promise.allSettled([session, ...extra].map(lane));
    const rejected = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
    if (rejected) throw rejected.reason;
    return results;
  } finally {
    for (const conn of extra) conn.close();
  }
}

/** A query becomes a subquery; anything else is taken as a table or view name. */
function fromClause(relationSql: string): string {
  return /^\s*((select|with|from|values|table)\b|\()/i.test(relationSql)
    ? `(${relationSql})`
    : relationSql;
}

async function describe(
  session: DuckSession,
  from: string,
): Promise<Map<string, { name: string; type: string }>> {
  const rows = await session.all(`DESCRIBE SELECT * FROM ${from}`);
  return new Map(
    rows.map((r) => [
      String(r['column_name']),
      { name: String(r['column_name']), type: String(r['column_type']) },
    ]),
  );
}

/** SQL for one schema column from the source: matched by name, cast to its physical type. */
function castFor(
  field: StructField,
  sourceTypes: Map<string, { name: string; type: string }>,
): string {
  const source = sourceTypes.get(field.name) ?? caseInsensitive(sourceTypes, field.name);
  if (source) return castToDeltaSql(ident(source.name), source.type, field.type, field.name);
  if (!field.nullable) {
    throw new SchemaError(
      `[write] non-nullable column "${field.name}" is missing from the rows to write`,
      {
        context: { column: field.name },
      },
    );
  }
  return `CAST(NULL AS ${deltaTypeToDuckForWrite(field.type, field.name)})`;
}

function caseInsensitive<T>(map: Map<string, T>, name: string): T | undefined {
  const lower = name.toLowerCase();
  for (const [k, v] of map) if (k.toLowerCase() === lower) return v;
  return undefined;
}

/** Source errors (unreadable rows, failed casts) surface here; keep DuckDB's message and cause. */
function runStage(session: DuckSession, sql: string): Promise<void> {
  return staging(() => session.run(sql));
}

/** Run a statement that reads and casts the rows to write; see runStage. */
async function staging<T>(statement: () => Promise<T>): Promise<T> {
  try {
    return await statement();
  } catch (cause) {
    throw new TidemarkError(
      `[write] reading and casting the rows to write failed: ${(cause as Error).message}`,
      { cause },
    );
  }
}

interface StagingPlan {
  name: string;
  from: string;
  dataCasts: string[];
  /** Hidden columns (staged as h0..), written after the data columns. */
  hiddenCasts: string[];
  pvs: string[];
  targetFileRows: number | undefined;
}

/** Where the staged rows are and how to select one file's rows from them. */
interface Staged {
  /** Rows with c0.., p0.., ord (source order), g (partition group), k (chunk within the group). */
  keyedSql: string;
  /** The staged table (quoted; dropped afterwards), the condition picking file (g, k), the order column. */
  table: string;
  fileFilter: (g: number, k: number) => string;
  ord: string;
}

/**
 * Stage the rows (c0.. data columns, p0.. partition value strings) by one CREATE TABLE AS.
 * Unpartitioned, a plain one, which DuckDB runs in parallel and keeps in the relation's order, so
 * rowid is the source order and file k is a rowid range. Partitioned, it also numbers the rows
 * (ord), the groups by first appearance (g) and the chunks within them (k), sorted by (g, k, ord).
 */
async function stage(session: DuckSession, plan: StagingPlan): Promise<Staged> {
  const cols = [
    ...plan.dataCasts.map((sql, i) => `${sql} AS c${i}`),
    ...plan.hiddenCasts.map((sql, i) => `${sql} AS h${i}`),
    ...plan.pvs.map((sql, i) => `${sql} AS p${i}`),
  ];
  const t = plan.targetFileRows;
  const table = ident(plan.name);
  if (plan.pvs.length === 0) {
    await runStage(session, `CREATE TABLE ${table} AS SELECT ${cols.join(', ')} FROM ${plan.from}`);
    return {
      keyedSql: `(SELECT *, rowid AS ord, 0 AS g, ${t === undefined ? '0' : `rowid // ${t}`} AS k FROM ${table})`,
      table,
      fileFilter: (_g, k) =>
        t === undefined ? 'true' : `rowid >= ${k * t} AND rowid < ${(k + 1) * t}`,
      ord: 'rowid',
    };
  }
  const numbered = `SELECT ${cols.join(', ')}, row_number() OVER () AS ord FROM ${plan.from}`;
  await runStage(session, groupedSql(plan.name, numbered, plan.pvs.length, t));
  return { keyedSql: table, table, fileFilter: (g, k) => `g = ${g} AND k = ${k}`, ord: 'ord' };
}

/**
 * The partitioned staging table: the rows plus g and k, sorted by (g, k, ord). `select` numbers
 * the rows by a streaming window; a second staging table to use rowid instead measured slower.
 */
function groupedSql(
  name: string,
  select: string,
  partitionCount: number,
  t: number | undefined,
): string {
  const pcols = Array.from({ length: partitionCount }, (_, i) => `p${i}`);
  // src is read twice (groups, rows): materialize it so the relation is evaluated once.
  const src = `src AS MATERIALIZED (${select})`;
  const groups = `grp AS (SELECT ${pcols.join(', ')}, row_number() OVER (ORDER BY min(ord)) - 1 AS g FROM src GROUP BY ALL)`;
  const join = pcols.map((p) => `src.${p} IS NOT DISTINCT FROM grp.${p}`).join(' AND ');
  const chunk =
    t === undefined ? '0' : `(row_number() OVER (PARTITION BY grp.g ORDER BY src.ord) - 1) // ${t}`;
  return (
    `CREATE TABLE ${ident(name)} AS WITH ${src}, ${groups} ` +
    `SELECT src.*, grp.g, ${chunk} AS k FROM src JOIN grp ON ${join} ORDER BY g, k, ord`
  );
}

/** One row per file: g, k, partition strings, count and stats aggregates. */
function fileListSql(
  keyedSql: string,
  partitionCount: number,
  leaves: readonly StatsLeaf[],
): string {
  const keys = ['g', 'k', ...Array.from({ length: partitionCount }, (_, i) => `p${i}`)];
  return `SELECT ${keys.join(', ')}, ${statsAggregatesSql(leaves)} FROM ${keyedSql} GROUP BY ${keys.join(', ')} ORDER BY g, k`;
}

/** Where files go and how the log names their partition values. */
interface FileLayout {
  /** partitionValues keys, in partition column order (physical names under column mapping). */
  partitionKeys: string[];
  /** COPY options beyond the codec (the field ids under column mapping). */
  copyOptions: string[];
  /** Column mapping: files go into random two-character folders, not Hive partition folders. */
  mapped: boolean;
}

interface OneFile {
  opts: WriteDataFilesOptions;
  staged: Staged;
  /** Data columns as the file holds them (physical under column mapping). */
  fileFields: StructField[];
  layout: FileLayout;
  leaves: StatsLeaf[];
  row: Row;
  index: number;
  /** Staged rows are in file order; a filtered scan keeps that order unless DuckDB may reorder. */
  keepsOrder: boolean;
}

async function writeOneFile(session: DuckSession, f: OneFile): Promise<WrittenFile> {
  const codec = f.opts.compression ?? 'zstd';
  const fileName = `part-${String(f.index).padStart(5, '0')}-${randomUUID()}-c000.${codec}.parquet`;
  const localPath = join(f.opts.localDir, fileName);
  const partitionValues: PartitionValues = {};
  f.layout.partitionKeys.forEach((key, i) => {
    const v = f.row[`p${i}`];
    partitionValues[key] = typeof v === 'string' ? v : null;
  });
  const hidden = (f.opts.hiddenColumns ?? []).map((h, i) => `h${i} AS ${ident(h.name)}`);
  const select = [
    ...f.fileFields.map((field, i) => `c${i} AS ${ident(field.name)}`),
    ...hidden,
  ].join(', ');
  const where = f.staged.fileFilter(Number(f.row['g']), Number(f.row['k']));
  const options = [...parquetOptions(codec), ...f.layout.copyOptions];
  if (f.opts.rowGroupSize !== undefined)
    options.push(`ROW_GROUP_SIZE ${Math.trunc(f.opts.rowGroupSize)}`);
  await session.run(
    `COPY (SELECT ${select} FROM ${f.staged.table} WHERE ${where}${f.keepsOrder ? '' : ` ORDER BY ${f.staged.ord}`}) ` +
      `TO ${str(localPath)} (${options.join(', ')})`,
  );
  const folder = f.layout.mapped
    ? randomPrefixFolder()
    : hivePartitionFolder(f.opts.partitionColumns, partitionValues);
  const relativePath = folder === '' ? fileName : `${folder}/${fileName}`;
  return {
    localPath,
    relativePath,
    logPath: encodeLogPath(relativePath),
    partitionValues,
    size: (await stat(localPath)).size,
    stats: statsFromRow(f.row, f.leaves),
  };
}
