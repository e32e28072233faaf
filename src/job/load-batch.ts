/**
 * Load one batch's fetched files into DuckDB and, in merge mode, reduce it to one row per key.
 */
import type { JobConfig } from '../config/schema.js';
import { dedupeLatest } from '../engine/dedupe.js';
import type { DuckSession } from '../engine/duckdb.js';
import { loadFiles, type LoadFile } from '../engine/load.js';
import { resolveFormat } from '../engine/source-format.js';
import { ident } from '../engine/sql.js';
import type { FetchedFile } from './fetch.js';

const RAW_TABLE = 'tidemark_raw';
const BATCH_TABLE = 'tidemark_batch';

export interface LoadedBatch {
  /** DuckDB table holding the batch (deduped in merge mode). */
  table: string;
  rowsRead: number;
  rowsAfterDedupe: number;
  /** Drop the batch's temp tables. */
  dispose(): Promise<void>;
}

/** The file's full URI (`s3://landing/orders/2026/11/01/a.csv`): lineage and error messages name it. */
function sourceName(sourceUri: string, key: string): string {
  return sourceUri.endsWith('/') ? sourceUri + key : `${sourceUri}/${key}`;
}

function toLoadFile(job: JobConfig, sourceUri: string, f: FetchedFile): LoadFile {
  return {
    localPath: f.localPath,
    key: sourceName(sourceUri, f.file.key),
    lastModified: f.file.lastModified,
    format: resolveFormat(f.file.key, job.source.format),
  };
}

/** Read, and dedupe when the job merges by key. */
export async function loadBatch(session: DuckSession, job: JobConfig, sourceUri: string, fetched: readonly FetchedFile[]): Promise<LoadedBatch> {
  const files = fetched.map((f) => toLoadFile(job, sourceUri, f));
  const rowsRead = await loadFiles(session, files, { table: RAW_TABLE, ...(job.source.csv ? { csv: job.source.csv } : {}) });
  const dispose = async () => {
    await session.run(`DROP TABLE IF EXISTS ${ident(RAW_TABLE)}; DROP TABLE IF EXISTS ${ident(BATCH_TABLE)}`);
  };
  if (job.target.mode !== 'merge' || rowsRead === 0) {
    return { table: RAW_TABLE, rowsRead, rowsAfterDedupe: rowsRead, dispose };
  }
  const rowsAfterDedupe = await dedupeLatest(session, {
    input: RAW_TABLE,
    output: BATCH_TABLE,
    keyColumns: job.target.key!,
    orderBy: job.target.orderBy!,
  });
  return { table: BATCH_TABLE, rowsRead, rowsAfterDedupe, dispose };
}
