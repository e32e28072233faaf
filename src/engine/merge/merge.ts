/**
 * MERGE of a batch into a Delta table (see ./plan.ts for the SQL and its rules):
 *
 *   prepare   batch cast to the table schema (a view when creating); deleteWhen; key checks
 *   prune     key partition values, key min/max stats, key-column scan of the candidates → hits
 *             (a batch row matches the stored row of its key in whatever partition it sits);
 *             rows of keys without a stored row but with a newer tombstone → stale hits
 *   classify  full read of the files with a non-stale hit; stale/delete/unchanged/update per row
 *   check     the rows to store against the table's constraints (./constraints.ts)
 *   write     rewritten files (kept + updated rows, key order) and inserted rows, per partition,
 *             uploaded below the table root; on a table that records a change data feed, change
 *             files of every row changed when the MERGE updates or deletes (./change-files.ts)
 *   → a StagedMerge: the commit request (removes + adds + a schema change, or the table's
 *     creation), the row counts, and the batch's deletes as tombstones
 *
 * The engine never commits: the caller adds its own actions (the job's state, its tombstone
 * file) and commits the request in one version, then disposes of the staged MERGE. Only files
 * that hold an updated or deleted row are rewritten; all others keep their paths. A MERGE that
 * brings new columns (schemaEvolution 'addColumns') puts a metaData action in the request.
 */
import { clusteringColumns } from '../../delta/clustering.js';
import { physicalName } from '../../delta/column-mapping.js';
import { addFileFor, removeFileFor } from '../../delta/file-actions.js';
import type { LiveFile, Snapshot } from '../../delta/snapshot.js';
import { totalRecords } from '../../delta/stats.js';
import { TableConfig } from '../../delta/table-config.js';
import type { ReadSet } from '../../delta/transaction.js';
import { AppendOnlyTableError, MergeInputError } from '../../errors.js';
import { bytesOf, writeAndUpload, type OutputOptions } from '../data-file-io.js';
import type { DuckSession } from '../duckdb.js';
import { partitionValueStringSql } from '../partition-sql.js';
import { hiddenRowIdColumns, type MaterializedColumns } from '../row-ids.js';
import { ident } from '../sql.js';
import { Stopwatch } from '../stopwatch.js';
import { writeChangeData } from './change-files.js';
import { checkConstraints, prepareConstraintChecks, type ConstraintCheck } from './constraints.js';
import { writeDvChanges, type DvChange } from './dv-changes.js';
import { refuseEmptyPartitionStrings } from './partition-strings.js';
import {
  classifyChanges,
  findHits,
  touchedFiles,
  type HitsResult,
  type MatchContext,
} from './matches.js';
import type { MergeOptions } from './options.js';
import { readCounts } from './outcome.js';
import {
  changedFilesSql,
  changesSql,
  emptyMatchSql,
  newRowsSql,
  pruningPartitions,
  rewriteRelationSql,
  storedBatchRowsSql,
  type MatchSpec,
  type OutputLayout,
  type WriteMode,
} from './plan.js';
import { mergeMetrics, mergeParameters, mergeRequest, partitionTuples } from './request.js';
import {
  WRITE_PHASES,
  metricTimings,
  writeSummary,
  type MergeCounts,
  type StagedMerge,
  type WriteWatch,
} from './results.js';
import {
  metadataActions,
  newTableRequest,
  outputOptionsFor,
  prepareTarget,
  tableNames,
  type TargetTable,
} from './target.js';
import { dropAll, FILE_ID, POS, tempTables, type TempTables } from './temp-names.js';
import { batchDeletes, buryTombstoned, checkTombstones } from './tombstones.js';
import { checkDuplicateKeys, checkNullKeys } from './validate.js';
import { createdTableConfiguration, resolvePolicy, writeModeOf } from './write-mode.js';

