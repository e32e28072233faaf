/**
 * Append mode, exactly once per file version: what the table already holds of the batch's source
 * files, found by the lineage column (`_source_file`), and what the append does with it:
 *
 *   'replace' (onOverwrite: reload)  the stored rows of a file are deleted in the commit that
 *                                    appends its new version (deletion vectors where the table
 *                                    takes them, else the file is rewritten without them); when
 *                                    they equal the new rows (ignoring the file's modification
 *                                    time: a `touch`), the file is unchanged and neither is written;
 *   'keep'    (onOverwrite: ignore)  a file the table holds is not appended again.
 *
 * Only the source files the caller names are looked up (those it knows, or cannot rule out, were
 * loaded before), so an ordinary append still reads nothing of the table. Candidates are pruned by
 * partition and by the min/max statistics of the lineage column, then that column alone is scanned.
 */
import type { Action } from '../../delta/actions.js';
import { physicalName } from '../../delta/column-mapping.js';
import { addFileFor, removeFileFor } from '../../delta/file-actions.js';
import type { LiveFile, Snapshot } from '../../delta/snapshot.js';
import { totalRecords } from '../../delta/stats.js';
import { TableConfig, type RowTracking } from '../../delta/table-config.js';
import { AppendOnlyTableError, MergeInputError } from '../../errors.js';
import { localDataFiles, writeAndUpload, type OutputOptions } from '../data-file-io.js';
import type { WrittenFile } from '../data-files.js';
import { loadDeletedRows } from '../deleted-rows.js';
import type { DuckSession } from '../duckdb.js';
import { hiddenRowIdColumns, STABLE_ROW_ID, STABLE_ROW_VERSION } from '../row-ids.js';
import { inspectFiles } from '../scan.js';
import { ident, str } from '../sql.js';
import { writeDvChanges, type DvChange } from './dv-changes.js';
import { perFileScanSql } from './matches.js';
import type { ExistingSources } from './options.js';
import { resolvePolicy, writeModeOf } from './write-mode.js';
import { pruneFiles } from './prune.js';
import type { TargetTable } from './target.js';
import { FILE_ID, POS, BATCH_SOURCE_FILE } from './temp-names.js';

/** What the lookup found and did; its actions go into the append's commit. */
export interface SourceReplacement {
  /** Files whose earlier rows this commit deletes. */
  replaced: string[];
  /** Files the table holds that are not appended again (unchanged, or kept under 'keep'). */
  alreadyHeld: string[];
  rowsDeleted: number;
  /** The table takes its first deletion vectors in this commit (see metadataActions, ./target.ts). */
  enableDvs: boolean;
  /** removes, DV adds (with the removes of the files' old versions), rewritten files' adds. */
  actions: Action[];
  /** Paths of the data files scanned (the commit's read set: a concurrent remove conflicts). */
  scanned: string[];
  added: WrittenFile[];
  removed: LiveFile[];
  dvFiles: number;
  dvBytes: number;
}

/** The context of the append this runs in. */
export interface SourceLookup {
  session: DuckSession;
  snapshot: Snapshot;
  target: TargetTable;
  /** The prepared batch (a temp table: rows of files not appended are deleted from it). */
  batch: string;
  /** Name of the lineage column in the table. */
  sourceColumn: string;
  out: OutputOptions;
  existing: ExistingSources;
  uri: string;
  now: number;
  signal?: AbortSignal;
}

let sequence = 0;

/** Nothing found, nothing done. */
function none(): SourceReplacement {
  return {
    replaced: [],
    alreadyHeld: [],
    rowsDeleted: 0,
    enableDvs: false,
    actions: [],
    scanned: [],
    added: [],
    removed: [],
    dvFiles: 0,
    dvBytes: 0,
  };
}

