/**
 * Load one batch's fetched files into DuckDB and, in merge mode, reduce it to one row per key.
 * When the table exists, files are read in its column types (a value that does not fit fails
 * naming file, row and column), so dedupe orders and groups typed values. New columns are
 * refused here, naming their files, when the job's schemaEvolution is 'fail'.
 */
import type { JobConfig } from '../config/schema.js';
import type { StructField, StructType } from '../delta/schema.js';
import { assertOrderPresent, dedupeLatest } from '../engine/dedupe.js';
import type { DuckSession } from '../engine/duckdb.js';
import { loadSourceFiles, type LoadFile, type NewColumn } from '../engine/load.js';
import { checkDeleteExpression, checkDeleteFlag, deleteFlagSql } from '../engine/merge/validate.js';
import { describeRelation, dropTables } from '../engine/relation.js';
import { resolveFormat } from '../engine/source-format.js';
import { SchemaError } from '../errors.js';
import type { FetchedFile } from './fetch.js';
import { PhaseTimer } from './phases.js';

const RAW_TABLE = 'tidemark_raw';
const BATCH_TABLE = 'tidemark_batch';

export interface LoadedBatch {
  /** DuckDB table holding the batch (deduped in merge mode, and in replace mode with a key). */
  table: string;
  /** Files read (a replace by an empty delivery still has them; a batch of none commits only state). */
  files: number;
  rowsRead: number;
  rowsAfterDedupe: number;
  /**
   * Every file of the batch declares its columns' types (Parquet), so even without rows the batch
   * can create the table; an empty CSV or JSON file declares none.
   */
  typesDeclared: boolean;
  /** Columns this batch creates that Parquet files hold as naive timestamps: they become `timestamp_ntz`. */
  naiveTimestamps: string[];
  /** Warnings about the types of a table this batch creates (a text or floating key). */
  warnings: string[];
  /** Drop the batch's temp tables. */
  dispose(): Promise<void>;
}

/** Options of `loadBatch`. */
export interface LoadBatchOptions {
  /** The target table's schema (null or absent: the batch creates the table). */
  schema?: StructType | null;
  /** Adds the time spent reading to `load` and deduping to `dedupe`. */
  timer?: PhaseTimer;
  /** Files placed in the tie order at another time than their LastModified (`_source_modified`): where their content first loaded. */
  placed?: ReadonlyMap<string, Date>;
}

/** The file's full URI (`s3://landing/orders/2026/11/01/a.csv`): lineage and error messages name it. */
export function sourceName(sourceUri: string, key: string): string {
  return sourceUri.endsWith('/') ? sourceUri + key : `${sourceUri}/${key}`;
}

function toLoadFile(
  job: JobConfig,
  sourceUri: string,
  f: FetchedFile,
  placed: ReadonlyMap<string, Date> | undefined,
): LoadFile {
  const key = sourceName(sourceUri, f.file.key);
  return {
    localPath: f.localPath,
    key,
    lastModified: placed?.get(f.file.key) ?? f.file.lastModified,
    format: resolveFormat(key, job.source.format),
  };
}

