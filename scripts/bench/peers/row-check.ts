/**
 * The peers benchmark's row check: every peer's table holds exactly the rows of tidemark's,
 * row for row (EXCEPT ALL both ways, so duplicates count), each table read at its latest version
 * with its deletion vectors applied (tidemark's Delta reader; each peer's own row count is
 * reported beside it). Values are compared at the table's types, whatever physical types
 * (INT96, snappy, ...) the peer wrote.
 */
import type { DuckSession } from '../../../src/engine/duckdb.js';
import { withTableScan } from '../../../src/engine/scan.js';
import { LocalStorage } from '../../../src/storage/local.js';
import { openTable, scanSource } from '../../lib/tables.js';
import { withSession } from '../session.js';

/** The orders' columns at their Delta types. */
const TYPED_COLUMNS =
  'order_id::BIGINT AS order_id, customer_id::BIGINT AS customer_id, status::VARCHAR AS status, amount::DECIMAL(12, 2) AS amount, ' +
  'order_date::DATE AS order_date, updated_at::TIMESTAMPTZ AS updated_at';

/** How one table compares with the reference. */
export interface RowCheck {
  rows: number;
  /** Reference rows this table lacks, and rows it has that the reference lacks. */
  missing: number;
  extra: number;
  same: boolean;
}

/** Compare each table in `others` with `reference` (table folders). */
export async function checkRows(
  reference: string,
  others: Record<string, string>,
): Promise<Record<string, RowCheck>> {
  return withSession(async (session) => {
    await session.run(`SET preserve_insertion_order = false`);
    await materialize(session, 'ref_rows', reference);
    const out: Record<string, RowCheck> = {};
    for (const [name, dir] of Object.entries(others)) {
      await materialize(session, 'peer_rows', dir);
      const row = await session.one(
        `SELECT (SELECT count(*) FROM peer_rows)::BIGINT AS n, ` +
          `(SELECT count(*) FROM (FROM ref_rows EXCEPT ALL FROM peer_rows))::BIGINT AS missing, ` +
          `(SELECT count(*) FROM (FROM peer_rows EXCEPT ALL FROM ref_rows))::BIGINT AS extra`,
      );
      const missing = Number(row?.['missing']);
      const extra = Number(row?.['extra']);
      out[name] = { rows: Number(row?.['n']), missing, extra, same: missing === 0 && extra === 0 };
      await session.run(`DROP TABLE peer_rows`);
    }
    await session.run(`DROP TABLE ref_rows`);
    return out;
  });
}

async function materialize(session: DuckSession, name: string, dir: string): Promise<void> {
  const storage = LocalStorage.at(dir);
  const snapshot = await openTable(storage, session, { singleWriter: true }).snapshot();
  if (!snapshot) throw new Error(`[bench] no Delta table at ${dir}`);
  await withTableScan(session, scanSource(storage), snapshot, (relation) =>
    session.run(`CREATE TEMP TABLE ${name} AS SELECT ${TYPED_COLUMNS} FROM (${relation})`),
  );
}