/** Stage the MERGE of the batch into the table; see the module comment. Dispose of the result. */
export async function stageMerge(opts: MergeOptions): Promise<StagedMerge> {
  checkOptions(opts);
  const clock: WriteWatch = new Stopwatch(WRITE_PHASES, opts.signal);
  const tables = tempTables();
  // Downloads and written files are not needed once the data files are uploaded.
  const scratch = await opts.spool.child('merge');
  try {
    const { snapshot } = opts;
    const target = await prepareTarget(opts.session, opts, {
      snapshot,
      batchTable: tables.batch,
      required: [
        { role: 'key', columns: opts.keyColumns },
        { role: 'orderBy', columns: [opts.orderBy] },
        ...(opts.tieBreak && opts.tieBreak.length > 0
          ? [{ role: 'tieBreak', columns: opts.tieBreak }]
          : []),
      ],
      ...(opts.deleteWhen === undefined ? {} : { deleteWhen: opts.deleteWhen }),
      // Creating, the batch is read a few times (checks, counts, the insert): a view, not a copy.
      lazy: snapshot === null,
    });
    const tracking = target.config?.rowTracking.materialized ?? null;
    const spec = { ...matchSpec(target, opts), rowIds: tracking !== null };
    const constraints = await prepareConstraintChecks(opts.session, {
      schema: target.schema,
      metadata: snapshot?.metadata ?? { configuration: opts.tableProperties ?? {} },
      uri: opts.storage.uri,
      relation: tables.batch,
    });
    await checkNullKeys(opts.session, tables.batch, spec.keys, target.batch.lineage);
    if (!opts.keysUnique)
      await checkDuplicateKeys(opts.session, tables.batch, spec.keys, target.batch.lineage);
    if (opts.tombstones !== undefined)
      await checkTombstones(opts.session, opts.tombstones, spec.keys);
    clock.lap('prepare');
    const out = {
      ...outputOptionsFor({ ...opts, spool: scratch }, target),
      ...(tracking ? { hiddenColumns: hiddenRowIdColumns(tracking) } : {}),
    };
    // New files follow a clustered table's clustering columns, else the key: files stay prunable by their stats.
    const clustering = snapshot ? clusteringColumns(snapshot) : [];
    const layout: OutputLayout = {
      order: clustering.length > 0 ? unique([...clustering, ...spec.keys]) : spec.keys,
      rowIds: tracking !== null,
    };
    const run = { opts, tables, target, spec, constraints, out, layout, tracking, clock };
    const staged = snapshot === null ? await stageCreate(run) : await stageExisting(run, snapshot);
    const deletes = await batchDeletes(opts.session, tables, spec, opts.deleteWhen);
    return { ...staged, deletes, dispose: () => dropAll(opts.session, tables) };
  } catch (err) {
    await dropAll(opts.session, tables);
    throw err;
  } finally {
    await scratch.close();
  }
}

/** State shared by the two paths. */
interface MergeRun {
  opts: MergeOptions;
  tables: TempTables;
  target: TargetTable;
  spec: MatchSpec;
  constraints: readonly ConstraintCheck[];
  out: OutputOptions;
  /** Order of the rows written, and whether they carry stable row ids. */
  layout: OutputLayout;
  /** The hidden columns keeping moved rows' ids, when the table preserves them (row tracking enabled). */
  tracking: MaterializedColumns | null;
  clock: WriteWatch;
}

type Staged = Omit<StagedMerge, 'deletes' | 'dispose'>;

