/**
 * Reading a snapshot's data files as one relation (docs/delta-protocol.md, Reading data files).
 * Only the files the log lists are read, never a glob; partition values come from the log, never
 * folder names; columns a file lacks read as NULL; every column is cast to the type the schema
 * gives (INT96 timestamps, naive but UTC, become TIMESTAMPTZ in the UTC session); rows a deletion
 * vector deletes are left out (an anti-join on the row's position in its file). Under column
 * mapping, columns are found by physical name or Parquet field id at every struct level and
 * partition values by physical key (./column-mapping-read.ts).
 *
 * Files with the same Parquet schema and the same partition values are read by one
 * `read_parquet([...])`, deletion vectors or not, so an unpartitioned table is one scan whatever
 * its file count.
 */
import { BadFileError } from '../errors.js';
import { physicalName, type ColumnMappingMode } from '../delta/column-mapping.js';
import { partitionValueSql } from './partition-sql.js';
import type { StructField } from '../delta/schema.js';
import type { LiveFile, Snapshot } from '../delta/snapshot.js';
import type { Spool } from '../spool/spool.js';
import type { Storage } from '../storage/storage.js';
import { mappedColumnSql, type ParquetNode } from './column-mapping-read.js';
import { localDataFiles } from './data-file-io.js';
import { DELETED_FILE, DELETED_POS, loadDeletedRows, type DeletedRows } from './deleted-rows.js';
import type { DuckSession, Row } from './duckdb.js';
import {
  STABLE_ROW_ID,
  STABLE_ROW_VERSION,
  stableRowIdsSql,
  type MaterializedColumns,
} from './row-ids.js';
import { safeReadPath } from './safe-alias.js';
import { ident, str } from './sql.js';
import { deltaTypeToDuck } from './type-map-read.js';
import { TableConfig } from '../delta/table-config.js';

/** The top-level columns of a Parquet file (names, and the schema tree with field ids), and a signature of its whole schema. */
export interface FileShape {
  columns: string[];
  fields: ParquetNode[];
  /** Equal signatures mean DuckDB can read the files together. */
  signature: string;
}

/** Files per parquet_schema() query, to bound the SQL text. */
const INSPECT_BATCH = 500;

/** The shape of each Parquet file (keyed by the paths given). Throws BadFileError for unreadable files. */
export async function inspectFiles(
  session: DuckSession,
  paths: readonly string[],
): Promise<Map<string, FileShape>> {
  const shapes = new Map<string, FileShape>();
  const unique = [...new Set(paths)];
  for (let i = 0; i < unique.length; i += INSPECT_BATCH) {
    const batch = unique.slice(i, i + INSPECT_BATCH);
    const byAlias = new Map(batch.map((p) => [safeReadPath(p), p]));
    const rows = await schemaRows(session, [...byAlias.keys()]);
    const perFile = new Map<string, Row[]>();
    for (const row of rows) {
      const name = String(row['file_name']);
      const list = perFile.get(name);
      if (list) list.push(row);
      else perFile.set(name, [row]);
    }
    for (const [alias, path] of byAlias) {
      const fileRows = perFile.get(alias);
      if (!fileRows)
        throw new BadFileError(`[scan] no Parquet schema read from ${path}`, {
          context: { key: path },
        });
      shapes.set(path, shapeFromSchemaRows(fileRows));
    }
  }
  return shapes;
}

async function schemaRows(session: DuckSession, paths: string[]): Promise<Row[]> {
  const list = paths.map(str).join(', ');
  const sql =
    'SELECT file_name, column_id, name, type, type_length, repetition_type, num_children, converted_type, ' +
    `scale, precision, field_id, logical_type, duckdb_type FROM parquet_schema([${list}]) ORDER BY file_name, column_id`;
  try {
    return await session.allJson(sql);
  } catch (cause) {
    const key = paths.length === 1 ? paths[0] : undefined;
    throw new BadFileError(
      `[scan] cannot read the Parquet schema of ${key ?? `${paths.length} data files`}`,
      {
        context: { key },
        cause,
      },
    );
  }
}

