/**
 * Preparing the batch: one temp table with the table's columns cast to the table's types, the
 * `deleteWhen` flag evaluated once, and the lineage columns kept for error messages. The fast
 * path is one CREATE TABLE AS; only when it fails do we look for the column and row to blame.
 * `deleteWhen` sees table columns the batch lacks as NULL: a file without the CDC op column
 * (an AWS DMS full-load file without `Op`) holds no deletes, rather than failing the batch.
 */
import { MergeInputError } from '../../errors.js';
import type { DuckSession } from '../duckdb.js';
import { ident } from '../sql.js';
import { castError } from '../cast-error.js';
import { misfitSql } from '../fit-cast.js';
import { mappingExpr, type ColumnPlan, type ColumnType } from './columns.js';
import { DELETE_FLAG, SOURCE_FILE, SOURCE_ROW } from './names.js';
import { badDeleteWhen, checkDeleteExpression, type Lineage } from './validate.js';

/** The batch as a temp table in the table's schema. */
export interface PreparedBatch {
  /** Temp table name. */
  table: string;
  plan: ColumnPlan;
  lineage: Lineage;
  rows: number;
}

/** What to prepare. */
export interface PrepareBatchOptions {
  /** The caller's batch relation (table or view name). */
  source: string;
  /** Name of the temp table to create. */
  table: string;
  plan: ColumnPlan;
  /** Columns of the source relation. */
  sourceColumns: readonly ColumnType[];
  deleteWhen?: string;
  sourceFileColumn: string;
  sourceRowColumn?: string;
}

/** Column names and DuckDB types of a relation. */
export async function describeRelation(session: DuckSession, name: string): Promise<ColumnType[]> {
  const rows = await session.all(`DESCRIBE SELECT * FROM ${ident(name)}`);
  return rows.map((r) => ({ name: String(r['column_name']), type: String(r['column_type']) }));
}

/** Materialize the batch in the table's schema; see the module comment. */
export async function prepareBatch(session: DuckSession, opts: PrepareBatchOptions): Promise<PreparedBatch> {
  if (opts.deleteWhen !== undefined) await checkDeleteExpression(session, opts.deleteWhen);
  const lineage = lineageSources(opts);
  const select = [
    ...opts.plan.mappings.map((m) => `${mappingExpr(m, 'b')} AS ${ident(m.target)}`),
    `${flagExpr(opts.deleteWhen)} AS ${ident(DELETE_FLAG)}`,
    ...(lineage.file ? [`CAST(b.${ident(lineage.file)} AS VARCHAR) AS ${ident(SOURCE_FILE)}`] : []),
    ...(lineage.row ? [`TRY_CAST(b.${ident(lineage.row)} AS BIGINT) AS ${ident(SOURCE_ROW)}`] : []),
  ];
  try {
    await session.run(`CREATE OR REPLACE TEMP TABLE ${ident(opts.table)} AS SELECT ${select.join(', ')} FROM ${sourceSql(opts)} AS b`);
  } catch (err) {
    throw await diagnose(session, opts, lineage, err);
  }
  const count = await session.one(`SELECT count(*) AS n FROM ${ident(opts.table)}`);
  return { table: opts.table, plan: opts.plan, lineage: { file: !!lineage.file, row: !!lineage.row }, rows: Number(count?.['n'] ?? 0) };
}

/** The batch relation, plus (when there is a delete condition) a typed NULL for each table column it lacks. */
function sourceSql(opts: PrepareBatchOptions): string {
  const missing = opts.deleteWhen === undefined ? [] : opts.plan.mappings.filter((m) => m.source === null);
  if (missing.length === 0) return ident(opts.source);
  const nulls = missing.map((m) => `CAST(NULL AS ${m.duckType}) AS ${ident(m.target)}`);
  return `(SELECT *, ${nulls.join(', ')} FROM ${ident(opts.source)})`;
}

/** The flag column: the condition as BOOLEAN, NULL meaning "not deleted". */
function flagExpr(deleteWhen: string | undefined): string {
  return deleteWhen === undefined ? 'FALSE' : `COALESCE(CAST((${deleteWhen}) AS BOOLEAN), FALSE)`;
}

function lineageSources(opts: PrepareBatchOptions): { file?: string; row?: string } {
  const has = (name: string | undefined) =>
    name === undefined ? undefined : opts.sourceColumns.find((c) => c.name.toLowerCase() === name.toLowerCase())?.name;
  const file = has(opts.sourceFileColumn);
  const row = has(opts.sourceRowColumn);
  return { ...(file ? { file } : {}), ...(row ? { row } : {}) };
}

/** Find what made the CREATE fail: the delete condition, or a value that does not cast. */
async function diagnose(session: DuckSession, opts: PrepareBatchOptions, lineage: { file?: string; row?: string }, err: unknown): Promise<Error> {
  const src = ident(opts.source);
  if (opts.deleteWhen !== undefined) {
    try {
      // Aggregate the flag so the optimizer cannot drop its evaluation.
      await session.run(`SELECT bool_or(f) FROM (SELECT ${flagExpr(opts.deleteWhen)} AS f FROM ${sourceSql(opts)} AS b)`);
    } catch (flagErr) {
      return badDeleteWhen(opts.deleteWhen, firstLine(flagErr), flagErr);
    }
  }
  for (const m of opts.plan.mappings) {
    if (m.source === null || m.sourceType === null) continue;
    const col = `b.${ident(m.source)}`;
    const misfit = misfitSql(col, m.sourceType, m.deltaType);
    if (misfit === null) continue;
    const extra = [lineage.file ? `CAST(b.${ident(lineage.file)} AS VARCHAR) AS f` : 'NULL AS f', lineage.row ? `b.${ident(lineage.row)} AS r` : 'NULL AS r'];
    const bad = await session.one(`SELECT CAST(${col} AS VARCHAR) AS v, ${extra.join(', ')} FROM ${src} AS b WHERE ${misfit} LIMIT 1`).catch(() => undefined);
    if (bad) {
      return castError({ column: m.target, type: m.duckType, sourceType: m.sourceType, value: bad['v'], file: bad['f'], row: bad['r'] }, '[merge]', err);
    }
  }
  return new MergeInputError(`[merge] could not prepare the batch from ${opts.source}: ${firstLine(err)}`, { cause: err });
}

function firstLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? '';
}
