/**
 * The MERGE as SQL text (pure: no DuckDB here, so the rules are readable and testable).
 *
 *   batch B (prepared, one row per key)      candidate files (after partition + stats pruning)
 *        │                                         │ key + orderBy columns only
 *        └──────────── hits: B ⋈ keys ─────────────┘  → stale | delete | upsert per stored row
 *                           │ files with a non-stale hit
 *                     target T: their full rows
 *                           │ T ⋈ B → stale | delete | unchanged | update per stored row
 *        rewritten files = files with an update or delete
 *        rewrite  = T rows of rewritten files, minus updated/deleted rows, plus the updated B rows
 *        inserts  = B rows with no hit and no delete flag
 *
 * Matching: key columns equal, plus partition columns equal unless matching across partitions.
 * Ordering: an incoming row wins when it is not older (incoming >= stored); NULL is the oldest.
 *
 * Tombstones (keys deleted by earlier batches, with the delete's orderBy value) act as stored rows
 * that are deleted: an incoming non-delete row whose key has no stored row is stale when a
 * tombstone of its key is not older than it (the delete wins ties), and is added to the hits as
 * 'stale' with no file, so it is neither inserted nor read. A stored row, when there is one,
 * decides alone (a key may be deleted and later re-inserted).
 */
import { ident } from '../sql.js';
import { ACTION, BATCH_ROW, DELETE_FLAG, FILE_ID, TARGET_ROW, TOMBSTONE_ORDER, type TempTables } from './temp-names.js';

/** What a batch row is matched on and ordered by (table column names). */
export interface MatchSpec {
  keys: string[];
  /** Partition columns that are part of the match (empty when unpartitioned or matching across partitions). */
  partitions: string[];
  orderBy: string;
}

/**
 * Partition columns whose values decide which files can match: those in the match, plus
 * partition columns that are key columns (a key is never NULL, so its value pins the partition).
 */
export function pruningPartitions(spec: MatchSpec, partitionColumns: readonly string[]): string[] {
  return partitionColumns.filter((p) => spec.partitions.includes(p) || spec.keys.includes(p));
}

/** The join condition between stored rows (alias `t`) and batch rows (alias `b`). */
export function matchCondition(spec: MatchSpec, t: string, b: string): string {
  const keys = spec.keys.map((k) => `${t}.${ident(k)} = ${b}.${ident(k)}`);
  // Partition values may be NULL (a null partition), and NULL partitions match each other.
  const parts = spec.partitions.filter((p) => !spec.keys.includes(p)).map((p) => `${t}.${ident(p)} IS NOT DISTINCT FROM ${b}.${ident(p)}`);
  return [...keys, ...parts].join(' AND ');
}

/**
 * True when the incoming value is not older than the stored one. NULL is the oldest value:
 * non-NULL beats NULL, NULL never beats non-NULL, NULL vs NULL counts as equal (incoming wins).
 */
export function notOlder(incoming: string, stored: string): string {
  return `COALESCE(${incoming} >= ${stored}, ${incoming} IS NOT NULL OR ${stored} IS NULL)`;
}

/** True when the incoming value is strictly newer than the stored one (NULL is the oldest value). */
export function newer(incoming: string, stored: string): string {
  return `COALESCE(${incoming} > ${stored}, ${incoming} IS NOT NULL AND ${stored} IS NULL)`;
}

/** True when two rows agree in every listed column (NULLs equal). */
export function sameRow(columns: readonly string[], a: string, b: string): string {
  if (columns.length === 0) return 'TRUE';
  return columns.map((c) => `${a}.${ident(c)} IS NOT DISTINCT FROM ${b}.${ident(c)}`).join(' AND ');
}

/**
 * The hits table: one row per stored row (from the key-column scan `keyScanSql`, which yields
 * FILE_ID, the match columns and orderBy) whose key is in the batch, with its action.
 */
export function hitsSql(tables: TempTables, spec: MatchSpec, keyScanSql: string): string {
  const order = ident(spec.orderBy);
  return (
    `CREATE OR REPLACE TEMP TABLE ${ident(tables.hits)} AS ` +
    `SELECT s.${ident(FILE_ID)}, b.${ident(BATCH_ROW)} AS ${ident(BATCH_ROW)}, ` +
    `CASE WHEN NOT ${notOlder(`b.${order}`, `s.${order}`)} THEN 'stale' WHEN b.${ident(DELETE_FLAG)} THEN 'delete' ELSE 'upsert' END AS ${ident(ACTION)} ` +
    `FROM (${keyScanSql}) AS s JOIN ${ident(tables.batch)} AS b ON ${matchCondition(spec, 's', 'b')}`
  );
}

