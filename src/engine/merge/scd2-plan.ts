/**
 * The scd2 write as SQL text (pure). A key's history is rebuilt from its events, as if every row
 * had arrived in order by orderBy:
 *
 *   events   the batch's versions (at their orderBy) and deletes; each stored version (at its
 *            valid_from, and, when it absorbed later rows in place, once more at its orderBy);
 *            each stored close that no version follows (a delete, at its valid_to); tombstones
 *   one per (key, position): a delete wins; among versions the later by the tie columns, then
 *            the incoming one (a replay of a stored version is the same row)
 *   no-op deletes dropped: a delete counts only right after a version
 *   groups   a version opens a group unless the event before it is a version with the same
 *            tracked columns (a change in untracked columns only: absorbed in place)
 *   versions one row per group: valid_from its first position, valid_to the position of the event
 *            after its last version (NULL: current), the values of its latest row
 *
 * The diff against the stored rows of the batch's keys: a stored row equal to a rebuilt version
 * (every compared column) stays; other stored rows are removed (a deletion vector or a rewrite);
 * rebuilt versions no stored row equals are written. Closing a version is one row marked and its
 * closed copy written.
 */
import { ident } from '../sql.js';
import { DELETE_FLAG, FILE_ID, POS, TOMBSTONE_ORDER } from './temp-names.js';

/** Internal columns of the event tables. */
const EV_POS = '__tm_ev_pos';
const EV_KIND = '__tm_ev_kind';
const EV_LAST = '__tm_ev_last';
const EV_PRIO = '__tm_ev_prio';
const EV_NEXT = '__tm_ev_next';
const EV_OPENS = '__tm_ev_opens';
const EV_GROUP = '__tm_ev_group';
const EV_FROM = '__tm_ev_from';
const EV_TO = '__tm_ev_to';
const EV_RANK = '__tm_ev_rank';

/** The columns of an scd2 write (table spelling). */
export interface Scd2Spec {
  keys: string[];
  orderBy: string;
  /** DuckDB type of the orderBy column (and of the history's time columns). */
  orderType: string;
  validFrom: string;
  validTo: string;
  isCurrent: string;
  /** Columns whose change opens a version. */
  tracked: string[];
  /** Columns that decide between two rows of a key at the same orderBy (later wins), NULL the oldest. */
  ties: string[];
  /** Every table column, in the table's order. */
  columns: string[];
  /** Columns compared to tell a stored row unchanged (all but those ignored). */
  compared: string[];
}

/** The temp tables of one scd2 write. */
export interface Scd2Tables {
  batch: string;
  stored: string;
  events: string;
  versions: string;
  removed: string;
  added: string;
}

const q = ident;

function keysOf(spec: Scd2Spec, alias: string): string {
  return spec.keys.map((k) => `${alias}.${q(k)}`).join(', ');
}

function joinKeys(spec: Scd2Spec, a: string, b: string): string {
  return spec.keys.map((k) => `${a}.${q(k)} = ${b}.${q(k)}`).join(' AND ');
}

function same(columns: readonly string[], a: string, b: string): string {
  if (columns.length === 0) return 'TRUE';
  return columns.map((c) => `${a}.${q(c)} IS NOT DISTINCT FROM ${b}.${q(c)}`).join(' AND ');
}

/** The stored rows (from `scanSql`: FILE_ID, POS, the table's columns) of the keys in the batch. */
export function storedSql(tables: Scd2Tables, spec: Scd2Spec, scanSql: string): string {
  const keys = spec.keys.map(q).join(', ');
  return (
    `CREATE OR REPLACE TEMP TABLE ${q(tables.stored)} AS SELECT s.* FROM (${scanSql}) AS s ` +
    `SEMI JOIN (SELECT DISTINCT ${keys} FROM ${q(tables.batch)}) AS k ON ${joinKeys(spec, 's', 'k')}`
  );
}

