/**
 * A snapshot source's deletes (the "periodic full compare"): the keys the table holds and the
 * newest full extract lacks are found by scanning the table's key columns, and become delete rows
 * of the same MERGE, so they take the MERGE's own delete path (deletion vectors where the table
 * uses them, change-feed rows, tombstones that keep a late older row from bringing a key back).
 *
 * A delete row carries the stored row's orderBy and tie columns (the source file's LastModified
 * and name), so it ties with the stored row and deletes it: an incoming row wins a tie that it is
 * not earlier in (../engine/merge/options.ts `tieBreak`).
 *
 * scd2 mode (`current`): only the keys whose current version is open count, and each delete row
 * sits at the extract's as-of (`closeAt`), a delete event that closes the version current then
 * (./merge/scd2-plan.ts). Extract rows equal to their key's current version but for lineage are
 * left out (`unchangedBesides`), so an unchanged key is a no-op.
 */
import type { Snapshot } from '../delta/snapshot.js';
import type { Spool } from '../spool/spool.js';
import type { Storage } from '../storage/storage.js';
import type { DuckSession } from './duckdb.js';
import { describeRelation } from './relation.js';
import { withTableScan } from './scan.js';
import { ident } from './sql.js';

/** Batch column that is true on the delete rows of absent keys (a plain name: `deleteWhen` takes it as is). */
export const SNAPSHOT_ABSENT = '_tidemark_snapshot_absent';

const ABSENT_TABLE = '__tm_snapshot_absent';
const CHANGED_TABLE = '__tm_snapshot_changed';

export interface AbsentKeysSpec {
  session: DuckSession;
  storage: Storage;
  spool: Spool;
  snapshot: Snapshot;
  /** The batch (the extract, one row per key); without rows every stored key is absent. */
  batch: string;
  batchRows: number;
  keyColumns: readonly string[];
  orderBy: string;
  /** Tie columns copied from the stored row (those the table lacks are NULL). */
  carry: readonly string[];
  /**
   * scd2 mode: the table's is_current column. Only the keys whose current version is open count
   * (closed versions are history), and each delete row closes that version at `closeAt`.
   */
  current?: string;
  /** SQL of the delete rows' orderBy (the extract's as-of time); default: the stored row's. */
  closeAt?: string;
  /**
   * With `current`: the extract's rows equal to their key's current version in every table column
   * but these (lineage, history) are left out of the output. Another file repeating a version
   * would otherwise rewrite it for its lineage alone: every daily extract, the whole table.
   */
  unchangedBesides?: readonly string[];
  /** The table to create: the batch plus one delete row per absent key, `SNAPSHOT_ABSENT` true on them. */
  output: string;
}

export interface AbsentKeys {
  /** Rows the table holds (one per key; scd2 mode: the open current versions, one per key). */
  tableKeys: number;
  /** Of them, the keys the extract lacks. */
  absent: number;
  /** Drop the tables made (the output and the absent keys). */
  drop(): Promise<void>;
}