/** The schema tree from the depth-first schema rows (row 0 is the root). */
function shapeFromSchemaRows(rows: Row[]): FileShape {
  let next = 0;
  const node = (): ParquetNode => {
    const row = rows[next++]!;
    const children = Array.from({ length: Number(row['num_children'] ?? 0) }, node);
    const converted = String(row['converted_type'] ?? '');
    const kind =
      converted === 'LIST'
        ? 'list'
        : converted.startsWith('MAP')
          ? 'map'
          : children.length > 0
            ? 'group'
            : 'leaf';
    return {
      name: String(row['name']),
      fieldId: row['field_id'] == null ? null : Number(row['field_id']),
      kind,
      children,
    };
  };
  const fields = rows.length > 0 ? node().children : [];
  const signature = JSON.stringify(rows.slice(1).map(({ file_name: _, ...rest }) => rest));
  return { columns: fields.map((f) => f.name), fields, signature };
}

/** How `scanSql` reads the files. */
export interface ScanOptions {
  /** Each file's columns (missing ones read as NULL); without it every file is assumed to hold every data column. */
  shapeOf?: (localPath: string) => FileShape | undefined;
  /** Rows deleted by deletion vectors (./deleted-rows.ts); required when a file has a DV. */
  deleted?: DeletedRows | null;
  /** Also yield each row's position in its file (`file_row_number`) under this column name. */
  position?: string;
  /** Also yield each row's file as `idOf(file)` (an INTEGER) under `column`. */
  fileId?: { column: string; idOf: (file: LiveFile) => number };
  /**
   * On a row-tracking table, also yield each row's stable row id and commit version
   * (STABLE_ROW_ID, STABLE_ROW_VERSION; ./row-ids.ts), read from these hidden columns.
   */
  stableRowIds?: MaterializedColumns;
}

/** Files read by one `read_parquet`: the same Parquet schema and the same partition values. */
interface ScanGroup {
  file: LiveFile;
  shape: FileShape | undefined;
  files: LiveFile[];
  paths: string[];
}

/**
 * SQL for the snapshot's rows in `files`, with the schema's columns in order (plus the position
 * and file id columns when asked for). Rows a file's deletion vector deletes are left out. Paths
 * with glob characters are read through safe aliases.
 *
 * Files of a group are one scan, so DuckDB spreads it over its threads; a row's file within the
 * group is DuckDB's `file_index` (its place in the list), which maps to the file id and to the
 * id of its deleted rows through constant lists.
 */
export function scanSql(
  snapshot: Snapshot,
  files: readonly LiveFile[],
  localPathOf: (file: LiveFile) => string,
  opts: ScanOptions = {},
): string {
  if (files.length === 0)
    return emptyRelationSql(
      snapshot,
      opts.position,
      opts.fileId?.column,
      opts.stableRowIds !== undefined,
    );
  const columns = readColumns(snapshot);
  const groups = new Map<string, ScanGroup>();
  for (const file of files) {
    const path = localPathOf(file);
    const shape = opts.shapeOf?.(path);
    const key = JSON.stringify([shape?.signature ?? null, partitionKey(columns, file)]);
    const group = groups.get(key) ?? { file, shape, files: [], paths: [] };
    group.files.push(file);
    group.paths.push(safeReadPath(path));
    groups.set(key, group);
  }
  return [...groups.values()]
    .map((g) => groupSql(snapshot, columns, g, opts))
    .join('\nUNION ALL BY NAME\n');
}

