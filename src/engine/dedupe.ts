/**
 * Reduce a loaded batch to one row per key: the latest by `orderBy`, ties broken by the
 * source file's modification time, then file name, then row position, so the result never
 * depends on the order in which files were fetched.
 */
import { BadFileError } from '../errors.js';
import type { DuckSession } from './duckdb.js';
import { SOURCE_FILE, SOURCE_MODIFIED, SOURCE_ROW } from './load.js';
import { ident, identList } from './sql.js';

export interface DedupeOptions {
  /** Loaded table (with lineage columns). */
  input: string;
  /** Table to create. */
  output: string;
  keyColumns: string[];
  orderBy: string;
}

/** Deterministic "latest first" ordering of rows for one key. */
export function latestFirstOrder(orderBy: string): string {
  return [
    `${ident(orderBy)} DESC NULLS LAST`,
    `${ident(SOURCE_MODIFIED)} DESC`,
    `${ident(SOURCE_FILE)} DESC`,
    `${ident(SOURCE_ROW)} DESC`,
  ].join(', ');
}

/** Fail with the file and row of the first row whose key is null. */
export async function assertKeysPresent(session: DuckSession, input: string, keyColumns: string[]): Promise<void> {
  const anyNull = keyColumns.map((k) => `${ident(k)} IS NULL`).join(' OR ');
  const row = await session.one(
    `SELECT ${ident(SOURCE_FILE)} AS file, ${ident(SOURCE_ROW)}::BIGINT AS row FROM ${ident(input)} WHERE ${anyNull} ` +
      `ORDER BY ${ident(SOURCE_FILE)}, ${ident(SOURCE_ROW)} LIMIT 1`,
  );
  if (!row) return;
  const key = String(row['file']);
  const rowNumber = Number(row['row']);
  throw new BadFileError(`[load] ${key} row ${rowNumber}: key column ${keyColumns.map((k) => JSON.stringify(k)).join(', ')} is null`, {
    context: { key, row: rowNumber, column: keyColumns.join(',') },
  });
}

/** Create `output` with one row per key; returns its row count. */
export async function dedupeLatest(session: DuckSession, opts: DedupeOptions): Promise<number> {
  await assertKeysPresent(session, opts.input, opts.keyColumns);
  await session.run(
    `CREATE OR REPLACE TEMP TABLE ${ident(opts.output)} AS SELECT * FROM ${ident(opts.input)} ` +
      `QUALIFY row_number() OVER (PARTITION BY ${identList(opts.keyColumns)} ORDER BY ${latestFirstOrder(opts.orderBy)}) = 1`,
  );
  const row = await session.one(`SELECT count(*)::BIGINT AS n FROM ${ident(opts.output)}`);
  return Number(row?.['n'] ?? 0);
}
