/**
 * Read-only queries of a table's snapshot that commands ask: the rows `tidemark show` prints, and
 * the keys a changed MERGE key would find more than once (../job/config-change.ts). Column names
 * are quoted here; a `where` must already have passed `expressionProblem` (./expression.ts).
 */
import type { Snapshot } from '../delta/snapshot.js';
import type { Spool } from '../spool/spool.js';
import type { Storage } from '../storage/storage.js';
import type { DuckSession, Row } from './duckdb.js';
import { withTableScan } from './scan.js';
import { ident, identList } from './sql.js';

/** Where the snapshot's files are read from: the table's storage, and scratch space for downloads. */
export interface TableSource {
  storage: Storage;
  spool: Spool;
}

/** Which rows of `tableRows`. */
export interface RowsQuery {
  columns: readonly string[];
  /** A checked SQL expression over the table's columns. */
  where?: string;
  orderBy: readonly string[];
  limit: number;
}

/** Rows of the snapshot (`snapshot.files` only), JSON-safe: BIGINT and DECIMAL as text, timestamps as ISO text. */
export async function tableRows(
  session: DuckSession,
  source: TableSource,
  snapshot: Snapshot,
  query: RowsQuery,
): Promise<Row[]> {
  const sql = (relation: string) =>
    `SELECT ${identList(query.columns)} FROM (${relation}) AS ${ident('t')}` +
    (query.where !== undefined ? ` WHERE (${query.where})` : '') +
    (query.orderBy.length > 0 ? ` ORDER BY ${identList(query.orderBy)}` : '') +
    ` LIMIT ${query.limit}`;
  return withTableScan(session, source, snapshot, (relation) => session.allJson(sql(relation)));
}

/** Keys the table holds more than one row of (`examples`: the most rows first), and how many such keys. */
export interface DuplicateKeys {
  examples: Array<{ key: Record<string, unknown>; rows: number }>;
  keys: number;
}

/** The snapshot's keys with more than one row under `key`, at most `examples` of them; null when every key has one row. */
export async function duplicateKeys(
  session: DuckSession,
  source: TableSource,
  snapshot: Snapshot,
  key: readonly string[],
  examples: number,
): Promise<DuplicateKeys | null> {
  if (snapshot.files.length === 0) return null;
  const cols = key.map(ident).join(', ');
  // JSON-safe values (a BIGINT key as its text): the examples go into an error's context, which --json prints.
  const rows = await withTableScan(session, source, snapshot, (relation) =>
    session.allJson(
      `WITH d AS (SELECT ${cols}, count(*) AS __n FROM (${relation}) GROUP BY ALL HAVING count(*) > 1) ` +
        `SELECT *, (SELECT count(*) FROM d) AS __keys FROM d ORDER BY __n DESC, ${cols} LIMIT ${examples}`,
    ),
  );
  if (rows.length === 0) return null;
  return {
    keys: Number(rows[0]!['__keys']),
    examples: rows.map((r) => ({
      key: Object.fromEntries(key.map((c) => [c, r[c]])),
      rows: Number(r['__n']),
    })),
  };
}
