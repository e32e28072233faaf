/**
 * Names of the temporary tables and internal columns one MERGE uses. Every name carries a
 * per-call suffix so two writes on one DuckDB session never collide, and `dropAll` cleans up.
 */
import type { DuckSession } from '../duckdb.js';
import { ident } from '../sql.js';

/** Internal column: the evaluated `deleteWhen` flag (BOOLEAN, never NULL). */
export const DELETE_FLAG = '__tm_delete';
/**
 * Internal column: the batch row's source file, copied from the lineage column when present (the
 * job's lineage column itself is SOURCE_FILE, `_source_file`, in ../file-select.ts).
 */
export const BATCH_SOURCE_FILE = '__tm_source_file';
/** Internal column: the batch row's position in its source file, when present. */
export const BATCH_SOURCE_ROW = '__tm_source_row';
/** Internal column: the id of the data file a target row was read from. */
export const FILE_ID = '__tm_file';
/** Internal column: the id of a batch row (its source's rowid), and the batch row a target row matched. */
export const BATCH_ROW = '__tm_brow';
/** Internal column: a stored row's position in its data file (`file_row_number`, what a deletion vector names). */
export const POS = '__tm_pos';
/**
 * Internal column: what happens to a matched stored row. In the hits: 'stale' | 'delete' | 'newer'
 * | 'tie' (the orderBy values are equal, so only a full compare tells an update from an unchanged
 * row); in the changes: 'delete' | 'update' | 'unchanged'.
 */
export const ACTION = '__tm_action';
/**
 * Column of a tombstone relation: the orderBy value of the delete that removed the key. Its
 * `__tm_` prefix is reserved, so it never collides with a key column.
 */
export const TOMBSTONE_ORDER = '__tm_tombstone_order';

let sequence = 0;

/** The temp tables of one write. */
export interface TempTables {
  /** The batch, cast to the target schema, with DELETE_FLAG, BATCH_ROW and lineage columns (a table or a view). */
  batch: string;
  /** Candidate data files: id, local path, size, typed partition values, key bounds. */
  files: string;
  /** Batch keys found in candidate files by the key-column scan. */
  hits: string;
  /** Full rows of the files to rewrite, and the tied rows of the files that get a deletion vector. */
  target: string;
  /** Matched target rows with their action, from a full compare. */
  actions: string;
  /** Every matched stored row that is deleted, updated or unchanged: (file, position, batch row, action). */
  changes: string;
  /** Ids of the files each write mode takes: (file, mode 'rewrite' | 'dv'). */
  modes: string;
  /** Full stored rows of the updated and deleted rows, for the change data feed (./change-plan.ts). */
  preimages: string;
  /** The view of the batch's deletes handed back as tombstones (./tombstones.ts `batchDeletes`). */
  deletes: string;
}

/** Fresh temp table names for one write. */
export function tempTables(): TempTables {
  const n = ++sequence;
  return {
    batch: `__tm_batch_${n}`,
    files: `__tm_files_${n}`,
    hits: `__tm_hits_${n}`,
    target: `__tm_target_${n}`,
    actions: `__tm_actions_${n}`,
    changes: `__tm_changes_${n}`,
    modes: `__tm_modes_${n}`,
    preimages: `__tm_preimages_${n}`,
    deletes: `__tm_deletes_${n}`,
  };
}

/**
 * Drop every temp table (or view: the batch may be one, ./batch.ts) of a write; missing ones are
 * fine; never throws. The tables go in one statement, the batch as either kind: trying both kinds
 * for each name took 16 statements per write.
 */
export async function dropAll(session: DuckSession, tables: TempTables): Promise<void> {
  const { batch, deletes, ...others } = tables;
  const dropBoth = async (name: string) => {
    for (const kind of ['TABLE', 'VIEW']) {
      try {
        await session.run(`DROP ${kind} IF EXISTS ${ident(name)}`);
      } catch {
        // The name is the other kind, or cleanup failed: it must not hide the error that got us here.
      }
    }
  };
  try {
    await session.run(
      [
        `DROP VIEW IF EXISTS ${ident(deletes)}`,
        ...Object.values(others).map((name) => `DROP TABLE IF EXISTS ${ident(name)}`),
      ].join('; '),
    );
  } catch {
    await dropBoth(deletes);
    for (const name of Object.values(others)) await dropBoth(name);
  }
  await dropBoth(batch);
}
