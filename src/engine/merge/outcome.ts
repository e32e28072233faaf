/**
 * What a MERGE did: row counts read from the classification tables.
 */
import type { DuckSession } from '../duckdb.js';
import { countsSql } from './plan.js';
import type { MergeCounts } from './results.js';
import type { TempTables } from './temp-names.js';

/** Row counts per action (see countsSql). */
export async function readCounts(
  session: DuckSession,
  tables: TempTables,
  sourceRows: number,
): Promise<MergeCounts> {
  const row = (await session.one(countsSql(tables))) ?? {};
  const n = (k: string) => Number(row[k] ?? 0);
  return {
    sourceRows,
    inserted: n('inserted'),
    updated: n('updated'),
    deleted: n('deleted'),
    skippedStale: n('stale'),
    skippedByTombstone: n('buried'),
    unchanged: n('unchanged'),
    deleteNotFound: n('delete_not_found'),
    rowsCopied: n('rows_copied'),
  };
}