/** Look the named source files up in the table and stage what the append does with them. */
export async function stageSourceReplacement(ctx: SourceLookup): Promise<SourceReplacement> {
  const { session, snapshot } = ctx;
  const field = snapshot.schema.fields.find(
    (f) => f.name.toLowerCase() === ctx.sourceColumn.toLowerCase(),
  );
  // A table without the lineage column (not written by tidemark) cannot tell its files apart.
  if (
    field === undefined ||
    !ctx.target.batch.lineage.file ||
    ctx.existing.files.length === 0 ||
    snapshot.files.length === 0
  )
    return none();
  const n = ++sequence;
  const t = {
    sources: `__tm_sources_${n}`,
    files: `__tm_source_files_${n}`,
    hits: `__tm_source_hits_${n}`,
    stored: `__tm_source_stored_${n}`,
  };
  const column = field.name;
  try {
    const wanted = namesHeld(ctx.existing)
      .map(([file, held]) => `(${str(file)}, ${str(held)})`)
      .join(', ');
    // The files named that are in this batch, with each name the table may hold them under (the
    // table's lineage column, VARCHAR) and their name in the batch.
    await session.run(
      `CREATE TEMP TABLE ${ident(t.sources)} AS SELECT DISTINCT w.held AS ${ident(column)}, w.file AS ${ident(BATCH_SOURCE_FILE)} ` +
        `FROM (VALUES ${wanted}) AS w(file, held) WHERE w.file IN (SELECT b.${ident(BATCH_SOURCE_FILE)} FROM ${ident(ctx.batch)} AS b)`,
    );
    const config = TableConfig.of(snapshot.protocol, snapshot.metadata);
    const mode = config.columnMapping;
    const pruned = await pruneFiles(session, {
      files: snapshot.files,
      fileTable: t.files,
      batchTable: t.sources,
      partitions: [],
      keys: [{ name: column, type: field.type, key: physicalName(field, mode) }],
    });
    if (pruned.candidates.length === 0) return none();
    const scanned = new Map(pruned.candidates.map((id) => [id, snapshot.files[id]!]));
    const { paths: localPaths } = await localDataFiles([...scanned.values()], {
      storage: ctx.out.storage,
      spool: ctx.out.spool,
      folder: 'sources',
      concurrency: ctx.out.concurrency,
      ...(ctx.signal ? { signal: ctx.signal } : {}),
    });
    const shapes = await inspectFiles(session, [...localPaths.values()]);
    const deleted = await loadDeletedRows(snapshot.files, {
      session,
      storage: ctx.out.storage,
      only: scanned.keys(),
    });
    try {
      const tracking = ctx.target.config!.rowTracking.materialized;
      const evolved: Snapshot = ctx.target.metadata
        ? { ...snapshot, schema: ctx.target.schema }
        : snapshot;
      const read = { localPaths, shapes, deleted, ...(tracking ? { rowIds: tracking } : {}) };
      // A hit's `src` is the batch's name of the file whose earlier row it is.
      await session.run(
        `CREATE TEMP TABLE ${ident(t.hits)} AS SELECT s.${ident(FILE_ID)} AS fid, s.${ident(POS)} AS pos, m.${ident(BATCH_SOURCE_FILE)} AS src ` +
          `FROM (${perFileScanSql(snapshot, scanned, read, [column])}) AS s JOIN ${ident(t.sources)} AS m ON m.${ident(column)} = s.${ident(column)}`,
      );
      const held = (
        await session.all(`SELECT DISTINCT src FROM ${ident(t.hits)} ORDER BY src`)
      ).map((r) => String(r['src']));
      const result = { ...none(), scanned: [...scanned.values()].map((f) => f.path) };
      if (held.length === 0) return result;
      if (ctx.existing.onExisting === 'keep') {
        await dropFromBatch(ctx, held);
        return { ...result, alreadyHeld: held };
      }
      const hitFiles = new Map(
        (await session.all(`SELECT DISTINCT fid FROM ${ident(t.hits)}`)).map((r) => [
          Number(r['fid']),
          scanned.get(Number(r['fid']))!,
        ]),
      );
      const changed = await changedSources(ctx, t, perFileScanSql(evolved, hitFiles, read), held);
      const unchanged = held.filter((s) => !changed.includes(s));
      await dropFromBatch(ctx, unchanged);
      if (changed.length === 0) return { ...result, alreadyHeld: unchanged };
      refuseUnsupported(ctx, changed);
      const deletes = await deletesOf(ctx, t.hits, changed, hitFiles, localPaths);
      const policy = resolvePolicy(ctx.existing.deletionVectors, config, ctx.existing);
      const modes = deletes.map((d) => ({
        ...d,
        mode: writeModeOf(d.file, d.positions.length, policy),
      }));
      const dv = await writeDvChanges(
        modes.filter((m) => m.mode === 'dv'),
        { session, storage: ctx.out.storage, deleted, now: ctx.now },
      );
      const rewrite = new Map(modes.filter((m) => m.mode === 'rewrite').map((m) => [m.id, m.file]));
      const added = await rewriteWithout(ctx, { t, read, evolved, rewrite, tracking, changed });
      const rewritten = [...rewrite.values()];
      return {
        replaced: changed,
        alreadyHeld: unchanged,
        rowsDeleted: deletes.reduce((sum, d) => sum + d.positions.length, 0),
        enableDvs: policy.upgrade && dv.dvFiles > 0,
        actions: [
          ...rewritten.map((f) => ({ remove: removeFileFor(f, { deletionTimestamp: ctx.now }) })),
          ...dv.actions,
          ...added.map((f) => ({ add: addFileFor(f, { modificationTime: ctx.now }) })),
        ],
        scanned: result.scanned,
        added,
        removed: [...rewritten, ...dv.emptied],
        dvFiles: dv.dvFiles,
        dvBytes: dv.binBytes,
      };
    } finally {
      await deleted?.drop();
    }
  } finally {
    for (const name of Object.values(t)) await session.run(`DROP TABLE IF EXISTS ${ident(name)}`);
  }
}

