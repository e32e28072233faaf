/**
 * The MERGE benchmark's baselines: the same upsert done by rewriting the whole table.
 *
 *  - `fullRewrite`: read every live file with DuckDB, apply the upsert (same rule as MERGE:
 *    the incoming row wins when it is not older), write all rows back in key order through
 *    tidemark's data-file writer (same file size, stats, zstd), and commit an overwrite that
 *    removes every old file and adds every new one. Apples to apples with the MERGE.
 *  - `leanCopy`: the same upsert as one DuckDB COPY into a folder of Parquet files, with no
 *    stats and no Delta commit: a lower bound for any full rewrite on this machine.
 */
import { join } from 'node:path';
import { readdir, rm } from 'node:fs/promises';
import { decodeLogPath } from '../../src/delta/partition-decode.js';
import { addFileFor, removeFileFor } from '../../src/delta/file-actions.js';
import { uploadDataFiles } from '../../src/engine/data-file-io.js';
import type { DeltaTable } from '../../src/delta/table.js';
import { openTable, scanSource } from '../lib/tables.js';
import type { Snapshot } from '../../src/delta/snapshot.js';
import { writeDataFiles, type WrittenFile } from '../../src/engine/data-files.js';
import type { DuckSession } from '../../src/engine/duckdb.js';
import { withTableScan } from '../../src/engine/scan.js';
import { ident, str } from '../../src/engine/sql.js';
import { LocalStorage } from '../../src/storage/local.js';
import { Laps } from './clock.js';

/** What to upsert: a batch temp table keyed like the table, ordered by one column. */
export interface UpsertSpec {
  columns: readonly string[];
  key: string;
  orderBy: string;
  batch: string;
}

/** Outcome of a full rewrite. */
export interface RewriteResult {
  version: number;
  rows: number;
  filesRemoved: number;
  filesAdded: number;
  bytesRemoved: number;
  bytesAdded: number;
  /** ms per phase: snapshot, rewrite (read + upsert + sort + write), upload, commit. */
  phases: Record<string, number>;
  totalMs: number;
}

/**
 * The upserted rows of relation `t` with the batch, as one query (a FULL OUTER JOIN: the batch
 * is the small build side). NULL `orderBy` values count as the oldest, as in the MERGE engine.
 */
export function upsertSql(relation: string, spec: UpsertSpec): string {
  const k = ident(spec.key);
  const o = ident(spec.orderBy);
  const takeBatch = `t.${k} IS NULL OR (b.${k} IS NOT NULL AND (t.${o} IS NULL OR b.${o} >= t.${o}))`;
  const cols = spec.columns.map(
    (c) => `CASE WHEN ${takeBatch} THEN b.${ident(c)} ELSE t.${ident(c)} END AS ${ident(c)}`,
  );
  return `SELECT ${cols.join(', ')} FROM (${relation}) AS t FULL OUTER JOIN ${ident(spec.batch)} AS b ON t.${k} = b.${k} ORDER BY ${ident(spec.key)}`;
}

/** Rewrite the table at `dir` with the upsert applied, `targetFileRows` rows per file. */
export async function fullRewrite(
  session: DuckSession,
  dir: string,
  spec: UpsertSpec,
  targetFileRows: number,
): Promise<RewriteResult> {
  const laps = new Laps();
  const storage = LocalStorage.at(dir);
  const table = openTable(storage, session, { singleWriter: true });
  const snapshot = await table.snapshot();
  if (!snapshot) throw new Error(`[bench] no Delta table at ${dir}`);
  laps.lap('snapshot');
  const spool = join(dir, '..', `${dirName(dir)}-spool`);
  const files = await withTableScan(session, scanSource(storage), snapshot, (relation) =>
    writeDataFiles(session, {
      relationSql: upsertSql(relation, spec),
      schema: snapshot.schema,
      partitionColumns: snapshot.partitionColumns,
      localDir: spool,
      targetFileRows,
    }),
  );
  laps.lap('rewrite');
  await uploadDataFiles(storage, files);
  laps.lap('upload');
  const version = await commitOverwrite(table, snapshot, files);
  laps.lap('commit');
  await rm(spool, { recursive: true, force: true });
  return {
    version,
    rows: files.reduce((n, f) => n + (f.stats.numRecords ?? 0), 0),
    filesRemoved: snapshot.files.length,
    filesAdded: files.length,
    bytesRemoved: snapshot.files.reduce((n, f) => n + f.size, 0),
    bytesAdded: files.reduce((n, f) => n + f.size, 0),
    phases: laps.phases,
    totalMs: laps.total(),
  };
}

/** Remove every live file, add the new ones: Spark's `WRITE` in Overwrite mode. */
async function commitOverwrite(
  table: DeltaTable,
  snapshot: Snapshot,
  files: readonly WrittenFile[],
): Promise<number> {
  const now = Date.now();
  const result = await table.commit({
    actions: [
      ...snapshot.files.map((f) => ({ remove: removeFileFor(f, { deletionTimestamp: now }) })),
      ...files.map((f) => ({ add: addFileFor(f, { modificationTime: now }) })),
    ],
    operation: 'WRITE',
    operationParameters: { mode: 'Overwrite', partitionBy: [] },
    operationMetrics: {
      numFiles: String(files.length),
      numOutputRows: String(files.reduce((n, f) => n + (f.stats.numRecords ?? 0), 0)),
      numOutputBytes: String(files.reduce((n, f) => n + f.size, 0)),
    },
    read: {
      readVersion: snapshot.version,
      partitions: 'all',
      files: snapshot.files.map((f) => f.path),
      appIds: [],
    },
    isBlindAppend: false,
  });
  return result.version;
}

/** Outcome of the lean COPY lower bound. */
export interface LeanCopyResult {
  files: number;
  totalMs: number;
}

/**
 * One COPY of the upserted table's live files into `outDir`, `targetFileRows` rows per row
 * group and one row group per file: no stats, no commit (a lower bound, not a Delta write).
 */
export async function leanCopy(
  session: DuckSession,
  dir: string,
  outDir: string,
  spec: UpsertSpec,
  targetFileRows: number,
): Promise<LeanCopyResult> {
  const laps = new Laps();
  const storage = LocalStorage.at(dir);
  const snapshot = await openTable(storage, session, { singleWriter: true }).snapshot();
  if (!snapshot) throw new Error(`[bench] no Delta table at ${dir}`);
  const paths = snapshot.files.map((f) => storage.localPath(decodeLogPath(f.path, storage.uri))!);
  const relation = `SELECT * FROM read_parquet([${paths.map(str).join(', ')}])`;
  await session.run(
    `COPY (${upsertSql(relation, spec)}) TO ${str(outDir)} ` +
      `(FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE ${targetFileRows}, ROW_GROUPS_PER_FILE 1)`,
  );
  return { files: (await readdir(outDir)).length, totalMs: laps.total() };
}

function dirName(dir: string): string {
  return dir.split(/[\\/]/).filter(Boolean).pop() ?? 'table';
}
