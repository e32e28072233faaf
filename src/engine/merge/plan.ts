/**
 * The MERGE as SQL text (pure: no DuckDB here, so the rules are readable and testable).
 *
 *   batch B (prepared, one row per key)      candidate files (after partition + stats pruning)
 *        │                                         │ key + orderBy columns and row positions only,
 *        │                                         │ rows deleted by a deletion vector left out
 *        └──────────── hits: B ⋈ keys ─────────────┘  → stale | delete | newer | tie per stored row
 *                           │ each file with a non-stale hit gets a mode (the caller decides):
 *                           │   'dv'       its changed rows are marked in a deletion vector
 *                           │   'rewrite'  it is read in full and written again without them
 *                     target T: full rows of 'rewrite' files, and the tied rows of 'dv' files
 *                           │ T ⋈ B → stale | delete | unchanged | update per stored row (actions)
 *        changes  = the actions, plus the delete/newer hits of 'dv' files (newer → update)
 *        rewrite  = T rows of changed 'rewrite' files, minus updated/deleted rows, plus the updated B rows
 *        new rows = B rows with no hit and no delete flag, plus the updated B rows of 'dv' files
 *
 * Matching: the key columns alone, wherever the stored row sits. A row whose partition value
 * changes matches its stored row in the old partition: that row is deleted there (rewrite or
 * deletion vector) and the incoming one written in its new partition; a delete row deletes its key
 * whatever partition value (or NULL) it carries.
 * Ordering: an incoming row wins when it is not older (incoming >= stored); NULL is the oldest.
 * At an equal orderBy the tie columns (`spec.ties`) decide, for updates and deletes alike: the
 * incoming row wins unless it is earlier by them, and a tied stored row is classified on its full
 * row (which holds them) like any tie.
 * An incoming row with a newer orderBy differs from the stored one in that column at least, so it
 * is an update without reading the rest of the row; only a tie needs the full compare that tells
 * an update from an unchanged row (reloads and backfills are ties).
 *
 * Row tracking (when the table preserves row ids, `spec.rowIds`): every stored row read carries its
 * stable row id (and, in the target, its stable commit version; ../row-ids.ts) through hits,
 * actions and changes, so the rows written again keep them: a copied row its id and version, an
 * updated row its id (its version becomes this commit's: NULL), an inserted row neither.
 *
 * Tombstones (keys deleted by earlier batches, with the delete's orderBy value and tie columns) act
 * as stored rows that are deleted: an incoming non-delete row whose key has no stored row is stale
 * when a tombstone of its key is not older than it (at an equal orderBy, unless the row is later by
 * the tie columns; without them the delete wins ties), and is added to the hits as
 * 'stale' with no file, so it is neither inserted nor read. A stored row, when there is one,
 * decides alone (a key may be deleted and later re-inserted).
 */
import { STABLE_ROW_ID, STABLE_ROW_VERSION } from '../row-ids.js';
import { ident } from '../sql.js';
import {
  ACTION,
  BATCH_ROW,
  DELETE_FLAG,
  FILE_ID,
  POS,
  TOMBSTONE_ORDER,
  type TempTables,
} from './temp-names.js';

/** What a batch row is matched on and ordered by (table column names). */
export interface MatchSpec {
  keys: string[];
  orderBy: string;
  /**
   * Columns that order rows of equal orderBy, compared in turn, NULL the oldest (the job's: the
   * source file's LastModified, then its key). Empty: an incoming row wins every tie with a stored
   * row, a tombstone every tie with an incoming row.
   */
  ties?: readonly string[];
  /** The stored rows' stable row ids and versions are read and written again (row tracking enabled). */
  rowIds?: boolean;
}

/** How the rows written are laid out: their order (keys, or a clustered table's clustering columns), and whether they carry row ids. */
export interface OutputLayout {
  order: readonly string[];
  rowIds: boolean;
}