/** The table columns an event carries: all but the history columns versionsSql rebuilds. */
function eventColumns(spec: Scd2Spec): string[] {
  const rebuilt = new Set([spec.validFrom, spec.validTo, spec.isCurrent]);
  const needed = new Set([...spec.tracked, ...spec.ties]);
  return spec.columns.filter((c) => !rebuilt.has(c) || needed.has(c));
}

/** The events of the batch's keys, one per (key, position); see the module comment. */
export function eventsSql(
  tables: Scd2Tables,
  spec: Scd2Spec,
  tombstonesSql: string | null,
): string {
  // Events carry only what versionsSql reads: the history columns are rebuilt there (unless a
  // tracked or tie column names one), and every column an event carries goes through its windows.
  const carried = eventColumns(spec);
  const cols = (alias: string) => carried.map((c) => `${alias}.${q(c)}`).join(', ');
  const t = spec.orderType;
  const at = (expr: string) => `CAST(${expr} AS ${t})`;
  const b = q(tables.batch);
  const s = q(tables.stored);
  const parts = [
    // Incoming versions and deletes, at their orderBy.
    `SELECT ${cols('b')}, ${at(`b.${q(spec.orderBy)}`)} AS ${q(EV_POS)}, CASE WHEN b.${q(DELETE_FLAG)} THEN 'D' ELSE 'V' END AS ${q(EV_KIND)}, ` +
      `${at(`b.${q(spec.orderBy)}`)} AS ${q(EV_LAST)}, 0 AS ${q(EV_PRIO)} FROM ${b} AS b`,
    // Stored versions, at their valid_from.
    `SELECT ${cols('s')}, ${at(`s.${q(spec.validFrom)}`)} AS ${q(EV_POS)}, 'V' AS ${q(EV_KIND)}, ${at(`s.${q(spec.orderBy)}`)} AS ${q(EV_LAST)}, 1 AS ${q(EV_PRIO)} FROM ${s} AS s`,
    // A version that absorbed later rows in place, once more at its latest row, so a late version inside it splits it there.
    `SELECT ${cols('s')}, ${at(`s.${q(spec.orderBy)}`)} AS ${q(EV_POS)}, 'V' AS ${q(EV_KIND)}, ${at(`s.${q(spec.orderBy)}`)} AS ${q(EV_LAST)}, 1 AS ${q(EV_PRIO)} FROM ${s} AS s ` +
      `WHERE s.${q(spec.orderBy)} > s.${q(spec.validFrom)} AND (s.${q(spec.validTo)} IS NULL OR s.${q(spec.orderBy)} < s.${q(spec.validTo)})`,
    // A close no stored version follows: a delete.
    `SELECT ${keysOf(spec, 's')}, ${at(`s.${q(spec.validTo)}`)} AS ${q(EV_POS)}, 'D' AS ${q(EV_KIND)}, CAST(NULL AS ${t}) AS ${q(EV_LAST)}, 1 AS ${q(EV_PRIO)} FROM ${s} AS s ` +
      `WHERE s.${q(spec.validTo)} IS NOT NULL AND NOT EXISTS (SELECT 1 FROM ${s} AS n WHERE ${joinKeys(spec, 'n', 's')} AND n.${q(spec.validFrom)} = s.${q(spec.validTo)})`,
    ...(tombstonesSql === null
      ? []
      : [
          `SELECT ${keysOf(spec, 'z')}, ${at(`z.${q(TOMBSTONE_ORDER)}`)} AS ${q(EV_POS)}, 'D' AS ${q(EV_KIND)}, CAST(NULL AS ${t}) AS ${q(EV_LAST)}, 1 AS ${q(EV_PRIO)} ` +
            `FROM (${tombstonesSql}) AS z SEMI JOIN ${b} AS k ON ${joinKeys(spec, 'z', 'k')}`,
        ]),
  ];
  const all = parts.join(' UNION ALL BY NAME ');
  const keys = spec.keys.map(q).join(', ');
  const ties = spec.ties.map((c) => `${q(c)} DESC NULLS LAST`);
  const pick = [
    `(${q(EV_KIND)} = 'D') DESC`,
    ...ties,
    `${q(EV_PRIO)}`,
    `${q(EV_LAST)} DESC NULLS LAST`,
  ];
  return (
    `CREATE OR REPLACE TEMP TABLE ${q(tables.events)} AS SELECT * FROM (${all}) ` +
    `WHERE ${q(EV_POS)} IS NOT NULL ` +
    `QUALIFY row_number() OVER (PARTITION BY ${keys}, ${q(EV_POS)} ORDER BY ${pick.join(', ')}) = 1`
  );
}

