/**
 * Checks on the prepared batch before anything is read from the table: the delete condition is
 * one SQL expression, no key is NULL, no key appears twice. Each failure is a MergeInputError
 * that names the column, key value and (when the batch carries lineage) the source file.
 */
import { MergeInputError } from '../../errors.js';
import type { DuckSession, Row } from '../duckdb.js';
import { expressionProblem } from '../expression.js';
import { ident } from '../sql.js';
import { BATCH_SOURCE_FILE, BATCH_SOURCE_ROW } from './temp-names.js';

/** Which lineage columns the prepared batch carries. */
export interface Lineage {
  file: boolean;
  row: boolean;
}

/**
 * The delete condition must parse as exactly one SQL expression: it is spliced into a SELECT list,
 * so `x; DROP TABLE t` or `x) FROM y --` must not get through. Checked with DuckDB's own parser.
 */
export async function checkDeleteExpression(session: DuckSession, expr: string): Promise<void> {
  // Subqueries stay allowed: deleteWhen is the operator's own config, and some CDC feeds need them.
  const problem = await expressionProblem(session, expr, { subqueries: true });
  if (problem !== null) throw badDeleteWhen(expr, problem);
}

/** A batch row's delete flag: deleteWhen (checked by checkDeleteExpression) as a boolean, NULL false. */
export function deleteFlagSql(deleteWhen: string): string {
  return `COALESCE(CAST((${deleteWhen}) AS BOOLEAN), FALSE)`;
}

/**
 * Check deleteWhen as the write will (it parses as one expression, and evaluates on every row of
 * `table`): the same MergeInputError, for a step that reads the flag before the write does and
 * failed.
 */
export async function checkDeleteFlag(
  session: DuckSession,
  table: string,
  deleteWhen: string,
): Promise<void> {
  await checkDeleteExpression(session, deleteWhen);
  try {
    // Aggregated so the optimizer cannot drop its evaluation.
    await session.run(`SELECT bool_or(${deleteFlagSql(deleteWhen)}) FROM ${ident(table)}`);
  } catch (err) {
    const why = (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? '';
    throw badDeleteWhen(deleteWhen, why, err);
  }
}

/**
 * MergeInputError for a deleteWhen that does not parse or evaluate: the config is at fault, not
 * the data (exit 2, as `tidemark validate` reports it).
 */
export function badDeleteWhen(expr: string, why: string, cause?: unknown): MergeInputError {
  return new MergeInputError(
    `[merge] invalid deleteWhen expression ${JSON.stringify(expr)}: ${why}`,
    {
      kind: 'usage',
      context: { field: 'deleteWhen', expression: expr },
      cause,
    },
  );
}

/** Fail when a key column is NULL in some batch row. */
export async function checkNullKeys(
  session: DuckSession,
  batch: string,
  keys: readonly string[],
  lineage: Lineage,
): Promise<void> {
  const anyNull = keys.map((k) => `${ident(k)} IS NULL`).join(' OR ');
  const bad = await session.one(
    `SELECT ${lineageList(keys, lineage)} FROM ${ident(batch)} WHERE ${anyNull} LIMIT 1`,
  );
  if (!bad) return;
  const column = keys.find((k) => bad[k] === null) ?? keys[0]!;
  const where = describeLineage(bad, lineage);
  throw new MergeInputError(
    `[merge] key column ${JSON.stringify(column)} is NULL in a batch row${where.text}`,
    {
      context: { column, ...where.context },
    },
  );
}

/** Fail when two batch rows have the same key (the job dedupes before merging). */
export async function checkDuplicateKeys(
  session: DuckSession,
  batch: string,
  keys: readonly string[],
  lineage: Lineage,
): Promise<void> {
  const cols = keys.map(ident).join(', ');
  // A GROUP BY finds whether any key repeats far faster than a window over every row; only then
  // run the window that names the rows.
  const any = await session.one(
    `SELECT 1 AS hit FROM ${ident(batch)} GROUP BY ${cols} HAVING count(*) > 1 LIMIT 1`,
  );
  if (!any) return;
  const dup = await session.one(
    `SELECT ${lineageList(keys, lineage)}, count(*) OVER (PARTITION BY ${cols}) AS __tm_n ` +
      `FROM ${ident(batch)} QUALIFY __tm_n > 1 ORDER BY ${cols} LIMIT 1`,
  );
  if (!dup) return;
  const keyText = keys.map((k) => `${k}=${formatValue(dup[k])}`).join(', ');
  const where = describeLineage(dup, lineage);
  throw new MergeInputError(
    `[merge] batch has ${String(dup['__tm_n'])} rows for key (${keyText})${where.text}; dedupe the batch first`,
    {
      context: { column: keys.join(','), keyValue: keyText, ...where.context },
    },
  );
}

function lineageList(keys: readonly string[], lineage: Lineage): string {
  const cols = keys.map(ident);
  if (lineage.file) cols.push(ident(BATCH_SOURCE_FILE));
  if (lineage.row) cols.push(ident(BATCH_SOURCE_ROW));
  return cols.join(', ');
}

/** How an error names a batch row's source: ` (file f, row n)` and the context fields `key` and `row`. */
export function describeLineage(
  row: Row,
  lineage: Lineage,
): { text: string; context: { key?: string; row?: number } } {
  const file =
    lineage.file && row[BATCH_SOURCE_FILE] != null ? String(row[BATCH_SOURCE_FILE]) : undefined;
  const rowNo =
    lineage.row && row[BATCH_SOURCE_ROW] != null ? Number(row[BATCH_SOURCE_ROW]) : undefined;
  const parts: string[] = [];
  if (file !== undefined) parts.push(`file ${file}`);
  if (rowNo !== undefined) parts.push(`row ${rowNo}`);
  return {
    text: parts.length > 0 ? ` (${parts.join(', ')})` : '',
    context: {
      ...(file === undefined ? {} : { key: file }),
      ...(rowNo === undefined ? {} : { row: rowNo }),
    },
  };
}

/** A key value as error messages show it (strings quoted, NULL spelled out). */
export function formatValue(v: unknown): string {
  if (v === null || v === undefined) return 'NULL';
  if (typeof v === 'string') return JSON.stringify(v);
  if (v instanceof Date) return v.toISOString();
  if (typeof v === 'bigint') return v.toString();
  return typeof v === 'object'
    ? JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? x.toString() : x))
    : String(v);
}