/** The table does not exist: its creation with the batch's non-deleted rows as version 0. */
async function stageCreate(run: MergeRun): Promise<Staged> {
  const { opts, tables, target, spec, out, layout, clock } = run;
  await opts.session.run(emptyMatchSql(tables, `SELECT * FROM (${emptyScanSql(target)}) LIMIT 0`));
  if (opts.tombstones !== undefined)
    await buryTombstoned(opts.session, tables, spec, opts.tombstones);
  await opts.session.run(changesSql(tables));
  const counts = await readCounts(opts.session, tables, target.batch.rows);
  await checkStoredRows(run);
  clock.lap('prune');
  clock.lap('classify');
  const columns = target.plan.mappings.map((m) => m.target);
  const sizing = { targetFileRows: opts.targetFileRows, rowsAtMost: counts.inserted };
  const added =
    counts.inserted > 0
      ? await writeAndUpload(out, newRowsSql(tables, columns, layout), 'insert', sizing)
      : [];
  clock.lap('write');
  const now = Date.now();
  const configuration = createdTableConfiguration(
    opts.deletionVectors,
    target.properties,
    opts.tableProperties,
  );
  const request = newTableRequest(target, {
    configuration,
    added,
    now,
    operationParameters: mergeParameters(spec, opts.deleteWhen),
    operationMetrics: mergeMetrics({ added, removed: [], counts, timings: metricTimings(clock) }),
  });
  const summary = writeSummary(
    { ...counts, filesAdded: added.length, bytesAdded: bytesOf(added), created: true },
    clock,
  );
  return { request, changesTable: true, summary };
}

/** The table exists: find, classify, write the changes (rewrites, deletion vectors, new rows). */
async function stageExisting(run: MergeRun, snapshot: Snapshot): Promise<Staged> {
  const { opts, tables, target, spec, out, clock } = run;
  const ctx: MatchContext = {
    ...(run.tracking ? { rowIds: run.tracking } : {}),
    session: opts.session,
    storage: opts.storage,
    // With new columns, stored files are read in the evolved schema (they lack them: NULL).
    snapshot: target.metadata ? { ...snapshot, schema: target.schema } : snapshot,
    tables,
    spec,
    batchRows: target.batch.rows,
    spool: out.spool,
    concurrency: out.concurrency,
    ...(opts.signal ? { signal: opts.signal } : {}),
  };
  const read = TableConfig.of(snapshot.protocol, snapshot.metadata);
  const policy = resolvePolicy(opts.deletionVectors ?? 'auto', read, opts);
  const hits = await findHits(ctx);
  try {
    if (opts.tombstones !== undefined)
      await buryTombstoned(opts.session, tables, spec, opts.tombstones);
    clock.lap('prune');
    // What tells an update from an unchanged row: every column but those the caller ignores.
    const ignored = new Set(
      tableNames(target, opts.ignoreColumns ?? []).map((c) => c.toLowerCase()),
    );
    const compared = target.plan.mappings
      .map((m) => m.target)
      .filter((c) => !ignored.has(c.toLowerCase()));
    const touched = await touchedFiles(ctx, hits);
    const modes = new Map(touched.map((t) => [t.id, writeModeOf(t.file, t.touched, policy)]));
    await classifyChanges(ctx, hits, touched, modes, compared);
    const counts = await readCounts(opts.session, tables, target.batch.rows);
    refuseChangesToAppendOnly(read, counts, opts.storage.uri);
    const changed = await changedFiles(opts.session, tables, hits, modes);
    await checkStoredRows(run);
    clock.lap('classify');
    const now = Date.now();
    // Change-feed readers take a commit that only adds rows as inserts; updates and deletes need change files.
    const recordChanges = target.config!.recordsChangeData && counts.updated + counts.deleted > 0;
    const written = await writeChanges(run, {
      changed,
      counts,
      hits,
      now,
      snapshot: ctx.snapshot,
      recordChanges,
    });
    clock.lap('write');
    const schemaChange = metadataActions(target, policy.upgrade && written.dv.dvFiles > 0);
    const removed = [...changed.rewrite, ...written.dv.emptied];
    const request = mergeRequest({
      readVersion: snapshot.version,
      spec,
      ...(opts.deleteWhen === undefined ? {} : { deleteWhen: opts.deleteWhen }),
      actions: [
        ...schemaChange,
        ...changed.rewrite.map((f) => ({ remove: removeFileFor(f, { deletionTimestamp: now }) })),
        ...written.dv.actions,
        ...written.added.map((f) => ({ add: addFileFor(f, { modificationTime: now }) })),
        ...written.changeData.actions,
      ],
      added: written.added,
      removed,
      scanned: [...hits.scanned.values()],
      partitions: await readPartitions(opts.session, tables, target, spec),
      appIds: opts.appIds ?? [],
      counts,
      dvFiles: written.dv.dvFiles,
      changeFiles: written.changeData.files,
      timings: metricTimings(clock),
    });
    const summary = writeSummary(
      {
        ...counts,
        filesAdded: written.added.length,
        filesRemoved: removed.length,
        bytesRewritten: bytesOf(changed.rewrite),
        bytesAdded: bytesOf(written.added),
        filesScanned: hits.scanned.size,
        filesRead: changed.read,
        filesWithNewDv: written.dv.dvFiles,
        dvBytes: written.dv.binBytes,
        changeFilesAdded: written.changeData.files.length,
      },
      clock,
    );
    return { request, changesTable: request.actions.length > 0, summary };
  } finally {
    await hits.deleted?.drop();
  }
}