/** The rebuilt versions of the batch's keys, with the table's columns; see the module comment. */
export function versionsSql(tables: Scd2Tables, spec: Scd2Spec): string {
  const keys = spec.keys.map(q).join(', ');
  const w = `PARTITION BY ${keys} ORDER BY ${q(EV_POS)}`;
  const tracked =
    spec.tracked.length === 0 ? 'TRUE' : `row(${spec.tracked.map((c) => q(c)).join(', ')})`;
  // A version opens a group unless it follows one with the same tracked columns. Only versions
  // are read below, and dropping the deletes that follow no version (they count only right after
  // one) changes neither the event before a version nor the one after it: a dropped delete
  // follows a delete or nothing, so none of them is a version's neighbour in place of a version.
  const opened =
    `SELECT *, lead(${q(EV_POS)}) OVER (${w}) AS ${q(EV_NEXT)}, ` +
    `(${q(EV_KIND)} = 'V' AND (lag(${q(EV_KIND)}) OVER (${w}) IS DISTINCT FROM 'V' OR lag(${tracked}) OVER (${w}) IS DISTINCT FROM ${tracked})) AS ${q(EV_OPENS)} ` +
    `FROM ${q(tables.events)}`;
  const grouped = `SELECT *, sum(CAST(${q(EV_OPENS)} AS INTEGER)) OVER (${w} ROWS UNBOUNDED PRECEDING) AS ${q(EV_GROUP)} FROM (${opened}) WHERE ${q(EV_KIND)} = 'V'`;
  // One row per group, in one window over it: valid_from its first version; valid_to the event
  // after its last version (the largest next, NULL when the key's last event is in the group:
  // each event's next is the position of the one after it); the values of its latest version.
  const ties = spec.ties.map((c) => `${q(c)} DESC NULLS LAST`);
  const latest = [`${q(EV_LAST)} DESC NULLS LAST`, ...ties, q(EV_PRIO)];
  const group =
    `PARTITION BY ${keys}, ${q(EV_GROUP)} ORDER BY ${latest.join(', ')} ` +
    'ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING';
  const [vf, vt, rn, next] = [q(EV_FROM), q(EV_TO), q(EV_RANK), q(EV_NEXT)];
  const perGroup =
    `SELECT *, min(${q(EV_POS)}) OVER g AS ${vf}, ` +
    `CASE WHEN count(${next}) OVER g = count(*) OVER g THEN max(${next}) OVER g END AS ${vt}, ` +
    `row_number() OVER g AS ${rn} FROM (${grouped}) WINDOW g AS (${group})`;
  const select = spec.columns.map((c) =>
    c === spec.validFrom
      ? `${vf} AS ${q(c)}`
      : c === spec.validTo
        ? `${vt} AS ${q(c)}`
        : c === spec.isCurrent
          ? `(${vt} IS NULL) AS ${q(c)}`
          : q(c),
  );
  return (
    `CREATE OR REPLACE TEMP TABLE ${q(tables.versions)} AS ` +
    `SELECT ${select.join(', ')} FROM (${perGroup}) WHERE ${rn} = 1`
  );
}

