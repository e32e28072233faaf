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
  /** Loaded table (with lineage columns); it becomes `output`. */
  input: string;
  /** Name of the deduped table (replaced if it exists; may equal `input`). */
  output: string;
  keyColumns: string[];
  orderBy: string;
  /**
   * SQL of a boolean over the batch's columns, never NULL: rows where it is true rank first among
   * the rows of one key (scd2 mode: the delete flag, as a delete wins over a version at one orderBy).
   */
  rankFirst?: string;
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

/** Fail with the file and row of the first row whose key is null, naming the columns that are. */
export async function assertKeysPresent(
  session: DuckSession,
  input: string,
  keyColumns: string[],
): Promise<void> {
  const anyNull = keyColumns.map((k) => `${ident(k)} IS NULL`).join(' OR ');
  const flags = keyColumns.map((k, i) => `${ident(k)} IS NULL AS n${i}`).join(', ');
  const row = await session.one(
    `SELECT ${ident(SOURCE_FILE)} AS file, ${ident(SOURCE_ROW)}::BIGINT AS row, ${flags} FROM ${ident(input)} WHERE ${anyNull} ` +
      `ORDER BY ${ident(SOURCE_FILE)}, ${ident(SOURCE_ROW)} LIMIT 1`,
  );
  if (!row) return;
  const key = String(row['file']);
  const rowNumber = Number(row['row']);
  // Only the columns NULL in that row: a composite key (scd2's key and orderBy) has others set.
  const nulls = keyColumns.filter((_, i) => row[`n${i}`] === true);
  throw new BadFileError(
    `[load] ${key} row ${rowNumber}: key column ${nulls.map((k) => JSON.stringify(k)).join(', ')} ${nulls.length > 1 ? 'are' : 'is'} null`,
    {
      context: { key, row: rowNumber, column: nulls.join(',') },
    },
  );
}

/**
 * Fail with the file and row of the first row whose orderBy is null: in scd2 mode a version is
 * placed in history by it, and a row without one has no place.
 */
export async function assertOrderPresent(
  session: DuckSession,
  input: string,
  orderBy: string,
): Promise<void> {
  const row = await session.one(
    `SELECT ${ident(SOURCE_FILE)} AS file, ${ident(SOURCE_ROW)}::BIGINT AS row FROM ${ident(input)} WHERE ${ident(orderBy)} IS NULL ` +
      `ORDER BY ${ident(SOURCE_FILE)}, ${ident(SOURCE_ROW)} LIMIT 1`,
  );
  if (!row) return;
  const key = String(row['file']);
  const rowNumber = Number(row['row']);
  throw new BadFileError(
    `[load] ${key} row ${rowNumber}: orderBy column ${JSON.stringify(orderBy)} is null; in scd2 mode it is the version's valid_from, so every row needs one`,
    { context: { key, row: rowNumber, column: orderBy } },
  );
}

/**
 * Turn `input` into `output` with one row per key; returns its row count. The older rows are
 * deleted in place and the table renamed, so a large batch is never stored twice; only rows of
 * keys that occur more than once are ordered. `input` no longer exists afterwards.
 */
export async function dedupeLatest(session: DuckSession, opts: DedupeOptions): Promise<number> {
  await assertKeysPresent(session, opts.input, opts.keyColumns);
  const input = ident(opts.input);
  const keys = identList(opts.keyColumns);
  // Keys are never NULL here (checked above), so the USING join matches them all.
  const repeated = `SELECT ${keys} FROM ${input} GROUP BY ${keys} HAVING count(*) > 1`;
  const first = opts.rankFirst ? `(${opts.rankFirst}) DESC, ` : '';
  await session.run(
    `DELETE FROM ${input} WHERE rowid IN (SELECT r.rowid FROM ${input} AS r SEMI JOIN (${repeated}) AS d USING (${keys}) ` +
      `QUALIFY row_number() OVER (PARTITION BY ${opts.keyColumns.map((k) => `r.${ident(k)}`).join(', ')} ORDER BY ${first}${latestFirstOrder(opts.orderBy)}) > 1)`,
  );
  if (opts.output !== opts.input) {
    await session.run(
      `DROP TABLE IF EXISTS ${ident(opts.output)}; ALTER TABLE ${input} RENAME TO ${ident(opts.output)}`,
    );
  }
  const row = await session.one(`SELECT count(*)::BIGINT AS n FROM ${ident(opts.output)}`);
  return Number(row?.['n'] ?? 0);
}