/** Read, and dedupe when the job merges by key. */
export async function loadBatch(
  session: DuckSession,
  job: JobConfig,
  sourceUri: string,
  fetched: readonly FetchedFile[],
  opts: LoadBatchOptions = {},
): Promise<LoadedBatch> {
  const timer = opts.timer ?? new PhaseTimer();
  const files = fetched.map((f) => toLoadFile(job, sourceUri, f, opts.placed));
  const loaded = await timer.time('load', () =>
    loadSourceFiles(session, files, {
      table: RAW_TABLE,
      ...(job.source.csv ? { csv: job.source.csv } : {}),
      ...(opts.schema ? { schema: opts.schema } : {}),
      declared: declaredColumns(job),
      ...(job.target.key ? { keyColumns: job.target.key } : {}),
      addNestedFields: job.schemaEvolution === 'addColumns',
    }),
  );
  const dispose = async () => {
    await dropTables(session, [RAW_TABLE, BATCH_TABLE]);
  };
  if (job.schemaEvolution === 'fail' && loaded.newColumns.length > 0) {
    await dispose();
    throw newColumnsRefused(job, loaded.newColumns);
  }
  const rowsRead = loaded.rows;
  const folderWarnings = folderColumnWarnings(job, sourceUri, fetched, loaded.fileColumns);
  const typesDeclared =
    files.length > 0 &&
    files.every((f) => f.format === 'parquet') &&
    loaded.emptyFiles.length === 0;
  // Merge mode, and replace mode with a key, keep the latest row per key.
  if (job.target.mode === 'append' || !job.target.key || rowsRead === 0) {
    return {
      table: RAW_TABLE,
      files: files.length,
      rowsRead,
      rowsAfterDedupe: rowsRead,
      typesDeclared,
      naiveTimestamps: loaded.naiveTimestamps,
      warnings: folderWarnings,
      dispose,
    };
  }
  let warnings: string[];
  try {
    const types = await columnTypes(session);
    requireColumns(job, files, types);
    requireOrderedVersion(job, types, opts.schema ? 'table' : 'inferred');
    warnings = [...folderWarnings, ...(opts.schema ? [] : keyTypeWarnings(job, types))];
  } catch (err) {
    await dispose();
    throw err;
  }
  // scd2 keeps every version: one row per key and orderBy value (a version needs its time).
  const scd2 = job.target.mode === 'scd2';
  // At one orderBy a delete wins over a version, in one batch as across batches: the dedupe
  // reads the delete flag before the write does, so deleteWhen is parsed first (one expression,
  // nothing else runs), and a dedupe that fails is asked whether deleteWhen did not evaluate.
  const deleteFirst = scd2 ? job.target.deleteWhen : undefined;
  const rowsAfterDedupe = await timer.time('dedupe', async () => {
    if (scd2) await assertOrderPresent(session, RAW_TABLE, job.target.orderBy!);
    if (deleteFirst) await checkDeleteExpression(session, deleteFirst);
    try {
      return await dedupeLatest(session, {
        input: RAW_TABLE,
        output: BATCH_TABLE,
        keyColumns: scd2 ? [...job.target.key!, job.target.orderBy!] : job.target.key!,
        orderBy: job.target.orderBy!,
        ...(deleteFirst ? { rankFirst: deleteFlagSql(deleteFirst) } : {}),
      });
    } catch (err) {
      if (deleteFirst) await checkDeleteFlag(session, RAW_TABLE, deleteFirst);
      throw err;
    }
  });
  return {
    table: BATCH_TABLE,
    files: files.length,
    rowsRead,
    rowsAfterDedupe,
    typesDeclared,
    naiveTimestamps: loaded.naiveTimestamps,
    warnings,
    dispose,
  };
}

/**
 * Spark, Hive and delta-rs write a partition column's value into the folder name
 * (`part=0.00004/part-00000.parquet`), not into the file. A folder name is never data here
 * (docs/concepts.md), so the rows of such a file have no such column (NULL in a table that has
 * one): said once per column and batch, naming a file. The folders of a partition layout
 * (`dt={yyyy}-{mm}-{dd}/`) are the job's own and are not concerned.
 */
function folderColumnWarnings(
  job: JobConfig,
  sourceUri: string,
  fetched: readonly FetchedFile[],
  fileColumns: ReadonlyMap<string, readonly string[]>,
): string[] {
  const discover = job.source.discover;
  const layoutLevels =
    discover.by === 'partition' ? discover.layout.split('/').filter((s) => s !== '').length : 0;
  const found = new Map<string, string>();
  for (const f of fetched) {
    const key = sourceName(sourceUri, f.file.key);
    const own = new Set((fileColumns.get(key) ?? []).map((c) => c.toLowerCase()));
    for (const folder of f.file.key.split('/').slice(layoutLevels, -1)) {
      const eq = folder.indexOf('=');
      if (eq <= 0) continue;
      const name = folder.slice(0, eq);
      if (!own.has(name.toLowerCase()) && !found.has(name)) found.set(name, key);
    }
  }
  return [...found].map(
    ([name, key]) =>
      `${key} lies below a folder ${name}=…, and the file has no column ${JSON.stringify(name)}: ` +
      `its value is in the folder name only (a Hive-style partition, as Spark writes), which tidemark never reads as data, ` +
      `so these rows have no ${JSON.stringify(name)} (NULL where the table has the column)`,
  );
}

/** `source.columns` as table fields. */
function declaredColumns(job: JobConfig): StructField[] {
  return Object.entries(job.source.columns ?? {}).map(([name, type]) => ({
    name,
    type,
    nullable: true,
    metadata: {},
  }));
}