/** Find the absent keys and build the batch with their delete rows; see the module comment. */
export async function stageAbsentKeys(spec: AbsentKeysSpec): Promise<AbsentKeys> {
  const { session, snapshot } = spec;
  const fields = snapshot.schema.fields;
  const tableName = (name: string) =>
    fields.find((f) => f.name.toLowerCase() === name.toLowerCase())?.name;
  const keys = spec.keyColumns.map((k) => tableName(k) ?? k);
  const orderBy = tableName(spec.orderBy) ?? spec.orderBy;
  const kept = [
    ...keys,
    ...(spec.closeAt === undefined ? [orderBy] : []),
    ...spec.carry.flatMap((c) => (tableName(c) ? [tableName(c)!] : [])),
  ];
  const columns = [
    ...[...new Set(kept)].map((c) => `s.${ident(c)}`),
    ...(spec.closeAt === undefined ? [] : [`${spec.closeAt} AS ${ident(orderBy)}`]),
  ].join(', ');
  const current =
    spec.current === undefined ? undefined : (tableName(spec.current) ?? spec.current);
  const open = current === undefined ? '' : ` WHERE s.${ident(current)}`;
  const match = keys.map((k) => `s.${ident(k)} = b.${ident(k)}`).join(' AND ');
  const counts = await withTableScan(
    session,
    { storage: spec.storage, spool: spec.spool },
    snapshot,
    async (relation) => {
      const anti = spec.batchRows > 0 ? ` ANTI JOIN ${ident(spec.batch)} AS b ON ${match}` : '';
      await session.run(
        `CREATE OR REPLACE TEMP TABLE ${ident(ABSENT_TABLE)} AS SELECT ${columns} FROM (${relation}) AS s${anti}${open}`,
      );
      const [row] = await session.all(
        `SELECT (SELECT count(*) FROM (${relation}) AS s${open}) AS stored, (SELECT count(*) FROM ${ident(ABSENT_TABLE)}) AS absent`,
      );
      const same = current === undefined ? null : await unchangedMatch(spec, keys);
      if (same !== null)
        await session.run(
          `CREATE OR REPLACE TEMP TABLE ${ident(CHANGED_TABLE)} AS SELECT b.* FROM ${ident(spec.batch)} AS b ` +
            `ANTI JOIN (SELECT * FROM (${relation}) AS s${open}) AS s ON ${same}`,
        );
      return {
        tableKeys: Number(row?.['stored'] ?? 0),
        absent: Number(row?.['absent'] ?? 0),
        from: same === null ? spec.batch : CHANGED_TABLE,
      };
    },
  );
  const flag = ident(SNAPSHOT_ABSENT);
  const batch =
    spec.batchRows > 0
      ? `SELECT *, false AS ${flag} FROM ${ident(counts.from)} UNION ALL BY NAME `
      : '';
  await session.run(
    `CREATE OR REPLACE TEMP TABLE ${ident(spec.output)} AS ${batch}SELECT *, true AS ${flag} FROM ${ident(ABSENT_TABLE)}`,
  );
  return {
    tableKeys: counts.tableKeys,
    absent: counts.absent,
    drop: async () => {
      await session.run(`DROP TABLE IF EXISTS ${ident(spec.output)}`);
      await session.run(`DROP TABLE IF EXISTS ${ident(ABSENT_TABLE)}`);
      await session.run(`DROP TABLE IF EXISTS ${ident(CHANGED_TABLE)}`);
    },
  };
}

/**
 * The join condition of a batch row (b) and the stored row (s) it equals in every table column
 * but `unchangedBesides` (a column the batch lacks: NULL in it); null when the batch has data
 * columns the table lacks (a new column is a change) or no rule was asked for.
 */
async function unchangedMatch(
  spec: AbsentKeysSpec,
  keys: readonly string[],
): Promise<string | null> {
  if (spec.unchangedBesides === undefined || spec.batchRows === 0) return null;
  const ignored = new Set(spec.unchangedBesides.map((c) => c.toLowerCase()));
  const batch = new Map(
    (await describeRelation(spec.session, spec.batch)).map((c) => [c.name.toLowerCase(), c.name]),
  );
  const fields = spec.snapshot.schema.fields.map((f) => f.name);
  const inTable = new Set(fields.map((f) => f.toLowerCase()));
  if ([...batch.keys()].some((c) => !inTable.has(c) && !ignored.has(c))) return null;
  const compared = fields.filter((f) => !ignored.has(f.toLowerCase()));
  const equal = compared.map((f) => {
    const b = batch.get(f.toLowerCase());
    return keys.includes(f)
      ? `s.${ident(f)} = b.${ident(b ?? f)}`
      : b === undefined
        ? `s.${ident(f)} IS NULL`
        : `s.${ident(f)} IS NOT DISTINCT FROM b.${ident(b)}`;
  });
  return equal.join(' AND ');
}