function groupSql(
  snapshot: Snapshot,
  columns: readonly ReadColumn[],
  g: ScanGroup,
  opts: ScanOptions,
): string {
  const deletedIds = g.files.map((f) =>
    f.deletionVector ? deletedIdOf(snapshot, f, opts.deleted) : null,
  );
  const anyDeleted = deletedIds.some((id) => id !== null);
  const needsPosition =
    opts.position !== undefined || anyDeleted || opts.stableRowIds !== undefined;
  const source = `read_parquet([${g.paths.map(str).join(', ')}], hive_partitioning = false${needsPosition ? ', file_row_number = true' : ''})`;
  // DuckDB lists are 1-based; file_index is 0-based.
  const perFile = (values: ReadonlyArray<number | null | undefined>, type = 'INTEGER') =>
    `([${values.map((v) => (v === null || v === undefined ? 'NULL' : String(v))).join(', ')}]::${type}[])[CAST(r.file_index AS BIGINT) + 1]`;
  const extra: string[] = [];
  if (opts.position !== undefined) extra.push(`r.file_row_number AS ${ident(opts.position)}`);
  if (opts.fileId)
    extra.push(`${perFile(g.files.map(opts.fileId.idOf))} AS ${ident(opts.fileId.column)}`);
  if (opts.stableRowIds) {
    const base = perFile(
      g.files.map((f) => f.baseRowId),
      'BIGINT',
    );
    const version = perFile(
      g.files.map((f) => f.defaultRowCommitVersion),
      'BIGINT',
    );
    extra.push(
      stableRowIdsSql({
        base,
        version,
        fileColumns: g.shape?.columns,
        columns: opts.stableRowIds,
        alias: 'r',
      }),
    );
  }
  const live = !anyDeleted
    ? ''
    : ` ANTI JOIN ${ident(opts.deleted!.table)} AS d ON d.${ident(DELETED_FILE)} = ${perFile(deletedIds)} AND d.${ident(DELETED_POS)} = r.file_row_number`;
  return `SELECT ${[projection(columns, g.file, g.shape, 'r'), ...extra].join(', ')} FROM ${source} AS r${live}`;
}

/** The id of a file's deleted rows; a file with a DV but no loaded deleted rows is a bug of the caller. */
function deletedIdOf(
  snapshot: Snapshot,
  file: LiveFile,
  deleted: DeletedRows | null | undefined,
): number {
  const id = deleted?.idOf(file);
  if (id === undefined)
    throw new Error(
      `[scan] data file ${file.path} of ${snapshot.tableUri} has a deletion vector that was not loaded`,
    );
  return id;
}

/**
 * Inspect the files' schemas with DuckDB and load their deletion vectors, then build the scan
 * (see `scanSql`). `localPathOf` must give a path DuckDB can read for each file. The deleted rows
 * live in a temp table until the caller drops it (`deleted.drop()`); null when no file has a DV.
 */
export async function scanRelation(
  session: DuckSession,
  source: { storage: Storage; snapshot: Snapshot },
  files: readonly LiveFile[],
  localPathOf: (file: LiveFile) => string,
  opts: Pick<ScanOptions, 'stableRowIds'> = {},
): Promise<{ sql: string; deleted: DeletedRows | null }> {
  const shapes = await inspectFiles(session, files.map(localPathOf));
  const deleted = await loadDeletedRows(files, { session, storage: source.storage });
  return {
    sql: scanSql(source.snapshot, files, localPathOf, {
      ...opts,
      shapeOf: (p) => shapes.get(p),
      deleted,
    }),
    deleted,
  };
}

/**
 * A correctly typed relation with no rows (with the position and file id columns when named, and
 * the stable row-id columns when asked for).
 */
export function emptyRelationSql(
  snapshot: Snapshot,
  position?: string,
  fileId?: string,
  stableRowIds = false,
): string {
  const columns = snapshot.schema.fields.map(
    (f) => `CAST(NULL AS ${deltaTypeToDuck(f.type)}) AS ${ident(f.name)}`,
  );
  if (position !== undefined) columns.push(`CAST(NULL AS BIGINT) AS ${ident(position)}`);
  if (fileId !== undefined) columns.push(`CAST(NULL AS INTEGER) AS ${ident(fileId)}`);
  if (stableRowIds)
    columns.push(
      `CAST(NULL AS BIGINT) AS ${ident(STABLE_ROW_ID)}`,
      `CAST(NULL AS BIGINT) AS ${ident(STABLE_ROW_VERSION)}`,
    );
  return `SELECT ${columns.join(', ')} LIMIT 0`;
}

