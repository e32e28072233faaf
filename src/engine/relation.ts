/**
 * Temp relations as the layers above the engine see them: what columns one has, and dropping
 * them. Only the engine writes SQL.
 */
import type { DuckSession } from './duckdb.js';
import type { ColumnType } from './merge/columns.js';
import { ident } from './sql.js';

/** Column names and DuckDB types of a relation. */
export async function describeRelation(session: DuckSession, name: string): Promise<ColumnType[]> {
  const rows = await session.all(`DESCRIBE SELECT * FROM ${ident(name)}`);
  return rows.map((r) => ({ name: String(r['column_name']), type: String(r['column_type']) }));
}

/** Drop temp tables (those that do not exist are skipped). */
export async function dropTables(session: DuckSession, names: readonly string[]): Promise<void> {
  await session.run(names.map((n) => `DROP TABLE IF EXISTS ${ident(n)}`).join('; '));
}
