/**
 * Tombstones in a MERGE: the caller's relation of recently deleted keys is checked, then used to
 * bury incoming rows older than a delete (./plan.ts `buriedSql`); the batch's own deletes are
 * handed back as tombstones (`deletedKeysSql`). Keeping tombstones between batches (files,
 * retention) is the caller's business: see src/job/tombstones.ts.
 */
import { MergeInputError } from '../../errors.js';
import type { DuckSession } from '../duckdb.js';
import { describeRelation } from './batch.js';
import { TOMBSTONE_ORDER, type TempTables } from './temp-names.js';
import { buriedSql, deletedKeysSql, type MatchSpec } from './plan.js';
import type { DeletedKeys } from './results.js';

/** Fail unless the tombstone relation has every key column and TOMBSTONE_ORDER. */
export async function checkTombstones(session: DuckSession, relation: string, keys: readonly string[]): Promise<void> {
  let columns: string[];
  try {
    columns = (await describeRelation(session, relation)).map((c) => c.name.toLowerCase());
  } catch (cause) {
    throw new MergeInputError(`[merge] tombstones relation ${JSON.stringify(relation)} cannot be read`, { context: { field: 'tombstones' }, cause });
  }
  const missing = [...keys, TOMBSTONE_ORDER].find((k) => !columns.includes(k.toLowerCase()));
  if (missing !== undefined) {
    throw new MergeInputError(`[merge] tombstones relation ${JSON.stringify(relation)} has no column ${JSON.stringify(missing)}`, {
      context: { field: 'tombstones', column: missing },
    });
  }
}

/** Mark the batch rows that a tombstone buries as stale hits. */
export async function buryTombstoned(session: DuckSession, tables: TempTables, spec: MatchSpec, relation: string): Promise<void> {
  try {
    await session.run(buriedSql(tables, spec, relation));
  } catch (cause) {
    const why = (cause instanceof Error ? cause.message : String(cause)).split('\n')[0];
    throw new MergeInputError(`[merge] tombstones relation ${JSON.stringify(relation)} does not compare with the batch: ${why}`, {
      context: { field: 'tombstones' },
      cause,
    });
  }
}

/** The batch's deletes as tombstones (see `DeletedKeys`); the SQL reads the MERGE's temp tables. */
export async function batchDeletes(session: DuckSession, tables: TempTables, spec: MatchSpec): Promise<DeletedKeys> {
  const sql = deletedKeysSql(tables, spec);
  const row = await session.one(`SELECT count(*) AS n FROM (${sql})`);
  return { sql, rows: Number(row?.['n'] ?? 0), keyColumns: [...spec.keys] };
}
