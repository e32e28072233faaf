/**
 * The SQL of a job's tombstone files (../job/tombstones/ decides which files, when and where):
 * loading the unexpired rows of live files into a temp table, writing the batch's deletes or a
 * compaction as a new Parquet file, and the view over several owners' tombstones a MERGE reads.
 * Each file holds one row per deleted key: the key and tie columns, TOMBSTONE_ORDER and DELETED_AT.
 */
import type { DuckSession } from './duckdb.js';
import { TOMBSTONE_ORDER, type DeletedKeys } from './merge/index.js';
import type { Relation } from './relation.js';
import { safeReadPath } from './safe-alias.js';
import { ident, str } from './sql.js';

/** Column of a tombstone file: when the delete was committed (TIMESTAMPTZ). */
const DELETED_AT = '__tm_deleted_at';

/** What a tombstone file written holds. */
export interface WrittenTombstones {
  rows: number;
  /** Oldest and newest DELETED_AT in the file (ISO). */
  minDeletedAt: string;
  maxDeletedAt: string;
}

let sequence = 0;

/**
 * The rows of local tombstone files deleted at or after `cutoff` (ms), as a temp table of its own
 * name (several owners' tombstones are open at once).
 */
export async function loadTombstones(
  session: DuckSession,
  paths: readonly string[],
  cutoff: number,
): Promise<Relation> {
  const name = `__tm_tombstones_${++sequence}`;
  await session.run(
    `CREATE OR REPLACE TEMP TABLE ${ident(name)} AS SELECT * FROM read_parquet([${paths.map(str).join(', ')}], union_by_name = true, hive_partitioning = false) ` +
      `WHERE ${ident(DELETED_AT)} >= ${instant(cutoff)}`,
  );
  return { name, dispose: () => session.run(`DROP TABLE IF EXISTS ${ident(name)}`) };
}

/**
 * One relation over several owners' tombstones: a temp view of them all (UNION ALL BY NAME: files
 * written without tie columns read them as NULL). Disposing it drops only the view.
 */
export async function tombstoneUnion(
  session: DuckSession,
  relations: readonly Relation[],
): Promise<Relation> {
  const name = `__tm_tombstones_all_${++sequence}`;
  const union = relations.map((r) => `SELECT * FROM ${ident(r.name)}`).join(' UNION ALL BY NAME ');
  await session.run(`CREATE OR REPLACE TEMP VIEW ${ident(name)} AS ${union}`);
  return { name, dispose: () => session.run(`DROP VIEW IF EXISTS ${ident(name)}`) };
}

/** Write the batch's deletes (key, tie columns, order) with DELETED_AT = `now` (ms) as the Parquet file `local`. */
export async function writeBatchTombstones(
  session: DuckSession,
  local: string,
  deletes: DeletedKeys,
  now: number,
): Promise<WrittenTombstones> {
  return write(session, local, stampedSql(deletes, now));
}

/**
 * Write every tombstone of `held` plus the batch's (when `adding`) as the Parquet file `local`, one
 * row per key: the latest delete (by order, then the tie columns, NULL the oldest), with the latest
 * time. The batch's part is always there, if empty, so tombstones written without tie columns
 * read them as NULL.
 */
export async function writeCompactedTombstones(
  session: DuckSession,
  local: string,
  opts: { deletes: DeletedKeys; now: number; adding: boolean; held: Relation | undefined },
): Promise<WrittenTombstones> {
  const { deletes } = opts;
  const keys = deletes.keyColumns.map(ident).join(', ');
  const batch = `SELECT * FROM (${stampedSql(deletes, opts.now)}) WHERE ${opts.adding ? 'TRUE' : 'FALSE'}`;
  const union = opts.held
    ? `SELECT * FROM ${ident(opts.held.name)} UNION ALL BY NAME ${batch}`
    : batch;
  const latest = [TOMBSTONE_ORDER, ...deletes.tieColumns]
    .map((c) => `${ident(c)} DESC NULLS LAST`)
    .join(', ');
  const cols = [...deletes.keyColumns, ...deletes.tieColumns, TOMBSTONE_ORDER]
    .map(ident)
    .join(', ');
  return write(
    session,
    local,
    `SELECT ${cols}, max(${ident(DELETED_AT)}) OVER (PARTITION BY ${keys}) AS ${ident(DELETED_AT)} FROM (${union}) ` +
      `QUALIFY row_number() OVER (PARTITION BY ${keys} ORDER BY ${latest}) = 1 ORDER BY ${keys}`,
  );
}

/** The batch's deletes with DELETED_AT = `now`. */
function stampedSql(deletes: DeletedKeys, now: number): string {
  const cols = [...deletes.keyColumns, ...deletes.tieColumns, TOMBSTONE_ORDER]
    .map(ident)
    .join(', ');
  return `SELECT ${cols}, ${instant(now)} AS ${ident(DELETED_AT)} FROM ${ident(deletes.relation.name)}`;
}

/** Write `sql`'s rows as the Parquet file `local`; what it holds. */
async function write(session: DuckSession, local: string, sql: string): Promise<WrittenTombstones> {
  await session.run(`COPY (${sql}) TO ${str(local)} (FORMAT parquet)`);
  const stats = await session.one(
    `SELECT count(*) AS n, min(${ident(DELETED_AT)}) AS lo, max(${ident(DELETED_AT)}) AS hi FROM read_parquet(${str(safeReadPath(local))})`,
  );
  const iso = (v: unknown) => new Date(v instanceof Date ? v.getTime() : String(v)).toISOString();
  return {
    rows: Number(stats?.['n'] ?? 0),
    minDeletedAt: iso(stats?.['lo']),
    maxDeletedAt: iso(stats?.['hi']),
  };
}

/** A TIMESTAMPTZ literal of an instant (ms). */
function instant(ms: number): string {
  return `${str(new Date(ms).toISOString())}::TIMESTAMPTZ`;
}
