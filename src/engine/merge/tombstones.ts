/**
 * Tombstones in a MERGE: the caller's relation of recently deleted keys is checked, then used to
 * bury incoming rows older than a delete (./plan.ts `buriedSql`); the batch's own deletes are
 * handed back as tombstones (`batchDeletes`: a view of `deletedKeysSql`). Keeping tombstones between batches (files,
 * retention) is the caller's business: see src/job/tombstones/.
 */
import { MergeInputError } from '../../errors.js';
import type { DuckSession } from '../duckdb.js';
import { ident } from '../sql.js';
import { describeRelation, type Relation } from '../relation.js';
import { TOMBSTONE_ORDER, type TempTables } from './temp-names.js';
import { buriedSql, deletedKeysSql, type MatchSpec } from './plan.js';
import type { DeletedKeys } from './results.js';

/** Fail unless the tombstone relation has every key column and TOMBSTONE_ORDER. */
export async function checkTombstones(
  session: DuckSession,
  relation: Relation,
  keys: readonly string[],
): Promise<void> {
  await tombstoneColumns(session, relation.name, keys);
}

/** The tombstone relation's columns (lower case); a MergeInputError unless it has every key column and TOMBSTONE_ORDER. */
async function tombstoneColumns(
  session: DuckSession,
  relation: string,
  keys: readonly string[],
): Promise<string[]> {
  let columns: string[];
  try {
    columns = (await describeRelation(session, relation)).map((c) => c.name.toLowerCase());
  } catch (cause) {
    throw new MergeInputError(
      `[merge] tombstones relation ${JSON.stringify(relation)} cannot be read`,
      { context: { field: 'tombstones' }, cause },
    );
  }
  const missing = [...keys, TOMBSTONE_ORDER].find((k) => !columns.includes(k.toLowerCase()));
  if (missing !== undefined) {
    throw new MergeInputError(
      `[merge] tombstones relation ${JSON.stringify(relation)} has no column ${JSON.stringify(missing)}`,
      {
        context: { field: 'tombstones', column: missing },
      },
    );
  }
  return columns;
}

/**
 * Mark the batch rows that a tombstone buries as stale hits. Tombstones written without the tie
 * columns (before ties were recorded) have them NULL: the oldest.
 */
export async function buryTombstoned(
  session: DuckSession,
  tables: TempTables,
  spec: MatchSpec,
  tombstones: Relation,
): Promise<void> {
  const relation = tombstones.name;
  const columns = await tombstoneColumns(session, relation, spec.keys);
  const absent = (spec.ties ?? []).filter((c) => !columns.includes(c.toLowerCase()));
  const withTies = `SELECT *${absent.map((c) => `, NULL AS ${ident(c)}`).join('')} FROM ${ident(relation)}`;
  try {
    await session.run(buriedSql(tables, spec, withTies));
  } catch (cause) {
    const why = (cause instanceof Error ? cause.message : String(cause)).split('\n')[0];
    throw new MergeInputError(
      `[merge] tombstones relation ${JSON.stringify(relation)} does not compare with the batch: ${why}`,
      {
        context: { field: 'tombstones' },
        cause,
      },
    );
  }
}

/**
 * The batch's deletes as tombstones (see `DeletedKeys`): a temp view over the MERGE's temp tables.
 * Without a delete condition no batch row is flagged (the flag is FALSE): none, and not counted.
 */
export async function batchDeletes(
  session: DuckSession,
  tables: TempTables,
  spec: MatchSpec,
  deleteWhen: string | undefined,
): Promise<DeletedKeys> {
  const name = tables.deletes;
  await session.run(
    `CREATE OR REPLACE TEMP VIEW ${ident(name)} AS ${deletedKeysSql(tables, spec)}`,
  );
  const row =
    deleteWhen === undefined
      ? undefined
      : await session.one(`SELECT count(*) AS n FROM ${ident(name)}`);
  return {
    relation: { name, dispose: () => session.run(`DROP VIEW IF EXISTS ${ident(name)}`) },
    rows: Number(row?.['n'] ?? 0),
    keyColumns: [...spec.keys],
    tieColumns: [...(spec.ties ?? [])],
  };
}
