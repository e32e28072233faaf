/**
 * The rows deletion vectors delete, as a DuckDB temp table that scans anti-join on
 * `file_row_number`: (file INTEGER, pos INTEGER), one row per deleted row of each file with a DV.
 * DVs are read through the Delta layer's codec (one ranged read per DV, CRC-checked) and appended
 * a vector at a time, so a scan costs what the deleted rows cost, not what the files hold.
 */
import pLimit from 'p-limit';
import type { LiveFile } from '../delta/snapshot.js';
import { DeletionVectorCache, loadDeletionVector } from '../delta/deletion-vectors/index.js';
import type { RowIndexSet } from '../delta/deletion-vectors/index.js';
import type { Storage } from '../storage/storage.js';
import type { DuckSession } from './duckdb.js';
import { ident } from './sql.js';

/** Column names of a deleted-rows table. */
export const DELETED_FILE = 'file';
export const DELETED_POS = 'pos';

/** DV reads in flight at once. */
const DV_READ_CONCURRENCY = 16;

let sequence = 0;

/** Deleted rows of some files, loaded into a temp table; `drop` removes it. */
export interface DeletedRows {
  /** The temp table (quoted by callers with `ident`). */
  table: string;
  /** The id a file's rows carry in the table; undefined for a file without a DV. */
  idOf(file: LiveFile): number | undefined;
  /** The loaded set of each file with a DV, by id (MERGE unions new deletes into it). */
  sets: ReadonlyMap<number, RowIndexSet>;
  drop(): Promise<void>;
}

/** What loading needs: where the DVs are, and optionally a cache shared by a run. */
export interface LoadDeletedRowsOptions {
  session: DuckSession;
  /** Storage rooted at the table. */
  storage: Storage;
  /** Only the files with these ids (indexes into the list); default all. */
  only?: Iterable<number>;
  cache?: DeletionVectorCache;
}

/**
 * Load the DVs of `files` (ids are their index in the list) into a new temp table; null when no
 * file has a DV.
 */
export async function loadDeletedRows(
  files: readonly LiveFile[],
  opts: LoadDeletedRowsOptions,
): Promise<DeletedRows | null> {
  const wanted = opts.only === undefined ? null : new Set(opts.only);
  const withDv = files.flatMap((file, id) =>
    file.deletionVector && (wanted === null || wanted.has(id)) ? [{ file, id }] : [],
  );
  if (withDv.length === 0) return null;
  const limit = pLimit(DV_READ_CONCURRENCY);
  const cache = opts.cache ?? new DeletionVectorCache();
  const loaded = await Promise.all(
    withDv.map(({ file, id }) =>
      limit(async () => ({
        id,
        set: await loadDeletionVector(opts.storage, file.deletionVector!, opts.storage.uri, {
          dataFile: file.path,
          cache,
        }),
      })),
    ),
  );
  const table = `__tm_deleted_${++sequence}`;
  await opts.session.run(
    `CREATE TEMP TABLE ${ident(table)} (${ident(DELETED_FILE)} INTEGER, ${ident(DELETED_POS)} INTEGER)`,
  );
  const total = loaded.reduce((n, l) => n + l.set.cardinality, 0);
  const ids = new Int32Array(total);
  const positions = new Int32Array(total);
  let at = 0;
  for (const { id, set } of loaded) {
    for (const pos of set) {
      if (pos > 0x7fffffff)
        throw new RangeError(
          `[scan] a deletion vector of ${files[id]!.path} names row ${pos}, beyond what tidemark reads (2^31)`,
        );
      ids[at] = id;
      positions[at++] = pos;
    }
  }
  await opts.session.appendIntegerColumns(table, [ids, positions]);
  const idByPath = new Map(withDv.map(({ file, id }) => [file, id]));
  return {
    table,
    idOf: (file) => idByPath.get(file),
    sets: new Map(loaded.map(({ id, set }) => [id, set])),
    drop: () => opts.session.run(`DROP TABLE IF EXISTS ${ident(table)}`),
  };
}
