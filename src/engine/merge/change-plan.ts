/**
 * The change data feed of a MERGE as SQL text (pure; see ./plan.ts for the tables it reads):
 *
 *   preimages  full stored rows of the updated and deleted rows: from the target table for
 *              'rewrite' files (read in full already), from a scan of the 'dv' files otherwise
 *   changes    insert            batch rows no stored row matched that are not deletes
 *              update_preimage   the stored row an update replaces
 *              update_postimage  the batch row replacing it
 *              delete            the stored row a delete removes
 *
 * Unchanged and stale rows, and rows a rewrite copies, are not changes. The rows come out in key
 * order, a preimage just before its postimage.
 */
import { CHANGE_TYPE_COLUMN, type ChangeType } from '../../delta/change-data.js';
import { ident } from '../sql.js';
import type { WriteMode } from './plan.js';
import { ACTION, BATCH_ROW, DELETE_FLAG, FILE_ID, POS, type TempTables } from './temp-names.js';

const fid = ident(FILE_ID);
const pos = ident(POS);
const act = ident(ACTION);
const brow = ident(BATCH_ROW);

/** Positions of the updated and deleted rows in files of one write mode. */
function changedPositionsSql(tables: TempTables, mode: WriteMode): string {
  return (
    `SELECT c.${fid}, c.${pos} FROM ${ident(tables.changes)} AS c JOIN ${ident(tables.modes)} AS m ON m.${fid} = c.${fid} ` +
    `WHERE m.mode = '${mode}' AND c.${act} IN ('update', 'delete')`
  );
}

/**
 * The preimages table: every column of each updated or deleted stored row, with FILE_ID and POS.
 * `dvScanSql` reads the 'dv' files with changes in full (FILE_ID, POS and every column).
 */
export function preimagesSql(tables: TempTables, dvScanSql: string): string {
  const semi = (rel: string, mode: WriteMode) =>
    `SELECT r.* FROM ${rel} AS r SEMI JOIN (${changedPositionsSql(tables, mode)}) AS x ON x.${fid} = r.${fid} AND x.${pos} = r.${pos}`;
  return (
    `CREATE OR REPLACE TEMP TABLE ${ident(tables.preimages)} AS ` +
    `${semi(ident(tables.target), 'rewrite')} UNION ALL BY NAME ${semi(`(${dvScanSql})`, 'dv')}`
  );
}

/** The order of change types within one key. */
const TYPE_ORDER: readonly ChangeType[] = [
  'delete',
  'update_preimage',
  'update_postimage',
  'insert',
];

/** The MERGE's changes: the table's columns plus CHANGE_TYPE_COLUMN, in key order; see the module comment. */
export function changeRowsSql(
  tables: TempTables,
  columns: readonly string[],
  keys: readonly string[],
): string {
  const cols = (alias: string) => columns.map((c) => `${alias}.${ident(c)}`).join(', ');
  const type = ident(CHANGE_TYPE_COLUMN);
  const stored = (change: 'update' | 'delete', as: ChangeType) =>
    `SELECT ${cols('p')}, '${as}' AS ${type} FROM ${ident(tables.preimages)} AS p ` +
    `JOIN ${ident(tables.changes)} AS c ON c.${fid} = p.${fid} AND c.${pos} = p.${pos} WHERE c.${act} = '${change}'`;
  const inserts =
    `SELECT ${cols('b')}, 'insert' AS ${type} FROM ${ident(tables.batch)} AS b ` +
    `WHERE NOT b.${ident(DELETE_FLAG)} AND b.${brow} NOT IN (SELECT ${brow} FROM ${ident(tables.hits)})`;
  const postimages =
    `SELECT ${cols('b')}, 'update_postimage' AS ${type} FROM ${ident(tables.changes)} AS c ` +
    `JOIN ${ident(tables.batch)} AS b ON b.${brow} = c.${brow} WHERE c.${act} = 'update'`;
  const order = `CASE ${type} ${TYPE_ORDER.map((t, i) => `WHEN '${t}' THEN ${i}`).join(' ')} END`;
  return (
    `SELECT * FROM (${stored('delete', 'delete')} UNION ALL ${stored('update', 'update_preimage')} UNION ALL ${postimages} ` +
    `UNION ALL ${inserts}) ORDER BY ${[...keys.map(ident), order].join(', ')}`
  );
}