/** Ids of the files that need a full read: those with a non-stale hit. */
export function filesToReadSql(tables: TempTables): string {
  return `SELECT DISTINCT ${ident(FILE_ID)} AS id FROM ${ident(tables.hits)} WHERE ${ident(ACTION)} <> 'stale' ORDER BY id`;
}

/** The target table: full rows (table columns plus FILE_ID) of the files to rewrite, from `fullScanSql`. */
export function targetSql(tables: TempTables, fullScanSql: string): string {
  return `CREATE OR REPLACE TEMP TABLE ${ident(tables.target)} AS ${fullScanSql}`;
}

/** The actions table: every stored row of the target that matches a batch row, and what happens to it. */
export function actionsSql(tables: TempTables, spec: MatchSpec, columns: readonly string[]): string {
  const order = ident(spec.orderBy);
  return (
    `CREATE OR REPLACE TEMP TABLE ${ident(tables.actions)} AS ` +
    `SELECT t.rowid AS ${ident(TARGET_ROW)}, t.${ident(FILE_ID)}, b.${ident(BATCH_ROW)} AS ${ident(BATCH_ROW)}, ` +
    `CASE WHEN NOT ${notOlder(`b.${order}`, `t.${order}`)} THEN 'stale' ` +
    `WHEN b.${ident(DELETE_FLAG)} THEN 'delete' ` +
    `WHEN ${sameRow(columns, 't', 'b')} THEN 'unchanged' ELSE 'update' END AS ${ident(ACTION)} ` +
    `FROM ${ident(tables.target)} AS t JOIN ${ident(tables.batch)} AS b ON ${matchCondition(spec, 't', 'b')}`
  );
}

/** Ids of the files that must be rewritten: those with an updated or deleted row. */
export function filesToRewriteSql(tables: TempTables): string {
  return `SELECT DISTINCT ${ident(FILE_ID)} AS id FROM ${ident(tables.actions)} WHERE ${ident(ACTION)} IN ('update', 'delete') ORDER BY id`;
}

/**
 * The rows replacing the rewritten files: their stored rows minus the updated and deleted ones,
 * plus the incoming versions of the updated ones, in key order (clustered tables stay clustered).
 */
export function rewriteRelationSql(tables: TempTables, columns: readonly string[], keys: readonly string[]): string {
  const cols = (alias: string) => columns.map((c) => `${alias}.${ident(c)}`).join(', ');
  const a = ident(tables.actions);
  const changed = `SELECT ${ident(TARGET_ROW)} FROM ${a} WHERE ${ident(ACTION)} IN ('update', 'delete')`;
  const rewritten = `SELECT ${ident(FILE_ID)} FROM ${a} WHERE ${ident(ACTION)} IN ('update', 'delete')`;
  const kept =
    `SELECT ${cols('t')} FROM ${ident(tables.target)} AS t ` +
    `WHERE t.${ident(FILE_ID)} IN (${rewritten}) AND t.rowid NOT IN (${changed})`;
  const updated =
    `SELECT ${cols('b')} FROM ${a} AS x JOIN ${ident(tables.batch)} AS b ON b.${ident(BATCH_ROW)} = x.${ident(BATCH_ROW)} ` +
    `WHERE x.${ident(ACTION)} = 'update'`;
  return `SELECT * FROM (${kept} UNION ALL ${updated}) ORDER BY ${keys.map(ident).join(', ')}`;
}

/** Batch rows to insert: no stored row matched them (in any candidate file) and they are not deletes. */
export function insertRelationSql(tables: TempTables, columns: readonly string[], keys: readonly string[]): string {
  const cols = columns.map((c) => `b.${ident(c)}`).join(', ');
  return (
    `SELECT ${cols} FROM ${ident(tables.batch)} AS b ` +
    `WHERE NOT b.${ident(DELETE_FLAG)} AND b.${ident(BATCH_ROW)} NOT IN (SELECT ${ident(BATCH_ROW)} FROM ${ident(tables.hits)}) ` +
    `ORDER BY ${keys.map((k) => `b.${ident(k)}`).join(', ')}`
  );
}