/** A schema column as the scan reads it: the field, whether it is a partition column, its name in the log and files. */
interface ReadColumn {
  field: StructField;
  partition: boolean;
  /** Key of partitionValues (the physical name under column mapping). */
  key: string;
  mode: ColumnMappingMode;
}

function readColumns(snapshot: Snapshot): ReadColumn[] {
  const mode = TableConfig.of(snapshot.protocol, snapshot.metadata).columnMapping;
  return snapshot.schema.fields.map((field) => ({
    field,
    partition: isPartitionColumn(snapshot, field.name),
    key: physicalName(field, mode),
    mode,
  }));
}

function projection(
  columns: readonly ReadColumn[],
  file: LiveFile,
  shape: FileShape | undefined,
  alias: string,
): string {
  return columns
    .map((c) => `${columnSql(c, file, shape, alias)} AS ${ident(c.field.name)}`)
    .join(', ');
}

function columnSql(
  column: ReadColumn,
  file: LiveFile,
  shape: FileShape | undefined,
  alias: string,
): string {
  const { field, mode } = column;
  const type = deltaTypeToDuck(field.type);
  if (column.partition)
    return partitionValueSql(partitionValue(file, column.key), field.type, field.name);
  if (field.type === 'void') return `CAST(NULL AS ${type})`;
  if (mode !== 'none') return mappedColumnSql(field, shape?.fields, mode, alias);
  const stored = shape ? findColumn(shape.columns, field.name) : field.name;
  return stored === undefined
    ? `CAST(NULL AS ${type})`
    : `CAST(${alias}.${ident(stored)} AS ${type})`;
}

/** Column names are case-insensitive in Delta; prefer the exact spelling. */
function findColumn(columns: readonly string[], name: string): string | undefined {
  return (
    columns.find((c) => c === name) ?? columns.find((c) => c.toLowerCase() === name.toLowerCase())
  );
}

function isPartitionColumn(snapshot: Snapshot, name: string): boolean {
  return snapshot.partitionColumns.some((c) => c.toLowerCase() === name.toLowerCase());
}

/** The file's partition value of `column` (a key of partitionValues, matched case-insensitively). */
export function partitionValue(file: LiveFile, column: string): string | null {
  const values = file.partitionValues ?? {};
  if (column in values) return values[column] ?? null;
  const key = Object.keys(values).find((k) => k.toLowerCase() === column.toLowerCase());
  return key === undefined ? null : (values[key] ?? null);
}

function partitionKey(columns: readonly ReadColumn[], file: LiveFile): Array<string | null> {
  return columns.filter((c) => c.partition).map((c) => partitionValue(file, c.key));
}

/**
 * Run `fn` on a relation over the snapshot's files. Files are read in place when the store
 * is local, otherwise downloaded to a spool folder that is removed afterwards (./data-file-io.ts).
 */
export async function withTableScan<T>(
  session: DuckSession,
  source: { storage: Storage; spool: Spool },
  snapshot: Snapshot,
  fn: (relationSql: string) => Promise<T>,
): Promise<T> {
  const { storage, spool } = source;
  const local = await localDataFiles(snapshot.files, { storage, spool, folder: 'scan' });
  try {
    const { sql, deleted } = await scanRelation(
      session,
      { storage, snapshot },
      snapshot.files,
      (f) => local.paths.get(f.path)!,
    );
    try {
      return await fn(sql);
    } finally {
      await deleted?.drop();
    }
  } finally {
    await local.dispose();
  }
}

/** All rows of the snapshot as JS objects (for tests and small tables). */
export async function readTable(
  session: DuckSession,
  source: { storage: Storage; spool: Spool },
  snapshot: Snapshot,
): Promise<Row[]> {
  return withTableScan(session, source, snapshot, (relation) =>
    session.all(`SELECT * FROM (${relation})`),
  );
}