/**
 * Each file to look up with each name the table may hold it under: its own, and its former names
 * (those that are not the name of another file looked up).
 */
function namesHeld(existing: ExistingSources): Array<[string, string]> {
  const own = new Set(existing.files);
  return existing.files.flatMap((f) => [
    [f, f] as [string, string],
    ...(existing.formerNames?.get(f) ?? [])
      .filter((n) => !own.has(n))
      .map((n) => [f, n] as [string, string]),
  ]);
}

/** Remove the rows of `sources` from the batch: they are not appended. */
async function dropFromBatch(ctx: SourceLookup, sources: readonly string[]): Promise<void> {
  if (sources.length === 0) return;
  await ctx.session.run(
    `DELETE FROM ${ident(ctx.batch)} WHERE ${ident(BATCH_SOURCE_FILE)} IN (${sources.map(str).join(', ')})`,
  );
}

/**
 * The held sources whose stored rows differ from the batch's (as multisets over the table's
 * columns, less the ignored ones): a file rewritten with the same rows is unchanged.
 */
async function changedSources(
  ctx: SourceLookup,
  t: { stored: string; sources: string },
  storedSql: string,
  held: readonly string[],
): Promise<string[]> {
  const ignored = new Set(ctx.existing.ignoreColumns.map((c) => c.toLowerCase()));
  const columns = ctx.target.plan.mappings
    .map((m) => m.target)
    .filter((c) => !ignored.has(c.toLowerCase()));
  const sourceCol = ctx.sourceColumn.toLowerCase();
  const list = columns.map(ident).join(', ');
  const inHeld = held.map(str).join(', ');
  const srcColumn = columns.find((c) => c.toLowerCase() === sourceCol);
  if (srcColumn === undefined) return [...held];
  // Stored rows under the batch's name of their file, whatever name they were loaded under.
  const storedList = columns
    .map((c) =>
      c === srcColumn
        ? `m.${ident(BATCH_SOURCE_FILE)} AS ${ident(c)}`
        : `s.${ident(c)} AS ${ident(c)}`,
    )
    .join(', ');
  await ctx.session.run(
    `CREATE TEMP TABLE ${ident(t.stored)} AS SELECT ${storedList} FROM (${storedSql}) AS s ` +
      `JOIN ${ident(t.sources)} AS m ON m.${ident(srcColumn)} = s.${ident(srcColumn)} WHERE m.${ident(BATCH_SOURCE_FILE)} IN (${inHeld})`,
  );
  const fresh = `SELECT ${list} FROM ${ident(ctx.batch)} WHERE ${ident(BATCH_SOURCE_FILE)} IN (${inHeld})`;
  const stored = `SELECT ${list} FROM ${ident(t.stored)}`;
  const rows = await ctx.session.all(
    `SELECT DISTINCT ${ident(srcColumn)} AS src FROM ((${stored} EXCEPT ALL ${fresh}) UNION ALL (${fresh} EXCEPT ALL ${stored})) ORDER BY 1`,
  );
  return rows.map((r) => String(r['src']));
}