/** A stored row (alias `s`) that a rebuilt version (alias `v`) equals: it stays as it is. */
function keptSql(spec: Scd2Spec, s: string, v: string): string {
  return `${joinKeys(spec, s, v)} AND ${same(spec.compared, s, v)}`;
}

/** The stored rows no rebuilt version equals (FILE_ID, POS, and whether a version starts where they did). */
export function removedSql(tables: Scd2Tables, spec: Scd2Spec): string {
  const from = `s.${q(spec.validFrom)} IS NOT DISTINCT FROM v.${q(spec.validFrom)}`;
  return (
    `CREATE OR REPLACE TEMP TABLE ${q(tables.removed)} AS SELECT s.${q(FILE_ID)}, s.${q(POS)}, ` +
    `EXISTS (SELECT 1 FROM ${q(tables.versions)} AS v WHERE ${joinKeys(spec, 's', 'v')} AND ${from}) AS replaced ` +
    `FROM ${q(tables.stored)} AS s WHERE NOT EXISTS (SELECT 1 FROM ${q(tables.versions)} AS v WHERE ${keptSql(spec, 's', 'v')})`
  );
}

/** The rebuilt versions no stored row equals, and whether a stored version started where they do. */
export function addedSql(tables: Scd2Tables, spec: Scd2Spec): string {
  const from = `s.${q(spec.validFrom)} IS NOT DISTINCT FROM v.${q(spec.validFrom)}`;
  return (
    `CREATE OR REPLACE TEMP TABLE ${q(tables.added)} AS SELECT v.*, ` +
    `EXISTS (SELECT 1 FROM ${q(tables.stored)} AS s WHERE ${joinKeys(spec, 's', 'v')} AND ${from}) AS ${q(REPLACES)} ` +
    `FROM ${q(tables.versions)} AS v WHERE NOT EXISTS (SELECT 1 FROM ${q(tables.stored)} AS s WHERE ${keptSql(spec, 's', 'v')})`
  );
}

/** Column of the added table: the version replaces a stored one that started at the same time. */
export const REPLACES = '__tm_replaces';

/** One row of counts: versions opened, replaced, removed and kept. */
export function scd2CountsSql(tables: Scd2Tables): string {
  return (
    `SELECT (SELECT count(*) FILTER (WHERE NOT ${q(REPLACES)}) FROM ${q(tables.added)}) AS inserted, ` +
    `(SELECT count(*) FILTER (WHERE ${q(REPLACES)}) FROM ${q(tables.added)}) AS updated, ` +
    `(SELECT count(*) FILTER (WHERE NOT replaced) FROM ${q(tables.removed)}) AS deleted, ` +
    `(SELECT count(*) FROM ${q(tables.stored)}) - (SELECT count(*) FROM ${q(tables.removed)}) AS unchanged, ` +
    `(SELECT count(*) FROM ${q(tables.batch)} WHERE ${q(DELETE_FLAG)}) AS deletes`
  );
}

/** The rows to write as new files: the added versions, in key and time order. */
export function addedRowsSql(tables: Scd2Tables, spec: Scd2Spec): string {
  const order = [...spec.keys, spec.validFrom].map(q).join(', ');
  return `SELECT ${spec.columns.map(q).join(', ')} FROM ${q(tables.added)} ORDER BY ${order}`;
}

/** The batch's deletes as tombstones: key columns, tie columns and TOMBSTONE_ORDER of every delete row. */
export function scd2DeletesSql(tables: Scd2Tables, spec: Scd2Spec): string {
  const cols = [...spec.keys, ...spec.ties].map((c) => `b.${q(c)}`).join(', ');
  return (
    `SELECT ${cols}, b.${q(spec.orderBy)} AS ${q(TOMBSTONE_ORDER)} FROM ${q(tables.batch)} AS b ` +
    `WHERE b.${q(DELETE_FLAG)}`
  );
}
