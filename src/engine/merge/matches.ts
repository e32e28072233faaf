/**
 * Finding the stored rows a batch touches, reading as little as possible:
 *   prune (partition values, then key stats)  →  download the candidates (remote stores only)
 *   →  load their deletion vectors  →  scan their key and orderBy columns with each row's
 *      position, joined with the batch (the hits)
 *   →  give each touched file a write mode ('dv' or 'rewrite', see ./write-mode.ts)
 *   →  read in full only the 'rewrite' files, and of the 'dv' files only their tied rows;
 *      classify every matched row (the changes).
 */
import { physicalName } from '../../delta/column-mapping.js';
import type { LiveFile, Snapshot } from '../../delta/snapshot.js';
import type { Spool } from '../../spool/spool.js';
import type { Storage } from '../../storage/storage.js';
import { localDataFiles } from '../data-file-io.js';
import { loadDeletedRows, type DeletedRows } from '../deleted-rows.js';
import type { DuckSession } from '../duckdb.js';
import { emptyRelationSql, inspectFiles, scanSql, type FileShape } from '../scan.js';
import { ident } from '../sql.js';
import { STABLE_ROW_ID, type MaterializedColumns } from '../row-ids.js';
import {
  actionsSql,
  changesSql,
  hitsSql,
  modesSql,
  pruningPartitions,
  settleTiesSql,
  targetSql,
  touchedFilesSql,
  type MatchSpec,
  type WriteMode,
} from './plan.js';
import { pruneFiles, type TypedColumn } from './prune.js';
import { FILE_ID, POS, type TempTables } from './temp-names.js';
import { TableConfig } from '../../delta/table-config.js';

/** Everything the matching phase needs. */
export interface MatchContext {
  session: DuckSession;
  /** Storage rooted at the table (files on it are read in place or downloaded). */
  storage: Storage;
  snapshot: Snapshot;
  tables: TempTables;
  spec: MatchSpec;
  /** Rows in the batch; an empty batch matches nothing and reads no file. */
  batchRows: number;
  /** Scratch space for downloads of remote data files. */
  spool: Spool;
  concurrency: number;
  signal?: AbortSignal;
  /** Row tracking preserves ids: scans also read each row's stable id and version from these hidden columns. */
  rowIds?: MaterializedColumns;
}

/** Candidate files and how to read them. */
export interface HitsResult {
  /** Files whose key columns were scanned, by id (index into snapshot.files). */
  scanned: Map<number, LiveFile>;
  afterPartitions: number;
  /** Local path of each scanned file (by add.path) and its Parquet shape. */
  localPaths: Map<string, string>;
  shapes: Map<string, FileShape>;
  /** The rows the scanned files' deletion vectors already delete (null: none has a DV). */
  deleted: DeletedRows | null;
}

/** A file with non-stale hits: how many rows it may change, and whether a tie needs a full compare. */
export interface TouchedFile {
  id: number;
  file: LiveFile;
  /** Upper bound of the rows this MERGE changes in it (non-stale hits). */
  touched: number;
  ties: boolean;
}

/** Prune, load the candidates' deletion vectors, then build the hits table from a key-column scan. */
export async function findHits(ctx: MatchContext): Promise<HitsResult> {
  const { snapshot, spec } = ctx;
  const mode = TableConfig.of(snapshot.protocol, snapshot.metadata).columnMapping;
  const typed = (names: readonly string[]): TypedColumn[] =>
    names.map((name) => {
      const field = snapshot.schema.fields.find((f) => f.name === name)!;
      return { name, type: field.type, key: physicalName(field, mode) };
    });
  const pruned = await pruneFiles(ctx.session, {
    files: ctx.batchRows === 0 ? [] : snapshot.files,
    fileTable: ctx.tables.files,
    batchTable: ctx.tables.batch,
    partitions: typed(pruningPartitions(spec, snapshot.partitionColumns)),
    keys: typed(spec.keys.filter((k) => !snapshot.partitionColumns.includes(k))),
  });
  const scanned = new Map(pruned.candidates.map((id) => [id, snapshot.files[id]!]));
  const { paths: localPaths } = await localDataFiles([...scanned.values()], {
    storage: ctx.storage,
    spool: ctx.spool,
    folder: 'scan',
    concurrency: ctx.concurrency,
    ...(ctx.signal ? { signal: ctx.signal } : {}),
  });
  const shapes =
    scanned.size > 0
      ? await inspectFiles(ctx.session, [...localPaths.values()])
      : new Map<string, FileShape>();
  const deleted = await loadDeletedRows(snapshot.files, {
    session: ctx.session,
    storage: ctx.storage,
    only: scanned.keys(),
  });
  const result = { scanned, afterPartitions: pruned.afterPartitions, localPaths, shapes, deleted };
  const columns = unique([...spec.keys, spec.orderBy, ...(ctx.rowIds ? [STABLE_ROW_ID] : [])]);
  await ctx.session.run(
    hitsSql(
      ctx.tables,
      spec,
      perFileScanSql(snapshot, scanned, { ...result, rowIds: ctx.rowIds }, columns),
    ),
  );
  return result;
}

