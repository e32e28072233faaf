/**
 * Cheap correctness checks for benchmark results: a table's row count and an order-free
 * fingerprint of all its rows (equal fingerprints = equal multisets of rows, with high
 * probability), and spot checks of a few keys.
 */
import { openTable, scanSource } from '../lib/tables.js';
import type { DuckSession, Row } from '../../src/engine/duckdb.js';
import { withTableScan } from '../../src/engine/scan.js';
import { ident, identList } from '../../src/engine/sql.js';
import { LocalStorage } from '../../src/storage/local.js';
import type { Storage } from '../../src/storage/storage.js';

/** Row count and fingerprint of a table's latest snapshot. */
export interface TableFingerprint {
  version: number;
  files: number;
  bytes: number;
  rows: number;
  /** sum of hash(row) as text (a HUGEINT). */
  hash: string;
}

/** Fingerprint the table at `dir` over `columns`. */
export function fingerprint(
  session: DuckSession,
  dir: string,
  columns: readonly string[],
): Promise<TableFingerprint> {
  return fingerprintAt(session, LocalStorage.at(dir), columns);
}

/** Fingerprint the table rooted at `storage` (a folder, an S3 prefix) over `columns`. */
export async function fingerprintAt(
  session: DuckSession,
  storage: Storage,
  columns: readonly string[],
): Promise<TableFingerprint> {
  const snapshot = await openTable(storage, session, { singleWriter: true }).snapshot();
  if (!snapshot) throw new Error(`[bench] no Delta table at ${storage.uri}`);
  const row = await withTableScan(session, scanSource(storage), snapshot, (relation) =>
    session.one(
      `SELECT count(*)::BIGINT AS n, sum(hash(${identList([...columns])}))::VARCHAR AS h FROM (${relation})`,
    ),
  );
  return {
    version: snapshot.version,
    files: snapshot.files.length,
    bytes: snapshot.files.reduce((n, f) => n + f.size, 0),
    rows: Number(row?.['n'] ?? 0),
    hash: String(row?.['h'] ?? ''),
  };
}

/**
 * Keys of the batch (a temp table) whose row in the table at `dir` differs from the batch
 * row, among `sample` keys picked evenly from the batch. Empty = all sampled keys updated.
 */
export async function sampledMismatches(
  session: DuckSession,
  dir: string,
  spec: { batch: string; key: string; columns: readonly string[]; sample: number },
): Promise<Row[]> {
  const storage = LocalStorage.at(dir);
  const snapshot = await openTable(storage, session, { singleWriter: true }).snapshot();
  if (!snapshot) throw new Error(`[bench] no Delta table at ${dir}`);
  const k = ident(spec.key);
  const picked = `SELECT * FROM ${ident(spec.batch)} QUALIFY (row_number() OVER (ORDER BY ${k})) % (count(*) OVER () // ${spec.sample} + 1) = 0`;
  const cols = spec.columns.map(ident).join(', ');
  const rowOf = (alias: string) =>
    `row(${spec.columns.map((c) => `${alias}.${ident(c)}`).join(', ')})`;
  return withTableScan(session, scanSource(storage), snapshot, (relation) =>
    session.allJson(
      `WITH s AS (${picked}) SELECT s.${k} AS key FROM s LEFT JOIN ` +
        `(SELECT ${cols} FROM (${relation}) WHERE ${k} IN (SELECT ${k} FROM s)) AS t ON t.${k} = s.${k} ` +
        `WHERE t.${k} IS NULL OR ${rowOf('t')} IS DISTINCT FROM ${rowOf('s')}`,
    ),
  );
}
