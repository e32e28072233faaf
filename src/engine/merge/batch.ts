/**
 * Preparing the batch: the table's columns cast to the table's types, the `deleteWhen` flag, the
 * lineage columns kept for error messages, and BATCH_ROW (the source row's id) naming each row.
 * Materialized, it is one CREATE TABLE AS; lazy (a MERGE that creates the table reads the batch
 * once more, to write it), it is a view checked by one aggregate pass that evaluates every cast
 * and the flag, so no copy is made. Only when that fails do we look for the column and row to blame.
 * `deleteWhen` sees table columns the batch lacks as NULL: a file without the CDC op column
 * (an AWS DMS full-load file without `Op`) holds no deletes, rather than failing the batch.
 */
import { MergeInputError } from '../../errors.js';
import type { DuckSession } from '../duckdb.js';
import { ident } from '../sql.js';
import { castError } from '../cast-error.js';
import { misfitSql } from '../fit-cast.js';
import { mappingExpr, type ColumnPlan, type ColumnType } from './columns.js';
import { BATCH_ROW, DELETE_FLAG, BATCH_SOURCE_FILE, BATCH_SOURCE_ROW } from './temp-names.js';
import { badDeleteWhen, checkDeleteExpression, deleteFlagSql, type Lineage } from './validate.js';

/** The batch in the table's schema, as a temp table or a temp view. */
export interface PreparedBatch {
  /** Temp table (or view) name. */
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
  /** A view over the source instead of a copy (when the batch is read only a few times). */
  lazy?: boolean;
}

/** Prepare the batch as a table or a checked view; see the module comment. */
export async function prepareBatch(
  session: DuckSession,
  opts: PrepareBatchOptions,
): Promise<PreparedBatch> {
  if (opts.deleteWhen !== undefined) await checkDeleteExpression(session, opts.deleteWhen);
  const lineage = lineageSources(opts);
  const hasRowid = await sourceHasRowid(session, opts.source);
  const lazy = opts.lazy === true && hasRowid;
  const select = [
    ...opts.plan.mappings.map((m) => `${mappingExpr(m, 'b')} AS ${ident(m.target)}`),
    `${flagExpr(opts.deleteWhen)} AS ${ident(DELETE_FLAG)}`,
    ...(lineage.file
      ? [`CAST(b.${ident(lineage.file)} AS VARCHAR) AS ${ident(BATCH_SOURCE_FILE)}`]
      : []),
    ...(lineage.row
      ? [`TRY_CAST(b.${ident(lineage.row)} AS BIGINT) AS ${ident(BATCH_SOURCE_ROW)}`]
      : []),
    // The source's rowid is free; a source without one (a view) is numbered once, in the copy.
    `${hasRowid ? `b.${ident(SOURCE_ROWID)}` : 'row_number() OVER ()'} AS ${ident(BATCH_ROW)}`,
  ];
  const body = `SELECT ${select.join(', ')} FROM ${sourceSql(opts, hasRowid)} AS b`;
  let rows: number;
  try {
    if (lazy) {
      await session.run(`CREATE OR REPLACE TEMP VIEW ${ident(opts.table)} AS ${body}`);
      rows = await checkedCount(session, opts.table, opts.plan);
    } else {
      // CREATE TABLE AS answers with the rows it stored: no count(*) after it.
      const created = await session.one(
        `CREATE OR REPLACE TEMP TABLE ${ident(opts.table)} AS ${body}`,
      );
      rows = Number(
        created?.['Count'] ??
          (await session.one(`SELECT count(*) AS n FROM ${ident(opts.table)}`))?.['n'] ??
          0,
      );
    }
  } catch (err) {
    throw await diagnose(session, opts, lineage, err);
  }
  return {
    table: opts.table,
    plan: opts.plan,
    lineage: { file: !!lineage.file, row: !!lineage.row },
    rows,
  };
}

/** The source's rowid, renamed in `sourceSql` so a subquery keeps it. */
const SOURCE_ROWID = '__tm_source_rowid';

/** True when the source relation has a rowid (tables do; views do not). */
async function sourceHasRowid(session: DuckSession, source: string): Promise<boolean> {
  return session.run(`SELECT rowid FROM ${ident(source)} LIMIT 0`).then(
    () => true,
    () => false,
  );
}

