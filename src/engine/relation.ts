/**
 * Temp relations as the layers above the engine see them. A relation the engine makes for a caller
 * crosses layers as a handle (its name, and how to drop it), never as SQL text: only the engine
 * writes SQL (the dependency rule `sql-stays-in-the-engine` holds the job and the CLI to it).
 */
import type { DuckSession } from './duckdb.js';
import type { ColumnType } from './merge/columns.js';
import { ident } from './sql.js';

/** A temp table or view the engine made: its name, and how to drop it. */
export interface Relation {
  readonly name: string;
  dispose(): Promise<void>;
}

/** Column names and DuckDB types of a relation. */
export async function describeRelation(session: DuckSession, name: string): Promise<ColumnType[]> {
  const rows = await session.all(`DESCRIBE SELECT * FROM ${ident(name)}`);
  return rows.map((r) => ({ name: String(r['column_name']), type: String(r['column_type']) }));
}

/** Drop temp tables (those that do not exist are skipped). */
export async function dropTables(session: DuckSession, names: readonly string[]): Promise<void> {
  await session.run(names.map((n) => `DROP TABLE IF EXISTS ${ident(n)}`).join('; '));
}
