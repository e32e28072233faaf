/**
 * The as-of of a snapshot extract in scd2 mode (`source.snapshotAsOf`): the time the extract was
 * taken, which its absent keys are closed at (../job/snapshot-deletes.ts). It is read, never
 * guessed: every row must carry one and the same non-NULL value, comparable with orderBy (numbers
 * with numbers, dates and times with dates and times; text read exactly as orderBy's type) and
 * fitting orderBy's type exactly (the checks of every cast: ./fit-cast.ts). Anything else, and an
 * empty extract, is a SnapshotAsOfError naming the file, row and column.
 */
import type { DataType } from '../delta/schema.js';
import type { Snapshot } from '../delta/snapshot.js';
import { SnapshotAsOfError } from '../errors.js';
import { parseDuckType } from './duck-type.js';
import type { DuckSession } from './duckdb.js';
import { SOURCE_FILE, SOURCE_ROW } from './file-select.js';
import { fitCastSql, misfitSql } from './fit-cast.js';
import { describeRelation } from './relation.js';
import { ident, str } from './sql.js';
import { isTextType } from './text-cast.js';
import { duckTypeToDelta } from './type-map-write.js';

export interface AsOfSpec {
  session: DuckSession;
  /** The extract's batch (lineage columns included). */
  batch: string;
  rows: number;
  /** The as-of column, as configured. */
  column: string;
  orderBy: string;
  /** The table (null: not created yet; orderBy's type is then the batch's). */
  snapshot: Snapshot | null;
  /** The batch's source files (as `_source_file` names them), for the messages. */
  files: readonly string[];
  /** Start of every message (`[job] orders:`). */
  prefix: string;
}

/** The extract's as-of: SQL of its value in orderBy's (physical) type, that type, and the value as text. */
export interface AsOf {
  value: string;
  type: string;
  text: string;
}

/** Check the extract's as-of and read it; see the module comment. */
export async function readAsOf(spec: AsOfSpec): Promise<AsOf> {
  const { session, files } = spec;
  const name = spec.column;
  const table = ident(spec.batch);
  const fail = (message: string, context: Record<string, unknown>): never => {
    throw new SnapshotAsOfError(
      `${spec.prefix} ${message}; nothing was committed (source.snapshotAsOf: the extract's column holding when it was taken, the time the keys it lacks are closed at)`,
      { context: { field: 'source.snapshotAsOf', column: name, ...context } },
    );
  };
  if (spec.rows === 0)
    fail(
      `the extract ${files.join(', ') || '(no file)'} has no rows: an empty extract cannot say when its keys ended, so it closes none (not even with --allow-large-delete)`,
      files[0] ? { key: files[0], files: [...files] } : {},
    );
  const columns = await describeRelation(session, spec.batch);
  const col =
    columns.find((c) => c.name.toLowerCase() === name.toLowerCase()) ??
    fail(
      `the extract has no column ${JSON.stringify(name)} (in ${files.join(', ')})`,
      files[0] ? { key: files[0] } : {},
    );
  const c = ident(col.name);
  const order = `${ident(SOURCE_FILE)}, ${ident(SOURCE_ROW)}`;
  const at = (where: string) =>
    session.one(
      `SELECT ${ident(SOURCE_FILE)} AS file, ${ident(SOURCE_ROW)} AS row, CAST(${c} AS VARCHAR) AS value FROM ${table} ` +
        `WHERE ${where} ORDER BY ${order} LIMIT 1`,
    );
  const where = (r: Record<string, unknown>) =>
    `file ${String(r['file'])}, row ${Number(r['row'])}`;
  const place = (r: Record<string, unknown>) => ({ key: String(r['file']), row: Number(r['row']) });
  const nulls = await at(`${c} IS NULL`);
  if (nulls)
    fail(
      `column ${JSON.stringify(col.name)} is NULL in ${where(nulls)}: every row of the extract must say when it was taken`,
      place(nulls),
    );
  const first = (await at('TRUE'))!;
  const other = await at(
    `${c} IS DISTINCT FROM (SELECT ${c} FROM ${table} ORDER BY ${order} LIMIT 1)`,
  );
  if (other)
    fail(
      `column ${JSON.stringify(col.name)} is ${JSON.stringify(String(other['value']))} in ${where(other)}, ` +
        `but ${JSON.stringify(String(first['value']))} in ${where(first)}: one extract is taken at one time`,
      { ...place(other), values: [String(first['value']), String(other['value'])] },
    );
  const target = orderByType(columns, spec.snapshot, spec.orderBy);
  if (!isTextType(parseDuckType(col.type)) && familyOf(col.type) !== target.family)
    fail(
      `column ${JSON.stringify(col.name)} is ${col.type}, which does not compare with orderBy ${JSON.stringify(spec.orderBy)} (${target.label})`,
      { ...place(first), type: col.type },
    );
  const misfit = misfitSql(c, col.type, target.type);
  if (misfit !== null && (await at(misfit)))
    fail(
      `value ${JSON.stringify(String(first['value']))} of column ${JSON.stringify(col.name)} (${where(first)}) ` +
        `does not convert exactly to orderBy's type ${target.label}`,
      { ...place(first), type: col.type },
    );
  const value = fitCastSql(c, col.type, target.type, col.name);
  const row = await session.one(
    `SELECT typeof(${value}) AS t, CAST(${value} AS VARCHAR) AS v FROM ${table} LIMIT 1`,
  );
  return {
    value: `(SELECT ${value} FROM ${table} LIMIT 1)`,
    type: String(row?.['t'] ?? ''),
    text: String(row?.['v'] ?? ''),
  };
}

/** True when `applied` (an as-of recorded as text) is later than `asOf`; one that no longer reads in its type is not. */
export async function asOfBefore(
  session: DuckSession,
  applied: string,
  asOf: AsOf,
): Promise<boolean> {
  const row = await session.one(
    `SELECT coalesce(TRY_CAST(${str(applied)} AS ${asOf.type}) > ${asOf.value}, false) AS older`,
  );
  return row?.['older'] === true;
}

/** orderBy's Delta type: the table's, or (no table yet) the one the batch's column will create. */
function orderByType(
  columns: readonly { name: string; type: string }[],
  snapshot: Snapshot | null,
  orderBy: string,
): { type: DataType; family: string; label: string } {
  const lower = orderBy.toLowerCase();
  const field = snapshot?.schema.fields.find((f) => f.name.toLowerCase() === lower);
  const batch = columns.find((c) => c.name.toLowerCase() === lower);
  // A batch without its orderBy is refused by name when the write is prepared.
  const type: DataType = field?.type ?? (batch ? duckTypeToDelta(batch.type, orderBy) : 'long');
  const label = typeof type === 'string' ? type : type.type;
  return { type, family: deltaFamily(label), label };
}

const NUMBERS =
  /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT|FLOAT|DOUBLE|DECIMAL.*)$/;
const TIMES = /^(DATE|TIMESTAMP.*)$/;

/** Which values compare: numbers, times, or a type of its own. */
function familyOf(duckType: string): string {
  const t = duckType.toUpperCase();
  return NUMBERS.test(t) ? 'number' : TIMES.test(t) ? 'time' : t;
}

function deltaFamily(deltaType: string): string {
  if (/^(byte|short|integer|long|float|double|decimal.*)$/.test(deltaType)) return 'number';
  if (/^(date|timestamp|timestamp_ntz)$/.test(deltaType)) return 'time';
  return deltaType === 'string' ? 'VARCHAR' : deltaType.toUpperCase();
}