/** The files this MERGE changes, by write mode. */
interface ChangedFiles {
  rewrite: LiveFile[];
  dv: DvChange[];
  /** Files read in full (the 'rewrite' files touched, changed or not). */
  read: number;
}

async function changedFiles(
  session: DuckSession,
  tables: TempTables,
  hits: HitsResult,
  modes: ReadonlyMap<number, WriteMode>,
): Promise<ChangedFiles> {
  const rows = await session.all(changedFilesSql(tables));
  const rewrite: LiveFile[] = [];
  const dv: DvChange[] = [];
  for (const r of rows) {
    const id = Number(r['id']);
    const file = hits.scanned.get(id)!;
    if (r['mode'] === 'rewrite') rewrite.push(file);
    else
      dv.push({
        id,
        file,
        positions: (r['positions'] as unknown[]).map(Number),
        localPath: hits.localPaths.get(file.path)!,
      });
  }
  const read = [...modes.values()].filter((mode) => mode === 'rewrite').length;
  return { rewrite, dv, read };
}

/** What the write phase of an existing table works from. */
interface WriteInput {
  changed: ChangedFiles;
  counts: MergeCounts;
  hits: HitsResult;
  now: number;
  /** The snapshot the MERGE read, in the evolved schema. */
  snapshot: Snapshot;
  /** Write change data files (the table records a change data feed and rows are updated or deleted). */
  recordChanges: boolean;
}

/**
 * Write the replacements of the changed 'rewrite' files (their kept rows plus updated rows; about as
 * many rows per file as the largest of them), the new rows (inserts, and the new versions of rows
 * updated in 'dv' files), each per partition in key order, the new deletion vectors, and the
 * change data files when asked.
 */
async function writeChanges(run: MergeRun, input: WriteInput) {
  const { opts, tables, target, spec, out, layout } = run;
  const { changed, counts, hits } = input;
  const columns = target.plan.mappings.map((m) => m.target);
  // Every updated row replaces a stored one and a delete drops one: the rewrite is no bigger.
  const rewriteSizing = {
    targetFileRows: opts.targetFileRows ?? maxRecords(changed.rewrite),
    rowsAtMost: totalRecords(changed.rewrite),
  };
  const rewritten =
    changed.rewrite.length > 0
      ? await writeAndUpload(
          out,
          rewriteRelationSql(tables, columns, layout),
          'rewrite',
          rewriteSizing,
        )
      : [];
  // At most: the inserts, and the updated rows (those of 'dv' files are written here).
  const newRows = counts.inserted + counts.updated;
  const insertSizing = { targetFileRows: opts.targetFileRows, rowsAtMost: newRows };
  const added =
    newRows > 0
      ? await writeAndUpload(out, newRowsSql(tables, columns, layout), 'insert', insertSizing)
      : [];
  const changeData = input.recordChanges
    ? await writeChangeData(out, {
        tables,
        columns,
        keys: spec.keys,
        snapshot: input.snapshot,
        dvFiles: new Map(changed.dv.map((d) => [d.id, d.file])),
        hits,
        targetFileRows: opts.targetFileRows,
      })
    : { files: [], actions: [] };
  const dv = await writeDvChanges(changed.dv, {
    session: opts.session,
    storage: opts.storage,
    deleted: hits.deleted,
    now: input.now,
  });
  return { added: [...rewritten, ...added], dv, changeData };
}