/**
 * Row count of the view, evaluating every converted column (each cast raises on a misfit, see
 * ../fit-cast.ts) and the flag; `count(col)` keeps the optimizer from dropping them.
 */
async function checkedCount(session: DuckSession, view: string, plan: ColumnPlan): Promise<number> {
  // A column taken as it is cannot fail; reading it would only cost a scan.
  const converted = plan.mappings.filter(
    (m) => m.source !== null && mappingExpr(m, 'b') !== `b.${ident(m.source)}`,
  );
  const forced = [
    ...converted.map((m) => `count(${ident(m.target)})`),
    `bool_or(${ident(DELETE_FLAG)})`,
  ];
  const row = await session.one(`SELECT count(*) AS n, ${forced.join(', ')} FROM ${ident(view)}`);
  return Number(row?.['n'] ?? 0);
}

/**
 * The batch relation, plus (when there is a delete condition) a typed NULL for each table column
 * it lacks, and its rowid as SOURCE_ROWID when it has one.
 */
function sourceSql(opts: PrepareBatchOptions, withRowid = false): string {
  const missing =
    opts.deleteWhen === undefined ? [] : opts.plan.mappings.filter((m) => m.source === null);
  if (missing.length === 0 && !withRowid) return ident(opts.source);
  const extra = [
    ...(withRowid ? [`rowid AS ${ident(SOURCE_ROWID)}`] : []),
    ...missing.map((m) => `CAST(NULL AS ${m.duckType}) AS ${ident(m.target)}`),
  ];
  return `(SELECT *, ${extra.join(', ')} FROM ${ident(opts.source)})`;
}

/** The flag column: the condition as BOOLEAN, NULL meaning "not deleted". */
function flagExpr(deleteWhen: string | undefined): string {
  return deleteWhen === undefined ? 'FALSE' : deleteFlagSql(deleteWhen);
}

function lineageSources(opts: PrepareBatchOptions): { file?: string; row?: string } {
  const has = (name: string | undefined) =>
    name === undefined
      ? undefined
      : opts.sourceColumns.find((c) => c.name.toLowerCase() === name.toLowerCase())?.name;
  const file = has(opts.sourceFileColumn);
  const row = has(opts.sourceRowColumn);
  return { ...(file ? { file } : {}), ...(row ? { row } : {}) };
}

/** Find what made the CREATE fail: the delete condition, or a value that does not cast. */
async function diagnose(
  session: DuckSession,
  opts: PrepareBatchOptions,
  lineage: { file?: string; row?: string },
  err: unknown,
): Promise<Error> {
  const src = ident(opts.source);
  if (opts.deleteWhen !== undefined) {
    try {
      // Aggregate the flag so the optimizer cannot drop its evaluation.
      await session.run(
        `SELECT bool_or(f) FROM (SELECT ${flagExpr(opts.deleteWhen)} AS f FROM ${sourceSql(opts)} AS b)`,
      );
    } catch (flagErr) {
      return badDeleteWhen(opts.deleteWhen, firstLine(flagErr), flagErr);
    }
  }
  for (const m of opts.plan.mappings) {
    if (m.source === null || m.sourceType === null) continue;
    const col = `b.${ident(m.source)}`;
    const misfit = misfitSql(col, m.sourceType, m.deltaType);
    if (misfit === null) continue;
    const extra = [
      lineage.file ? `CAST(b.${ident(lineage.file)} AS VARCHAR) AS f` : 'NULL AS f',
      lineage.row ? `b.${ident(lineage.row)} AS r` : 'NULL AS r',
    ];
    const bad = await session
      .one(
        `SELECT CAST(${col} AS VARCHAR) AS v, ${extra.join(', ')} FROM ${src} AS b WHERE ${misfit} LIMIT 1`,
      )
      .catch(() => undefined);
    if (bad) {
      return castError(
        {
          column: m.target,
          type: m.duckType,
          sourceType: m.sourceType,
          value: bad['v'],
          file: bad['f'],
          row: bad['r'],
        },
        '[merge]',
        err,
      );
    }
  }
  return new MergeInputError(
    `[merge] could not prepare the batch from ${opts.source}: ${firstLine(err)}`,
    { cause: err },
  );
}

function firstLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? '';
}
