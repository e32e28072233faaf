/**
 * Helpers for the schema-drift and bad-input job tests: files landed with exact bytes (CSV text,
 * Parquet written by DuckDB from a SELECT, raw bytes), the target table read back with all its
 * columns, and the one commit a run made.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { JobConfig, StorageConfig } from '../../src/config/schema.js';
import { parseCommit, type Action } from '../../src/delta/actions.js';
import type { DuckSession, Row } from '../../src/engine/duckdb.js';
import { withTableScan } from '../../src/engine/scan.js';
import { str } from '../../src/engine/sql.js';
import { openTarget } from '../../src/job/open.js';
import type { Storage } from '../../src/storage/storage.js';
import { openTable, scanSource } from '../../scripts/lib/tables.js';

/** Parquet bytes of the rows of `select`, written by DuckDB. */
export async function parquetOf(session: DuckSession, select: string): Promise<Uint8Array> {
  const dir = await mkdtemp(join(tmpdir(), 'tidemark-pq-'));
  try {
    const file = join(dir, 'x.parquet');
    await session.run(`COPY (${select}) TO ${str(file)} (FORMAT parquet)`);
    return new Uint8Array(await readFile(file));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Land a Parquet file with the rows of `select`. */
export async function putParquet(
  source: Storage,
  session: DuckSession,
  key: string,
  select: string,
): Promise<void> {
  await source.write(key, await parquetOf(session, select));
}

type Setup = { job: JobConfig; storage: StorageConfig };

/** Every row of the job's table (JSON-safe values, lineage columns left out), ordered by `orderBy`. */
export async function tableRows(
  session: DuckSession,
  setup: Setup,
  orderBy: string,
): Promise<Row[]> {
  const storage = openTarget(setup.job, setup.storage);
  const snapshot = await openTable(storage, session, { singleWriter: true }).snapshot();
  if (!snapshot) return [];
  const rows = await withTableScan(session, scanSource(storage), snapshot, (relation) =>
    session.allJson(
      `SELECT * EXCLUDE (_source_file, _source_modified) FROM (${relation}) ORDER BY ${orderBy}`,
    ),
  );
  return rows;
}

/** The actions of commit `version` of the job's table. */
export async function commitOf(setup: Setup, version: number): Promise<Action[]> {
  const storage = openTarget(setup.job, setup.storage);
  const bytes = await storage.read(`_delta_log/${String(version).padStart(20, '0')}.json`);
  if (!bytes) throw new Error(`no commit ${version}`);
  return parseCommit(new TextDecoder().decode(bytes), version, storage.uri);
}