/**
 * Fail before anything is written when a row to store breaks a table constraint (./constraints.ts)
 * or holds a value a partition column cannot keep (./partition-strings.ts).
 */
async function checkStoredRows(run: MergeRun): Promise<void> {
  const { opts, tables, target, spec } = run;
  const rows = {
    sql: storedBatchRowsSql(tables),
    keys: spec.keys,
    lineage: target.batch.lineage,
    uri: opts.storage.uri,
  };
  await refuseEmptyPartitionStrings(opts.session, {
    ...rows,
    schema: target.schema,
    partitionColumns: target.partitionColumns,
  });
  await checkConstraints(opts.session, run.constraints, rows);
}

/**
 * An append-only table (`delta.appendOnly = true`) takes new rows only: a MERGE that would update
 * or delete stored rows is refused here, after matching and before any data file is written.
 */
function refuseChangesToAppendOnly(table: TableConfig, counts: MergeCounts, uri: string): void {
  if (!table.appendOnly || counts.updated + counts.deleted === 0) return;
  throw new AppendOnlyTableError(
    uri,
    'MERGE',
    `would update ${counts.updated} and delete ${counts.deleted} stored rows`,
  );
}

function unique(names: readonly string[]): string[] {
  return [...new Set(names)];
}

/** Key, orderBy and tie columns in the table's spelling. */
function matchSpec(target: TargetTable, opts: MergeOptions): MatchSpec {
  const ties = opts.tieBreak ?? [];
  return {
    keys: tableNames(target, opts.keyColumns),
    orderBy: tableNames(target, [opts.orderBy])[0]!,
    ...(ties.length > 0 ? { ties: tableNames(target, ties) } : {}),
  };
}

function checkOptions(opts: MergeOptions): void {
  if (opts.keyColumns.length === 0) {
    throw new MergeInputError(
      '[merge] keyColumns is empty: a MERGE needs at least one key column (use append mode for no key)',
      {
        context: { field: 'keyColumns' },
      },
    );
  }
  if (opts.orderBy.trim() === '')
    throw new MergeInputError('[merge] orderBy is empty', { context: { field: 'orderBy' } });
}

/** The read set's partitions: the batch's partition tuples, or the whole table. */
async function readPartitions(
  session: DuckSession,
  tables: TempTables,
  target: TargetTable,
  spec: MatchSpec,
): Promise<ReadSet['partitions']> {
  const columns = pruningPartitions(spec, target.partitionColumns);
  if (columns.length === 0) return 'all';
  const fields = columns.map((p) => target.schema.fields.find((f) => f.name === p)!);
  const cols = fields.map(
    (f, i) => `${partitionValueStringSql(`b.${ident(f.name)}`, f.type, f.name)} AS p${i}`,
  );
  const rows = await session.all(
    `SELECT DISTINCT ${cols.join(', ')} FROM ${ident(tables.batch)} AS b`,
  );
  // Conflict checks compare these with the winners' partitionValues, keyed like the log (physical names).
  return partitionTuples(
    fields.map((f) => physicalName(f, target.columnMapping)),
    rows,
  );
}

/** A relation with the table's columns and no rows. */
function emptyScanSql(target: TargetTable): string {
  const cols = target.plan.mappings.map((m) => `CAST(NULL AS ${m.duckType}) AS ${ident(m.target)}`);
  return `SELECT CAST(NULL AS INTEGER) AS ${ident(FILE_ID)}, CAST(NULL AS BIGINT) AS ${ident(POS)}, ${cols.join(', ')}`;
}

/** The largest file's row count, so rewrites keep roughly the table's file size. */
function maxRecords(
  files: readonly { parsedStats: { numRecords?: number } | null }[],
): number | undefined {
  const counts = files.map((f) => f.parsedStats?.numRecords ?? 0).filter((n) => n > 0);
  return counts.length > 0 ? Math.max(...counts) : undefined;
}
