/**
 * Finding the stored rows a batch touches, reading as little as possible:
 *   prune (partition values, then key stats)  →  download the candidates (remote stores only)
 *   →  scan their key and orderBy columns, joined with the batch (the hits)
 *   →  read in full only the files with a non-stale hit, and classify each matched row.
 */
import type { LiveFile, Snapshot } from '../../delta/snapshot.js';
import type { Spool } from '../../spool/spool.js';
import type { Storage } from '../../storage/storage.js';
import type { DuckSession } from '../duckdb.js';
import { emptyRelationSql, inspectFiles, scanSql, type FileShape } from '../scan.js';
import { ident } from '../sql.js';
import { FILE_ID, type TempTables } from './temp-names.js';
import { actionsSql, filesToReadSql, filesToRewriteSql, hitsSql, pruningPartitions, targetSql, type MatchSpec } from './plan.js';
import { pruneFiles, type TypedColumn } from './prune.js';
import { localizeFiles } from './localize.js';

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
}

/** Candidate files and how to read them. */
export interface HitsResult {
  /** Files whose key columns were scanned, by id (index into snapshot.files). */
  scanned: Map<number, LiveFile>;
  afterPartitions: number;
  /** Local path of each scanned file (by add.path) and its Parquet shape. */
  localPaths: Map<string, string>;
  shapes: Map<string, FileShape>;
}

/** Prune, then build the hits table from a key-column scan of the candidates. */
export async function findHits(ctx: MatchContext): Promise<HitsResult> {
  const { snapshot, spec } = ctx;
  const typed = (names: readonly string[]): TypedColumn[] =>
    names.map((name) => ({ name, type: snapshot.schema.fields.find((f) => f.name === name)!.type }));
  const pruned = await pruneFiles(ctx.session, {
    files: ctx.batchRows === 0 ? [] : snapshot.files,
    fileTable: ctx.tables.files,
    batchTable: ctx.tables.batch,
    partitions: typed(pruningPartitions(spec, snapshot.partitionColumns)),
    keys: typed(spec.keys.filter((k) => !snapshot.partitionColumns.includes(k))),
  });
  const scanned = new Map(pruned.candidates.map((id) => [id, snapshot.files[id]!]));
  const localPaths = await localizeFiles([...scanned.values()], {
    storage: ctx.storage,
    spoolDir: await ctx.spool.folder('scan'),
    concurrency: ctx.concurrency,
    ...(ctx.signal ? { signal: ctx.signal } : {}),
  });
  const shapes = scanned.size > 0 ? await inspectFiles(ctx.session, [...localPaths.values()]) : new Map<string, FileShape>();
  const result = { scanned, afterPartitions: pruned.afterPartitions, localPaths, shapes };
  const columns = unique([...spec.keys, ...spec.partitions, spec.orderBy]);
  await ctx.session.run(hitsSql(ctx.tables, spec, perFileScanSql(snapshot, scanned, result, columns)));
  return result;
}

/** Which files were read in full and which must be rewritten (ids into snapshot.files). */
export interface Classification {
  read: number[];
  rewrite: number[];
}

/**
 * Read in full the files with a non-stale hit (the target table) and classify their matched rows
 * (the actions table). When no file has one, neither table is created.
 */
export async function classifyTargets(ctx: MatchContext, hits: HitsResult, columns: readonly string[]): Promise<Classification> {
  const read = (await ctx.session.all(filesToReadSql(ctx.tables))).map((r) => Number(r['id']));
  if (read.length === 0) return { read, rewrite: [] };
  const files = new Map(read.map((id) => [id, hits.scanned.get(id)!]));
  await ctx.session.run(targetSql(ctx.tables, perFileScanSql(ctx.snapshot, files, hits)));
  await ctx.session.run(actionsSql(ctx.tables, ctx.spec, columns));
  const rewrite = (await ctx.session.all(filesToRewriteSql(ctx.tables))).map((r) => Number(r['id']));
  return { read, rewrite };
}

/**
 * One relation over the given files with each row's FILE_ID, and only `columns` (all when
 * omitted). Each file is its own scan so rows keep their file; DuckDB reads only the columns used.
 */
export function perFileScanSql(
  snapshot: Snapshot,
  files: ReadonlyMap<number, LiveFile>,
  read: Pick<HitsResult, 'localPaths' | 'shapes'>,
  columns?: readonly string[],
): string {
  const list = columns === undefined ? '*' : columns.map(ident).join(', ');
  const pathOf = (f: LiveFile) => read.localPaths.get(f.path)!;
  const shapeOf = (p: string) => read.shapes.get(p);
  const parts = [...files].map(
    ([id, file]) => `SELECT ${id} AS ${ident(FILE_ID)}, ${list} FROM (${scanSql(snapshot, [file], pathOf, shapeOf)})`,
  );
  if (parts.length === 0) return `SELECT CAST(NULL AS INTEGER) AS ${ident(FILE_ID)}, ${list} FROM (${emptyRelationSql(snapshot)})`;
  return parts.join('\nUNION ALL\n');
}

function unique(names: readonly string[]): string[] {
  return [...new Set(names)];
}