/** One row of counts: rows per action, inserts, no-op deletes and copied rows. */
export function countsSql(tables: TempTables, haveTarget: boolean): string {
  const h = ident(tables.hits);
  const b = ident(tables.batch);
  const act = ident(ACTION);
  const fromActions = (what: string) => (haveTarget ? `(SELECT count(*) FROM ${ident(tables.actions)} WHERE ${act} = '${what}')` : '0');
  const copied = haveTarget
    ? `(SELECT count(*) FROM ${ident(tables.target)} WHERE ${ident(FILE_ID)} IN ` +
      `(SELECT ${ident(FILE_ID)} FROM ${ident(tables.actions)} WHERE ${act} IN ('update', 'delete')))`
    : '0';
  const unmatched = `b.${ident(BATCH_ROW)} NOT IN (SELECT ${ident(BATCH_ROW)} FROM ${h})`;
  return (
    `SELECT (SELECT count(*) FROM ${h} WHERE ${act} = 'stale') AS stale, ` +
    `(SELECT count(*) FROM ${h} WHERE ${act} = 'stale' AND ${ident(FILE_ID)} IS NULL) AS buried, ` +
    `${fromActions('update')} AS updated, ${fromActions('delete')} AS deleted, ${fromActions('unchanged')} AS unchanged, ` +
    `(SELECT count(*) FROM ${b} AS b WHERE NOT b.${ident(DELETE_FLAG)} AND ${unmatched}) AS inserted, ` +
    `(SELECT count(*) FROM ${b} AS b WHERE b.${ident(DELETE_FLAG)} AND ${unmatched}) AS delete_not_found, ` +
    `${copied} AS rows_in_rewritten`
  );
}

/** An empty hits table, for a write that matches nothing (the table is being created). */
export function emptyHitsSql(tables: TempTables): string {
  return `CREATE OR REPLACE TEMP TABLE ${ident(tables.hits)} (${ident(FILE_ID)} INTEGER, ${ident(BATCH_ROW)} BIGINT, ${ident(ACTION)} VARCHAR)`;
}

/**
 * Add to the hits, as 'stale' with no file, the batch rows buried by a tombstone (see the module
 * comment): not flagged for delete, no stored row matched, and a tombstone of the same key whose
 * order is not older than the row's. Tombstones match on the key columns alone.
 */
export function buriedSql(tables: TempTables, spec: MatchSpec, tombstones: string): string {
  const order = ident(spec.orderBy);
  const keys = spec.keys.map((k) => `z.${ident(k)} = b.${ident(k)}`).join(' AND ');
  return (
    `INSERT INTO ${ident(tables.hits)} (${ident(FILE_ID)}, ${ident(BATCH_ROW)}, ${ident(ACTION)}) ` +
    `SELECT NULL, b.${ident(BATCH_ROW)}, 'stale' FROM ${ident(tables.batch)} AS b ` +
    `WHERE NOT b.${ident(DELETE_FLAG)} AND b.${ident(BATCH_ROW)} NOT IN (SELECT ${ident(BATCH_ROW)} FROM ${ident(tables.hits)}) ` +
    `AND EXISTS (SELECT 1 FROM ${ident(tombstones)} AS z WHERE ${keys} AND NOT ${newer(`b.${order}`, `z.${ident(TOMBSTONE_ORDER)}`)})`
  );
}

/**
 * The keys this batch deletes, as tombstones: key columns and TOMBSTONE_ORDER of every delete row
 * that is not stale against a stored row. That includes deletes of keys not in the table: a CDC
 * delete may arrive before the insert it follows.
 */
export function deletedKeysSql(tables: TempTables, spec: MatchSpec): string {
  const cols = spec.keys.map((k) => `b.${ident(k)}`).join(', ');
  return (
    `SELECT ${cols}, b.${ident(spec.orderBy)} AS ${ident(TOMBSTONE_ORDER)} FROM ${ident(tables.batch)} AS b ` +
    `WHERE b.${ident(DELETE_FLAG)} AND b.${ident(BATCH_ROW)} NOT IN ` +
    `(SELECT ${ident(BATCH_ROW)} FROM ${ident(tables.hits)} WHERE ${ident(ACTION)} = 'stale')`
  );
}
