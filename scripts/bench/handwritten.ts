/**
 * The ingest benchmark's baseline: what a data engineer would write by hand in DuckDB to load
 * the same files: read every Parquet file, keep the latest row per key, write one Parquet file
 * (zstd, like tidemark's data files). One COPY statement; no lineage, stats, log or state.
 */
import type { DuckSession } from '../../src/engine/duckdb.js';
import { ident, str } from '../../src/engine/sql.js';

/** What the pipeline reads and writes. */
export interface HandwrittenSpec {
  /** Absolute paths of the source files. */
  files: readonly string[];
  /** Output Parquet file. */
  out: string;
  key: string;
  orderBy: string;
}

/** The COPY statement. */
export function handwrittenSql(spec: HandwrittenSpec): string {
  const rows = `SELECT * FROM read_parquet([${spec.files.map(str).join(', ')}])`;
  const latest = `QUALIFY row_number() OVER (PARTITION BY ${ident(spec.key)} ORDER BY ${ident(spec.orderBy)} DESC) = 1`;
  return `COPY (${rows} ${latest}) TO ${str(spec.out)} (FORMAT parquet, COMPRESSION zstd)`;
}

/** Run the pipeline. */
export async function runHandwritten(session: DuckSession, spec: HandwrittenSpec): Promise<void> {
  await session.run(handwrittenSql(spec));
}

/** Row count and fingerprint of the pipeline's output over `columns`. */
export async function parquetFingerprint(
  session: DuckSession,
  path: string,
  columns: readonly string[],
): Promise<{ rows: number; hash: string }> {
  const row = await session.one(
    `SELECT count(*)::BIGINT AS n, sum(hash(${columns.map(ident).join(', ')}))::VARCHAR AS h FROM read_parquet(${str(path)})`,
  );
  return { rows: Number(row?.['n'] ?? 0), hash: String(row?.['h'] ?? '') };
}
