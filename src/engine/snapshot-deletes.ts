/**
 * A snapshot source's deletes (the "periodic full compare"): the keys the table holds and the
 * newest full extract lacks are found by scanning the table's key columns, and become delete rows
 * of the same MERGE, so they take the MERGE's own delete path (deletion vectors where the table
 * uses them, change-feed rows, tombstones that keep a late older row from bringing a key back).
 *
 * A delete row carries the stored row's orderBy and tie columns (the source file's LastModified
 * and name), so it ties with the stored row and deletes it: an incoming row wins a tie that it is
 * not earlier in (../engine/merge/options.ts `tieBreak`).
 */
import type { Snapshot } from '../delta/snapshot.js';
import type { Spool } from '../spool/spool.js';
import type { Storage } from '../storage/storage.js';
import type { DuckSession } from './duckdb.js';
import { withTableScan } from './scan.js';
import { ident } from './sql.js';

/** Batch column that is true on the delete rows of absent keys (a plain name: `deleteWhen` takes it as is). */
export const SNAPSHOT_ABSENT = '_tidemark_snapshot_absent';

const ABSENT_TABLE = '__tm_snapshot_absent';

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
  /** The table to create: the batch plus one delete row per absent key, `SNAPSHOT_ABSENT` true on them. */
  output: string;
}

export interface AbsentKeys {
  /** Rows the table holds (one per key). */
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
  const kept = [
    ...keys,
    tableName(spec.orderBy) ?? spec.orderBy,
    ...spec.carry.flatMap((c) => (tableName(c) ? [tableName(c)!] : [])),
  ];
  const columns = [...new Set(kept)].map((c) => `s.${ident(c)}`).join(', ');
  const match = keys.map((k) => `s.${ident(k)} = b.${ident(k)}`).join(' AND ');
  const counts = await withTableScan(
    session,
    { storage: spec.storage, spool: spec.spool },
    snapshot,
    async (relation) => {
      const anti = spec.batchRows > 0 ? ` ANTI JOIN ${ident(spec.batch)} AS b ON ${match}` : '';
      await session.run(
        `CREATE OR REPLACE TEMP TABLE ${ident(ABSENT_TABLE)} AS SELECT ${columns} FROM (${relation}) AS s${anti}`,
      );
      const [row] = await session.all(
        `SELECT (SELECT count(*) FROM (${relation})) AS stored, (SELECT count(*) FROM ${ident(ABSENT_TABLE)}) AS absent`,
      );
      return { tableKeys: Number(row?.['stored'] ?? 0), absent: Number(row?.['absent'] ?? 0) };
    },
  );
  const flag = ident(SNAPSHOT_ABSENT);
  const batch =
    spec.batchRows > 0
      ? `SELECT *, false AS ${flag} FROM ${ident(spec.batch)} UNION ALL BY NAME `
      : '';
  await session.run(
    `CREATE OR REPLACE TEMP TABLE ${ident(spec.output)} AS ${batch}SELECT *, true AS ${flag} FROM ${ident(ABSENT_TABLE)}`,
  );
  return {
    ...counts,
    drop: async () => {
      await session.run(`DROP TABLE IF EXISTS ${ident(spec.output)}`);
      await session.run(`DROP TABLE IF EXISTS ${ident(ABSENT_TABLE)}`);
    },
  };
}
