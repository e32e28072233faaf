/**
 * The MERGE benchmark's data: an `orders` table whose rows are a pure function of `order_id`
 * (so a change batch can rebuild any stored row), the base table written through tidemark's
 * own create path, and the change batches (updates with a newer `updated_at`, plus inserts).
 */
import type { DuckSession } from '../../src/engine/duckdb.js';
import { mergeAndCommit, openTable, type CommittedMerge } from '../lib/tables.js';
import { LocalStorage } from '../../src/storage/local.js';
import { ident } from '../../src/engine/sql.js';

/** The table's columns, in order. */
export const ORDER_COLUMNS = [
  'order_id',
  'customer_id',
  'status',
  'amount',
  'order_date',
  'updated_at',
] as const;
export const ORDER_KEY = 'order_id';
export const ORDER_VERSION = 'updated_at';

/** Orders span five years; `order_date` grows with `order_id` (the table is clustered by both). */
const DAYS = 1826;

/**
 * SELECT list of one order row from the BIGINT expression `id` (1..rows). Stored rows use
 * `change = false`; changed rows keep the order's identity and get a new status, amount and a
 * later `updated_at`.
 */
export function orderRowSql(id: string, rows: number, change = false): string {
  const spread = `(${id} * ${DAYS} // ${rows})`;
  const status = change
    ? `'refunded'`
    : `(['new', 'paid', 'shipped', 'delivered', 'cancelled'])[(hash(${id} * 7) % 5 + 1)::INTEGER]`;
  const amount = `((hash(${id} * 13) % 100000)::DECIMAL(12, 2) / 100${change ? ' + 1' : ''})::DECIMAL(12, 2)`;
  const updated = change
    ? `TIMESTAMPTZ '2026-07-01 00:00:00+00' + to_seconds((hash(${id}) % 86400)::BIGINT)`
    : `TIMESTAMPTZ '2021-01-01 00:00:00+00' + to_seconds(${spread} * 86400 + (hash(${id}) % 36000)::BIGINT)`;
  return [
    `${id}::BIGINT AS order_id`,
    `(hash(${id}) % 500000 + 1)::BIGINT AS customer_id`,
    `${status} AS status`,
    `${amount} AS amount`,
    `(DATE '2021-01-01' + ${spread}::INTEGER) AS order_date`,
    `${updated} AS updated_at`,
  ].join(', ');
}

/**
 * Build the base table (`rows` orders in ~`files` files clustered by order_id) at `dir`,
 * partitioned by `partitionBy` (each partition's files written apart, so a daily partitioning
 * gives at least one file per day).
 */
export async function createOrdersTable(
  session: DuckSession,
  dir: string,
  rows: number,
  files: number,
  partitionBy: readonly string[] = [],
): Promise<CommittedMerge> {
  const seed = 'bench_orders_seed';
  await session.run(
    `CREATE OR REPLACE TEMP TABLE ${ident(seed)} AS SELECT ${orderRowSql('i', rows)} FROM range(1, ${rows + 1}) AS r(i)`,
  );
  try {
    const table = openTable(LocalStorage.at(dir), session, { singleWriter: true });
    return await mergeAndCommit(table, session, {
      snapshot: null,
      batch: seed,
      keyColumns: [ORDER_KEY],
      orderBy: ORDER_VERSION,
      targetFileRows: Math.ceil(rows / files),
      ...(partitionBy.length > 0 ? { partitionBy: [...partitionBy] } : {}),
    });
  } finally {
    await session.run(`DROP TABLE IF EXISTS ${ident(seed)}`);
  }
}

/** Which stored orders a change batch updates. */
export type ChangeSpread = 'newest' | 'scattered';

/** Shape of a change batch. */
export interface ChangeSpec {
  /** Rows in the base table (ids 1..rows). */
  rows: number;
  updates: number;
  inserts: number;
  /** newest: updates among the top 1% of ids; scattered: over all ids. */
  spread: ChangeSpread;
}

/**
 * Create the temp table `name` with the change batch: `updates` distinct existing ids (a
 * repeatable sample) with changed values, plus `inserts` new ids above the table's range.
 */
export async function createChangeBatch(
  session: DuckSession,
  name: string,
  spec: ChangeSpec,
): Promise<void> {
  const low = spec.spread === 'newest' ? spec.rows - Math.floor(spec.rows / 100) + 1 : 1;
  const sample = `SELECT i FROM range(${low}, ${spec.rows + 1}) AS r(i) USING SAMPLE reservoir(${spec.updates} ROWS) REPEATABLE (42)`;
  const fresh = `SELECT i FROM range(${spec.rows + 1}, ${spec.rows + spec.inserts + 1}) AS r(i)`;
  await session.run(
    `CREATE OR REPLACE TEMP TABLE ${ident(name)} AS ` +
      `SELECT ${orderRowSql('i', spec.rows, true)} FROM (${sample} UNION ALL ${fresh}) ORDER BY order_id`,
  );
}
