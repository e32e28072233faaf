/**
 * Enforcing the table's rules (delta/constraints.ts: CHECK constraints, column invariants, NOT
 * NULL columns) on the rows a write stores, before any data file is written:
 *
 *   prepare   each rule as one DuckDB boolean: Spark SQL translated (../spark-sql.ts), parsed as
 *             a single expression without subqueries, bound against the batch; a rule DuckDB
 *             cannot evaluate refuses the write, naming it (UnsupportedFeatureError)
 *   check     one pass over the rows to store; the first row (by source file and row) for which
 *             a rule is not true (false or NULL) is a ConstraintViolationError naming the rule,
 *             the file, the row and the key values
 *
 * The rows checked are those the write stores: inserted rows and the new versions of updated
 * rows, from the batch; in scd2 mode also every row it writes (./scd2.ts: new versions with their
 * computed history columns, closed copies and split parts of stored versions), named by key and
 * history columns as they carry no file lineage. Rows a rewrite copies unchanged were checked when
 * they were written (Spark checks existing rows when a constraint is added), and delete rows and
 * stale rows are not stored.
 */
import {
  constraintFeature,
  describeConstraint,
  tableConstraints,
  type TableConstraint,
} from '../../delta/constraints.js';
import type { Metadata } from '../../delta/actions.js';
import type { StructType } from '../../delta/schema.js';
import { ConstraintViolationError, UnsupportedFeatureError } from '../../errors.js';
import type { DuckSession, Row } from '../duckdb.js';
import { expressionProblem } from '../expression.js';
import { sparkExpressionToDuck } from '../spark-sql.js';
import { ident, str } from '../sql.js';
import { BATCH_SOURCE_FILE, BATCH_SOURCE_ROW } from './temp-names.js';
import { describeLineage, formatValue, type Lineage } from './validate.js';

/** One rule as DuckDB SQL that is TRUE for a row that keeps it. */
export interface ConstraintCheck {
  constraint: TableConstraint;
  sql: string;
}

/** Alias of the row relation the rules are evaluated on (unlikely to shadow a column or struct). */
const ROW = '__tm_row';
/** Output column: the index of the first rule a row breaks. */
const BROKEN = '__tm_broken';

/**
 * The table's rules as checks, each validated against `relation` (the prepared batch, which has
 * every table column). [] when the table has none.
 */
export async function prepareConstraintChecks(
  session: DuckSession,
  table: {
    schema: StructType;
    metadata: Pick<Metadata, 'configuration'>;
    uri: string;
    relation: string;
  },
): Promise<ConstraintCheck[]> {
  const checks: ConstraintCheck[] = [];
  for (const constraint of tableConstraints(table.schema, table.metadata, table.uri)) {
    const sql = await ruleSql(session, constraint, table);
    checks.push({ constraint, sql });
  }
  return checks;
}

/** The rows to check: `keys` name a row (none in append mode), `shown` are columns its message adds (scd2's history columns). */
export interface CheckedRows {
  sql: string;
  keys: readonly string[];
  shown?: readonly string[];
  lineage: Lineage;
  uri: string;
}

/** Fail on the first row of `rows.sql` that breaks a rule; see the module comment. */
export async function checkConstraints(
  session: DuckSession,
  checks: readonly ConstraintCheck[],
  rows: CheckedRows,
): Promise<void> {
  if (checks.length === 0) return;
  const kept = checks.map((c) => `(${c.sql})`);
  const which = `CASE ${kept.map((k, i) => `WHEN NOT ${k} THEN ${i}`).join(' ')} END AS ${ident(BROKEN)}`;
  const lineage = [
    ...(rows.lineage.file ? [BATCH_SOURCE_FILE] : []),
    ...(rows.lineage.row ? [BATCH_SOURCE_ROW] : []),
  ].map(ident);
  const shown = (rows.shown ?? []).map(ident);
  const order = [...lineage, ...rows.keys.map(ident), ...shown];
  const bad = await session.one(
    `SELECT ${[...rows.keys.map(ident), ...shown, ...lineage, which].join(', ')} FROM (${rows.sql}) AS ${ident(ROW)} ` +
      `WHERE NOT (${kept.join(' AND ')})${order.length > 0 ? ` ORDER BY ${order.join(', ')}` : ''} LIMIT 1`,
  );
  if (!bad) return;
  throw violation(checks[Number(bad[BROKEN])]!.constraint, bad, rows);
}

/** The SQL of one rule, checked to parse and bind; a rule that does not is refused by name. */
async function ruleSql(
  session: DuckSession,
  constraint: TableConstraint,
  table: { uri: string; relation: string },
): Promise<string> {
  if (constraint.kind === 'notNull') return notNullSql(constraint.column, constraint.within);
  const refuse = (why: string) =>
    new UnsupportedFeatureError(
      constraintFeature(constraint),
      'write',
      table.uri,
      `${describeConstraint(constraint)} (${constraint.expression}) cannot be evaluated: ${why}`,
    );
  let sql: string;
  try {
    sql = sparkExpressionToDuck(constraint.expression);
  } catch (err) {
    throw refuse((err as Error).message);
  }
  const problem = await expressionProblem(session, sql);
  if (problem !== null) throw refuse(problem);
  const kept = `(${sql}) IS TRUE`;
  // Binding it against the batch (no rows read) finds unknown columns, functions and types now.
  await session
    .run(`SELECT ${kept} FROM ${ident(table.relation)} AS ${ident(ROW)} LIMIT 0`)
    .catch((err: unknown) => {
      throw refuse(firstLine(err));
    });
  return kept;
}

/**
 * The value at a column path is not NULL (a NULL parent struct makes it NULL too); with `within`,
 * neither is any element of the array or value of the map (a NULL array or map itself passes).
 */
function notNullSql(column: readonly string[], within?: 'elements' | 'values'): string {
  const [first, ...rest] = column;
  const path = rest.reduce((sql, name) => `struct_extract(${sql}, ${str(name)})`, ident(first!));
  if (within === undefined) return `${path} IS NOT NULL`;
  const list = within === 'elements' ? path : `map_values(${path})`;
  return `COALESCE(len(${list}) = list_count(${list}), TRUE)`;
}

function violation(
  constraint: TableConstraint,
  bad: Row,
  rows: CheckedRows,
): ConstraintViolationError {
  const name = describeConstraint(constraint);
  const values = (cols: readonly string[]) =>
    cols.map((k) => `${k}=${formatValue(bad[k])}`).join(', ');
  const keyText = values(rows.keys);
  const shownText = values(rows.shown ?? []);
  const lineage = describeLineage(bad, rows.lineage);
  const where = {
    text: lineage.text + (shownText === '' ? '' : ` (${shownText})`),
    context: { ...lineage.context, ...(shownText === '' ? {} : { values: shownText }) },
  };
  const expression = constraint.kind === 'notNull' ? '' : ` (${constraint.expression})`;
  const rowText = keyText === '' ? 'a row' : `the row with key (${keyText})`;
  return new ConstraintViolationError(
    `[merge] ${rowText}${where.text} violates ${name}${expression} of table ${rows.uri}`,
    name,
    {
      uri: rows.uri,
      ...where.context,
      ...(keyText === '' ? {} : { keyValue: keyText }),
      ...(constraint.kind === 'check' ? {} : { column: constraint.column.join('.') }),
      ...(constraint.kind === 'notNull' ? {} : { expression: constraint.expression }),
    },
  );
}

function firstLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? '';
}