/** Per data file, the positions of the stored rows of the changed sources. */
async function deletesOf(
  ctx: SourceLookup,
  hits: string,
  changed: readonly string[],
  files: ReadonlyMap<number, LiveFile>,
  localPaths: ReadonlyMap<string, string>,
): Promise<DvChange[]> {
  const rows = await ctx.session.all(
    `SELECT fid, list(pos ORDER BY pos) AS positions FROM ${ident(hits)} WHERE src IN (${changed.map(str).join(', ')}) GROUP BY fid ORDER BY fid`,
  );
  return rows.map((r) => {
    const file = files.get(Number(r['fid']))!;
    return {
      id: Number(r['fid']),
      file,
      positions: (r['positions'] as unknown[]).map(Number),
      localPath: localPaths.get(file.path)!,
    };
  });
}

/** The files to rewrite, written again without the rows of the changed sources. */
async function rewriteWithout(
  ctx: SourceLookup,
  w: {
    t: { hits: string };
    read: Parameters<typeof perFileScanSql>[2];
    evolved: Snapshot;
    rewrite: ReadonlyMap<number, LiveFile>;
    tracking: RowTracking['materialized'];
    changed: readonly string[];
  },
): Promise<WrittenFile[]> {
  if (w.rewrite.size === 0) return [];
  const columns = ctx.target.plan.mappings.map((m) => m.target);
  const cols = [...columns, ...(w.tracking ? [STABLE_ROW_ID, STABLE_ROW_VERSION] : [])]
    .map((c) => `s.${ident(c)}`)
    .join(', ');
  const gone = `SELECT fid, pos FROM ${ident(w.t.hits)} WHERE src IN (${w.changed.map(str).join(', ')})`;
  const sql =
    `SELECT ${cols} FROM (${perFileScanSql(w.evolved, w.rewrite, w.read)}) AS s ` +
    `ANTI JOIN (${gone}) AS g ON g.fid = s.${ident(FILE_ID)} AND g.pos = s.${ident(POS)} ORDER BY s.${ident(FILE_ID)}, s.${ident(POS)}`;
  const out = w.tracking ? { ...ctx.out, hiddenColumns: hiddenRowIdColumns(w.tracking) } : ctx.out;
  const files = [...w.rewrite.values()];
  const maxRows = Math.max(0, ...files.map((f) => f.parsedStats?.numRecords ?? 0));
  return writeAndUpload(out, sql, 'rewrite', {
    ...(maxRows > 0 ? { targetFileRows: maxRows } : {}),
    rowsAtMost: totalRecords(files),
  });
}

/**
 * Deleting stored rows is refused where it cannot be done faithfully: an append-only table takes no
 * deletes, and a change data feed would need change files for them (not written by append).
 */
function refuseUnsupported(ctx: SourceLookup, changed: readonly string[]): void {
  const table = ctx.target.config!;
  const what = `would replace the earlier rows of ${changed.length} overwritten source file(s) (${changed.slice(0, 3).join(', ')})`;
  if (table.appendOnly) throw new AppendOnlyTableError(ctx.uri, 'append', what);
  if (table.recordsChangeData) {
    throw new MergeInputError(
      `[append] table ${ctx.uri} records a change data feed; this append ${what}, which tidemark does not record in the feed: ` +
        'set source.discover.onOverwrite: ignore, or load the job with target.mode: merge',
      { kind: 'usage', context: { uri: ctx.uri, key: changed[0], setting: 'onOverwrite' } },
    );
  }
}