/** The batch's columns and their DuckDB types, by lower-cased name. */
async function columnTypes(session: DuckSession): Promise<Map<string, string>> {
  const columns = await describeRelation(session, RAW_TABLE);
  return new Map(columns.map((c) => [c.name.toLowerCase(), c.type]));
}

const TEXT_TYPES = /^(VARCHAR|BLOB|BOOLEAN|JSON|UUID)$/;
const FLOAT_TYPES = /^(FLOAT|DOUBLE)$/;

function declaredType(job: JobConfig, column: string): string | undefined {
  const lower = column.toLowerCase();
  return Object.entries(job.source.columns ?? {}).find(([n]) => n.toLowerCase() === lower)?.[1];
}

/**
 * The version column must order as the user means: text compares `9` above `10`, so a text
 * (or boolean, binary) orderBy is refused unless `source.columns` declares it `string`.
 */
function requireOrderedVersion(
  job: JobConfig,
  types: ReadonlyMap<string, string>,
  whose: 'table' | 'inferred',
): void {
  const column = job.target.orderBy!;
  const type = types.get(column.toLowerCase());
  if (type === undefined || !TEXT_TYPES.test(type) || declaredType(job, column) === 'string')
    return;
  const why =
    whose === 'table'
      ? `the table's column is ${type}`
      : `its values in this batch read as ${type} (no value, or not all numbers or dates)`;
  throw new SchemaError(
    `[load] job ${job.name}: orderBy column ${JSON.stringify(column)} would be compared as text (${why}), where "9" sorts above "10"; ` +
      `declare its type in source.columns (e.g. ${column}: long, or timestamp), or declare it string to compare as text`,
    { context: { column } },
  );
}

/** A new table's key columns typed as text or floating: joined exactly as typed, which the user should confirm. */
function keyTypeWarnings(job: JobConfig, types: ReadonlyMap<string, string>): string[] {
  return job.target.key!.flatMap((k) => {
    const type = types.get(k.toLowerCase());
    if (type === undefined || declaredType(job, k) !== undefined) return [];
    if (FLOAT_TYPES.test(type))
      return [
        `key column ${JSON.stringify(k)} is ${type}: keys that differ beyond its precision would merge into one; declare it in source.columns`,
      ];
    if (TEXT_TYPES.test(type))
      return [
        `key column ${JSON.stringify(k)} is inferred as text (${type}): ' 42' and '42' are different keys; declare it in source.columns to confirm or to type it`,
      ];
    return [];
  });
}

/**
 * Key and orderBy columns must come from the files. A file of a larger batch that lacks the key
 * fails later as a NULL key naming it; here none has it: with one file that file is named.
 */
function requireColumns(
  job: JobConfig,
  files: readonly LoadFile[],
  present: ReadonlyMap<string, string>,
): void {
  for (const [role, names] of [
    ['key', job.target.key!],
    ['orderBy', [job.target.orderBy!]],
  ] as const) {
    const missing = names.find((n) => !present.has(n.toLowerCase()));
    if (missing === undefined) continue;
    const named = files.length === 1 ? files[0]!.key : `${files.length} files`;
    throw new SchemaError(
      `[load] job ${job.name}: ${role} column ${JSON.stringify(missing)} is missing from ${named}`,
      {
        context: {
          column: missing,
          ...(files.length === 1 ? { key: files[0]!.key } : { files: files.map((f) => f.key) }),
        },
      },
    );
  }
}

/** The SchemaError of `schemaEvolution: 'fail'`: every new column with its files; `key` is the first file. */
function newColumnsRefused(job: JobConfig, columns: readonly NewColumn[]): SchemaError {
  const files = [...new Set(columns.flatMap((c) => c.files))];
  const list = columns.map(
    (c) =>
      `${JSON.stringify(c.name)} (in ${c.files.slice(0, 5).join(', ')}${c.files.length > 5 ? ', …' : ''})`,
  );
  return new SchemaError(
    `[load] job ${job.name}: files have columns that table ${job.target.uri} lacks: ${list.join(', ')}; ` +
      "schemaEvolution is 'fail' (set it to 'addColumns' to add them)",
    {
      context: {
        uri: job.target.uri,
        key: files[0]!,
        files,
        column: columns[0]!.name,
        columns: columns.map((c) => c.name),
      },
    },
  );
}