/** The files with non-stale hits, ascending by id. */
export async function touchedFiles(ctx: MatchContext, hits: HitsResult): Promise<TouchedFile[]> {
  const rows = await ctx.session.all(touchedFilesSql(ctx.tables));
  return rows.map((r) => {
    const id = Number(r['id']);
    return {
      id,
      file: hits.scanned.get(id)!,
      touched: Number(r['touched']),
      ties: r['ties'] === true,
    };
  });
}

/**
 * With the touched files' modes decided, read what the classification needs (all rows of the
 * 'rewrite' files, the tied rows of the 'dv' files) and build the target, actions and changes.
 */
export async function classifyChanges(
  ctx: MatchContext,
  hits: HitsResult,
  touched: readonly TouchedFile[],
  modes: ReadonlyMap<number, WriteMode>,
  columns: readonly string[],
): Promise<void> {
  const pick = (want: (id: number) => boolean) =>
    new Map([...hits.scanned].filter(([id]) => want(id)));
  const rewrite = pick((id) => modes.get(id) === 'rewrite');
  // The 'dv' files with a tie among their hits: their tied rows are compared in full.
  const tied = new Set(touched.filter((t) => t.ties && modes.get(t.id) === 'dv').map((t) => t.id));
  const read = { ...hits, rowIds: ctx.rowIds };
  // One call for the chain of tables: none of them is read back here, and each call is a round
  // trip to DuckDB's threads (on a loaded machine each waits to be scheduled).
  const statements = [
    modesSql(ctx.tables, modes),
    targetSql(
      ctx.tables,
      perFileScanSql(ctx.snapshot, rewrite, read),
      perFileScanSql(
        ctx.snapshot,
        pick((id) => tied.has(id)),
        read,
      ),
    ),
    actionsSql(ctx.tables, ctx.spec, columns),
    ...((ctx.spec.ties ?? []).length > 0 ? [settleTiesSql(ctx.tables)] : []),
    changesSql(ctx.tables),
  ];
  await ctx.session.run(statements.join('; '));
}

/**
 * One relation over the given files with each row's FILE_ID and POS (its position in the file),
 * and only `columns` (all when omitted, the stable row ids included when `read.rowIds` names the
 * hidden columns); rows deleted by a deletion vector are left out. Files of one shape are one scan
 * (see scanSql); DuckDB reads only the columns used.
 */
export function perFileScanSql(
  snapshot: Snapshot,
  files: ReadonlyMap<number, LiveFile>,
  read: Pick<HitsResult, 'localPaths' | 'shapes' | 'deleted'> & {
    rowIds?: MaterializedColumns | undefined;
  },
  columns?: readonly string[],
): string {
  const list = columns === undefined ? '*' : [FILE_ID, ...columns, POS].map(ident).join(', ');
  const pathOf = (f: LiveFile) => read.localPaths.get(f.path)!;
  const ids = new Map([...files].map(([id, file]) => [file, id]));
  const opts = {
    shapeOf: (p: string) => read.shapes.get(p),
    deleted: read.deleted,
    position: POS,
    fileId: { column: FILE_ID, idOf: (f: LiveFile) => ids.get(f)! },
    ...(read.rowIds ? { stableRowIds: read.rowIds } : {}),
  };
  const relation =
    files.size === 0
      ? emptyRelationSql(snapshot, POS, FILE_ID, read.rowIds !== undefined)
      : scanSql(snapshot, [...files.values()], pathOf, opts);
  return `SELECT ${list} FROM (${relation})`;
}

function unique(names: readonly string[]): string[] {
  return [...new Set(names)];
}