/**
 * Partition columns whose values decide which files can match: the partition columns that are key
 * columns (a key is never NULL and never moves, so its value pins the partition). Other partition
 * columns prune nothing: a key's row may sit in any of their partitions.
 */
export function pruningPartitions(spec: MatchSpec, partitionColumns: readonly string[]): string[] {
  return partitionColumns.filter((p) => spec.keys.includes(p));
}

/** The join condition between stored rows (alias `t`) and batch rows (alias `b`): the key columns. */
export function matchCondition(spec: MatchSpec, t: string, b: string): string {
  return spec.keys.map((k) => `${t}.${ident(k)} = ${b}.${ident(k)}`).join(' AND ');
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

/**
 * True when row `a` comes after row `b` by `columns` compared in turn (NULL the oldest); when they
 * agree in all of them, `orEqual`.
 */
export function laterBy(
  columns: readonly string[],
  a: string,
  b: string,
  orEqual: boolean,
): string {
  return columns.reduceRight(
    (rest, c) =>
      `(${newer(`${a}.${ident(c)}`, `${b}.${ident(c)}`)} OR (${a}.${ident(c)} IS NOT DISTINCT FROM ${b}.${ident(c)} AND ${rest}))`,
    orEqual ? 'TRUE' : 'FALSE',
  );
}

/** True when two rows agree in every listed column (NULLs equal). */
export function sameRow(columns: readonly string[], a: string, b: string): string {
  if (columns.length === 0) return 'TRUE';
  return columns.map((c) => `${a}.${ident(c)} IS NOT DISTINCT FROM ${b}.${ident(c)}`).join(' AND ');
}

/** How a file with changed rows is written: its changed rows marked in a deletion vector, or the file rewritten. */
export type WriteMode = 'dv' | 'rewrite';

const act = ident(ACTION);
const fid = ident(FILE_ID);
const pos = ident(POS);
const brow = ident(BATCH_ROW);
const rid = ident(STABLE_ROW_ID);
const rver = ident(STABLE_ROW_VERSION);
const NULL_ID = 'CAST(NULL AS BIGINT)';

/** A stored row's stable id from `alias` when row ids are read, else NULL; always named STABLE_ROW_ID. */
function rowIdOf(spec: MatchSpec, alias: string): string {
  return `${spec.rowIds ? `${alias}.${rid}` : NULL_ID} AS ${rid}`;
}

/**
 * The hits table: one row per live stored row (from the key-column scan `keyScanSql`, which yields
 * FILE_ID, POS, the match columns and orderBy) whose key is in the batch, with its action.
 */
export function hitsSql(tables: TempTables, spec: MatchSpec, keyScanSql: string): string {
  const order = ident(spec.orderBy);
  const tie = `b.${order} IS NOT DISTINCT FROM s.${order}`;
  // With tie columns a tied delete is a tie too: its full row (which holds them) decides.
  const tiedDelete = (spec.ties ?? []).length > 0 ? `WHEN ${tie} THEN 'tie' ` : '';
  return (
    `CREATE OR REPLACE TEMP TABLE ${ident(tables.hits)} AS ` +
    `SELECT s.${fid}, s.${pos}, b.${brow} AS ${brow}, ${rowIdOf(spec, 's')}, ` +
    `CASE WHEN NOT ${notOlder(`b.${order}`, `s.${order}`)} THEN 'stale' ${tiedDelete}WHEN b.${ident(DELETE_FLAG)} THEN 'delete' ` +
    `WHEN ${tie} THEN 'tie' ELSE 'newer' END AS ${act} ` +
    `FROM (${keyScanSql}) AS s JOIN ${ident(tables.batch)} AS b ON ${matchCondition(spec, 's', 'b')}`
  );
}

/** Per file with a non-stale hit: how many rows it may change, and whether any is a tie. */
export function touchedFilesSql(tables: TempTables): string {
  return (
    `SELECT ${fid} AS id, count(*) AS touched, bool_or(${act} = 'tie') AS ties FROM ${ident(tables.hits)} ` +
    `WHERE ${fid} IS NOT NULL AND ${act} <> 'stale' GROUP BY ${fid} ORDER BY id`
  );
}

/** The modes table: the write mode of each touched file (decided by the caller). */
export function modesSql(tables: TempTables, modes: ReadonlyMap<number, WriteMode>): string {
  const rows = [...modes].map(([id, mode]) => `(${id}, '${mode}')`);
  const create = `CREATE OR REPLACE TEMP TABLE ${ident(tables.modes)} (${fid} INTEGER, mode VARCHAR)`;
  return rows.length === 0
    ? create
    : `${create}; INSERT INTO ${ident(tables.modes)} VALUES ${rows.join(', ')}`;
}

/**
 * The target table: full rows (table columns, FILE_ID, POS) of the 'rewrite' files
 * (`rewriteScanSql`), and of the 'dv' files' tied rows only (`tieScanSql` reads those files).
 */
export function targetSql(tables: TempTables, rewriteScanSql: string, tieScanSql: string): string {
  const ties =
    `SELECT t.* FROM (${tieScanSql}) AS t SEMI JOIN ${ident(tables.hits)} AS h ` +
    `ON h.${fid} = t.${fid} AND h.${pos} = t.${pos} AND h.${act} = 'tie'`;
  return `CREATE OR REPLACE TEMP TABLE ${ident(tables.target)} AS SELECT * FROM (${rewriteScanSql}) UNION ALL BY NAME ${ties}`;
}

/**
 * The actions table: every target row that matches a batch row, and what happens to it; `columns`
 * are those compared to tell an update from an unchanged row (the caller may leave lineage out).
 */
export function actionsSql(
  tables: TempTables,
  spec: MatchSpec,
  columns: readonly string[],
): string {
  const order = ident(spec.orderBy);
  return (
    `CREATE OR REPLACE TEMP TABLE ${ident(tables.actions)} AS ` +
    `SELECT t.${fid}, t.${pos}, b.${brow} AS ${brow}, ${rowIdOf(spec, 't')}, ` +
    `CASE WHEN NOT ${notOlder(`b.${order}`, `t.${order}`)} THEN 'stale' ` +
    lostTieSql(spec, 'b', 't') +
    `WHEN b.${ident(DELETE_FLAG)} THEN 'delete' ` +
    `WHEN ${sameRow(columns, 't', 'b')} THEN 'unchanged' ELSE 'update' END AS ${act} ` +
    `FROM ${ident(tables.target)} AS t JOIN ${ident(tables.batch)} AS b ON ${matchCondition(spec, 't', 'b')}`
  );
}

/** A CASE branch: at an equal orderBy, an incoming row earlier by the tie columns is stale ('' without tie columns). */
function lostTieSql(spec: MatchSpec, b: string, t: string): string {
  const ties = spec.ties ?? [];
  if (ties.length === 0) return '';
  const order = ident(spec.orderBy);
  return `WHEN ${b}.${order} IS NOT DISTINCT FROM ${t}.${order} AND NOT ${laterBy(ties, b, t, true)} THEN 'stale' `;
}

/** The tied hits whose full compare found them stale (they lost on the tie columns) become stale hits. */
export function settleTiesSql(tables: TempTables): string {
  return (
    `UPDATE ${ident(tables.hits)} AS h SET ${act} = 'stale' FROM ${ident(tables.actions)} AS a ` +
    `WHERE h.${fid} = a.${fid} AND h.${pos} = a.${pos} AND h.${act} = 'tie' AND a.${act} = 'stale'`
  );
}

/** The changes table: see the module comment. */
export function changesSql(tables: TempTables): string {
  return (
    `CREATE OR REPLACE TEMP TABLE ${ident(tables.changes)} AS ` +
    `SELECT ${fid}, ${pos}, ${brow}, ${rid}, ${act} FROM ${ident(tables.actions)} WHERE ${act} <> 'stale' ` +
    `UNION ALL SELECT h.${fid}, h.${pos}, h.${brow}, h.${rid}, CASE WHEN h.${act} = 'newer' THEN 'update' ELSE h.${act} END ` +
    `FROM ${ident(tables.hits)} AS h JOIN ${ident(tables.modes)} AS m ON m.${fid} = h.${fid} ` +
    `WHERE m.mode = 'dv' AND h.${act} IN ('delete', 'newer')`
  );
}

/**
 * The files with an updated or deleted row: their mode and, for a 'dv' file, those rows'
 * positions, ascending (what its deletion vector marks). One query, not a second for the positions.
 */
export function changedFilesSql(tables: TempTables): string {
  return (
    `SELECT c.${fid} AS id, any_value(m.mode) AS mode, ` +
    `list(c.${pos} ORDER BY c.${pos}) FILTER (WHERE m.mode = 'dv') AS positions ` +
    `FROM ${ident(tables.changes)} AS c JOIN ${ident(tables.modes)} AS m ON m.${fid} = c.${fid} ` +
    `WHERE c.${act} IN ('update', 'delete') GROUP BY c.${fid} ORDER BY id`
  );
}

/**
 * Batch rows that update a stored row in a file of `mode` (keeping its stable id when row ids are
 * written), each once: a table that holds a key twice (written before keys matched across
 * partitions) has both rows replaced by one, written with the 'rewrite' files when one of them
 * is in a 'rewrite' file, else with the new rows.
 */
function updatedRowsSql(
  tables: TempTables,
  mode: WriteMode,
  columns: readonly string[],
  rowIds: boolean,
): string {
  const cols = [
    ...columns.map((c) => `b.${ident(c)}`),
    ...(rowIds ? [`u.${rid}`, `${NULL_ID} AS ${rver}`] : []),
  ].join(', ');
  const updates = (m: WriteMode) =>
    `SELECT c.${brow}, c.${rid} FROM ${ident(tables.changes)} AS c JOIN ${ident(tables.modes)} AS m ON m.${fid} = c.${fid} ` +
    `WHERE m.mode = '${m}' AND c.${act} = 'update'`;
  const own =
    mode === 'rewrite'
      ? updates('rewrite')
      : `${updates('dv')} AND c.${brow} NOT IN (SELECT ${brow} FROM (${updates('rewrite')}))`;
  return (
    `SELECT ${cols} FROM (SELECT ${brow}, min(${rid}) AS ${rid} FROM (${own}) GROUP BY ${brow}) AS u ` +
    `JOIN ${ident(tables.batch)} AS b ON b.${brow} = u.${brow}`
  );
}

/**
 * The rows replacing the changed 'rewrite' files: their stored rows minus the updated and deleted
 * ones (keeping their stable ids and versions when row ids are written), plus the incoming versions
 * of the updated ones, in the layout's order (clustered tables stay clustered).
 */
export function rewriteRelationSql(
  tables: TempTables,
  columns: readonly string[],
  layout: OutputLayout,
): string {
  const cols = [
    ...columns.map((c) => `t.${ident(c)}`),
    ...(layout.rowIds ? [`t.${rid}`, `t.${rver}`] : []),
  ].join(', ');
  const changed = `SELECT ${fid}, ${pos} FROM ${ident(tables.changes)} WHERE ${act} IN ('update', 'delete')`;
  const rewritten = `SELECT c.${fid} FROM (${changed}) AS c JOIN ${ident(tables.modes)} AS m ON m.${fid} = c.${fid} WHERE m.mode = 'rewrite'`;
  const kept =
    `SELECT ${cols} FROM ${ident(tables.target)} AS t ` +
    `ANTI JOIN (${changed}) AS x ON x.${fid} = t.${fid} AND x.${pos} = t.${pos} ` +
    `WHERE t.${fid} IN (${rewritten})`;
  return `SELECT * FROM (${kept} UNION ALL ${updatedRowsSql(tables, 'rewrite', columns, layout.rowIds)}) ORDER BY ${layout.order.map(ident).join(', ')}`;
}

/**
 * The rows written to new files: batch rows no stored row matched (in any candidate file) that are
 * not deletes, plus the incoming versions of rows updated in 'dv' files, in the layout's order.
 */
export function newRowsSql(
  tables: TempTables,
  columns: readonly string[],
  layout: OutputLayout,
): string {
  const cols = [
    ...columns.map((c) => `b.${ident(c)}`),
    ...(layout.rowIds ? [`${NULL_ID} AS ${rid}`, `${NULL_ID} AS ${rver}`] : []),
  ].join(', ');
  const inserts =
    `SELECT ${cols} FROM ${ident(tables.batch)} AS b ` +
    `WHERE NOT b.${ident(DELETE_FLAG)} AND b.${brow} NOT IN (SELECT ${brow} FROM ${ident(tables.hits)})`;
  return `SELECT * FROM (${inserts} UNION ALL ${updatedRowsSql(tables, 'dv', columns, layout.rowIds)}) ORDER BY ${layout.order.map(ident).join(', ')}`;
}

/**
 * The batch rows this MERGE stores (what the table's constraints are checked on): rows no stored
 * row matched that are not deletes (inserts), and rows that update a stored row, every batch
 * column kept (lineage included).
 */
export function storedBatchRowsSql(tables: TempTables): string {
  return (
    `SELECT * FROM ${ident(tables.batch)} AS b WHERE NOT b.${ident(DELETE_FLAG)} AND ` +
    `(b.${brow} NOT IN (SELECT ${brow} FROM ${ident(tables.hits)}) ` +
    `OR b.${brow} IN (SELECT ${brow} FROM ${ident(tables.changes)} WHERE ${act} = 'update'))`
  );
}

/**
 * One row of counts: rows per action, inserts, no-op deletes, updates in 'dv' files and copied rows.
 * One pass over each of hits, changes and batch (FILTERed counts), not one scalar subquery per
 * count: this statement was the slowest of a small MERGE (19 ms of its 130 ms of SQL).
 */
export function countsSql(tables: TempTables): string {
  const h = ident(tables.hits);
  const b = ident(tables.batch);
  const c = ident(tables.changes);
  const changes = (what: string, as: string) =>
    `count(*) FILTER (WHERE ${act} = '${what}') AS ${as}`;
  const rewritten =
    `SELECT x.${fid} FROM ${c} AS x JOIN ${ident(tables.modes)} AS m ON m.${fid} = x.${fid} ` +
    `WHERE m.mode = 'rewrite' AND x.${act} IN ('update', 'delete')`;
  const copied =
    `(SELECT count(*) FROM ${ident(tables.target)} AS t ANTI JOIN (SELECT ${fid}, ${pos} FROM ${c} WHERE ${act} IN ('update', 'delete')) AS x ` +
    `ON x.${fid} = t.${fid} AND x.${pos} = t.${pos} WHERE t.${fid} IN (${rewritten}))`;
  // Batch rows no stored row or tombstone matched: one anti-join probe for both counts.
  const unmatched = `u.${brow} IS NULL`;
  const flag = `b.${ident(DELETE_FLAG)}`;
  return (
    'SELECT hc.stale, hc.buried, cc.updated, cc.deleted, cc.unchanged, bc.inserted, bc.delete_not_found, ' +
    `${copied} AS rows_copied FROM ` +
    `(SELECT count(*) FILTER (WHERE ${act} = 'stale') AS stale, count(*) FILTER (WHERE ${act} = 'stale' AND ${fid} IS NULL) AS buried FROM ${h}) AS hc, ` +
    `(SELECT ${changes('update', 'updated')}, ${changes('delete', 'deleted')}, ${changes('unchanged', 'unchanged')} FROM ${c}) AS cc, ` +
    `(SELECT count(*) FILTER (WHERE NOT ${flag} AND ${unmatched}) AS inserted, ` +
    `count(*) FILTER (WHERE ${flag} AND ${unmatched}) AS delete_not_found FROM ${b} AS b ` +
    `LEFT JOIN (SELECT DISTINCT ${brow} FROM ${h}) AS u ON u.${brow} = b.${brow}) AS bc`
  );
}

/**
 * Empty match tables (hits, modes, target, actions, changes), for a write that matches nothing:
 * the table is being created, or no file can hold a batch key.
 */
export function emptyMatchSql(tables: TempTables, targetColumnsSql: string): string {
  return [
    `CREATE OR REPLACE TEMP TABLE ${ident(tables.hits)} (${fid} INTEGER, ${pos} BIGINT, ${brow} BIGINT, ${rid} BIGINT, ${act} VARCHAR)`,
    modesSql(tables, new Map()),
    `CREATE OR REPLACE TEMP TABLE ${ident(tables.target)} AS ${targetColumnsSql}`,
    `CREATE OR REPLACE TEMP TABLE ${ident(tables.actions)} (${fid} INTEGER, ${pos} BIGINT, ${brow} BIGINT, ${rid} BIGINT, ${act} VARCHAR)`,
  ].join('; ');
}

/**
 * Add to the hits, as 'stale' with no file, the batch rows buried by a tombstone (see the module
 * comment): not flagged for delete, no stored row matched, and a tombstone of the same key whose
 * order is not older than the row's. Tombstones match on the key columns alone.
 */
export function buriedSql(tables: TempTables, spec: MatchSpec, tombstonesSql: string): string {
  const order = ident(spec.orderBy);
  const keys = spec.keys.map((k) => `z.${ident(k)} = b.${ident(k)}`).join(' AND ');
  const zOrder = `z.${ident(TOMBSTONE_ORDER)}`;
  const ties = spec.ties ?? [];
  // At an equal orderBy the row escapes only when it is later by the tie columns (equal: the delete wins).
  const escapes =
    ties.length > 0
      ? ` AND NOT (b.${order} IS NOT DISTINCT FROM ${zOrder} AND ${laterBy(ties, 'b', 'z', false)})`
      : '';
  return (
    `INSERT INTO ${ident(tables.hits)} (${fid}, ${brow}, ${act}) ` +
    `SELECT NULL, b.${ident(BATCH_ROW)}, 'stale' FROM ${ident(tables.batch)} AS b ` +
    `WHERE NOT b.${ident(DELETE_FLAG)} AND b.${ident(BATCH_ROW)} NOT IN (SELECT ${ident(BATCH_ROW)} FROM ${ident(tables.hits)}) ` +
    `AND EXISTS (SELECT 1 FROM (${tombstonesSql}) AS z WHERE ${keys} AND NOT ${newer(`b.${order}`, zOrder)}${escapes})`
  );
}

/**
 * The keys this batch deletes, as tombstones: key columns, tie columns and TOMBSTONE_ORDER of every delete row
 * that is not stale against a stored row. That includes deletes of keys not in the table: a CDC
 * delete may arrive before the insert it follows.
 */
export function deletedKeysSql(tables: TempTables, spec: MatchSpec): string {
  const cols = [...spec.keys, ...(spec.ties ?? [])].map((k) => `b.${ident(k)}`).join(', ');
  return (
    `SELECT ${cols}, b.${ident(spec.orderBy)} AS ${ident(TOMBSTONE_ORDER)} FROM ${ident(tables.batch)} AS b ` +
    `WHERE b.${ident(DELETE_FLAG)} AND b.${ident(BATCH_ROW)} NOT IN ` +
    `(SELECT ${ident(BATCH_ROW)} FROM ${ident(tables.hits)} WHERE ${ident(ACTION)} = 'stale')`
  );
}
