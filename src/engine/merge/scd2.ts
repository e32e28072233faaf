/**
 * scd2 mode: the table keeps every version of a key (SCD Type 2), each with valid_from (its
 * orderBy), valid_to (the next version's orderBy, or the delete's; NULL while current) and
 * is_current. A batch may hold several versions of a key (one per orderBy value); the history of
 * each key it touches is rebuilt as if every row had arrived in order (./scd2-plan.ts) and only
 * the difference is written: a stored version that changes (closed, split, corrected) is marked
 * in a deletion vector (or its file rewritten, as a MERGE decides: ./write-mode.ts) and its new
 * copy written; new versions are written as new files.
 *
 *   prepare   the batch with the history columns (placeholders), cast to the table's schema
 *   prune     files that can hold a batch key (partition values, key stats)
 *   classify  the stored rows of the batch's keys, the events, the rebuilt versions, the diff;
 *             the rows to write checked against the table's constraints (./constraints.ts)
 *   write     new versions, rewritten files, deletion vectors → the commit request (MERGE)
 *
 * Tables with a change data feed or row tracking are refused (not built for this mode yet).
 */
import { physicalName } from '../../delta/column-mapping.js';
import { addFileFor, removeFileFor } from '../../delta/file-actions.js';
import type { LiveFile, Snapshot } from '../../delta/snapshot.js';
import { TableConfig } from '../../delta/table-config.js';
import { AppendOnlyTableError, MergeInputError } from '../../errors.js';
import { bytesOf, localDataFiles, writeAndUpload, type OutputOptions } from '../data-file-io.js';
import { loadDeletedRows, type DeletedRows } from '../deleted-rows.js';
import type { DuckSession } from '../duckdb.js';
import { describeRelation, type Relation } from '../relation.js';
import { inspectFiles, type FileShape } from '../scan.js';
import { ident } from '../sql.js';
import { Stopwatch } from '../stopwatch.js';
import { checkEveryRow } from './append.js';
import { checkConstraints } from './constraints.js';
import { writeDvChanges, type DvChange } from './dv-changes.js';
import { perFileScanSql } from './matches.js';
import type { WriteTarget } from './options.js';
import { pruneFiles, type TypedColumn } from './prune.js';
import { mergeMetrics, mergeRequest } from './request.js';
import {
  WRITE_PHASES,
  metricTimings,
  writeSummary,
  type MergeCounts,
  type StagedMerge,
  type WriteWatch,
} from './results.js';
import {
  addedRowsSql,
  addedSql,
  eventsSql,
  removedSql,
  scd2CountsSql,
  scd2DeletesSql,
  storedSql,
  versionsSql,
  type Scd2Spec,
  type Scd2Tables,
} from './scd2-plan.js';
import {
  metadataActions,
  newTableRequest,
  outputOptionsFor,
  prepareTarget,
  tableNames,
  type TargetTable,
} from './target.js';
import { FILE_ID, POS, tempTables } from './temp-names.js';
import { checkTombstones } from './tombstones.js';
import { checkNullKeys } from './validate.js';
import {
  createdTableConfiguration,
  resolvePolicy,
  writeModeOf,
  type DeletionVectorSetting,
} from './write-mode.js';

/** Options of `stageScd2`. */
export interface Scd2Options extends WriteTarget {
  keyColumns: string[];
  orderBy: string;
  /** Names of the history columns. */
  history: { validFrom: string; validTo: string; isCurrent: string };
  /** Columns whose change opens a version (default: every column but the key, orderBy, history and `untracked`). */
  trackColumns?: string[] | { except: string[] };
  /** Columns never tracked nor required (the job's lineage columns). */
  untracked?: string[];
  /** Columns that decide between two rows of a key at one orderBy (the later wins), when the table has them. */
  tieBreak?: string[];
  /** Columns left out of the compare that tells a stored version unchanged. */
  ignoreColumns?: string[];
  deleteWhen?: string;
  /** Relation of remembered deletes (key columns, TOMBSTONE_ORDER): they close versions too. */
  tombstones?: Relation;
  deletionVectors?: DeletionVectorSetting;
  rewriteBelowBytes?: number;
  rewriteDeletedShare?: number;
}

/** Stage the scd2 write of the batch; see the module comment. Dispose of the result. */
export async function stageScd2(opts: Scd2Options): Promise<StagedMerge> {
  const clock: WriteWatch = new Stopwatch(WRITE_PHASES, opts.signal);
  const temp = tempTables();
  const tables: Scd2Tables = {
    batch: temp.batch,
    stored: temp.target,
    events: temp.actions,
    versions: temp.changes,
    removed: temp.hits,
    added: temp.preimages,
  };
  const source = `${temp.batch}_history`;
  const names = [
    source,
    temp.files,
    tables.stored,
    tables.events,
    tables.versions,
    tables.removed,
    tables.added,
  ];
  const drop = async () => {
    await opts.session.run(`DROP VIEW IF EXISTS ${ident(temp.deletes)}`).catch(() => undefined);
    await opts.session.run(`DROP TABLE IF EXISTS ${ident(temp.batch)}`).catch(() => undefined);
    await opts.session.run(`DROP VIEW IF EXISTS ${ident(source)}`).catch(() => undefined);
    for (const n of names.slice(1))
      await opts.session.run(`DROP TABLE IF EXISTS ${ident(n)}`).catch(() => undefined);
  };
  const scratch = await opts.spool.child('scd2');
  try {
    const { snapshot } = opts;
    await historySource(opts, source);
    const target = await prepareTarget(
      opts.session,
      { ...opts, batch: source, declaredTypes: declaredHistoryTypes(opts) },
      {
        snapshot,
        batchTable: tables.batch,
        required: [
          { role: 'key', columns: opts.keyColumns },
          { role: 'orderBy', columns: [opts.orderBy] },
        ],
        ...(opts.deleteWhen === undefined ? {} : { deleteWhen: opts.deleteWhen }),
      },
    );
    if (target.config) refuseUnsupported(target.config, opts.storage.uri);
    const spec = scd2Spec(target, opts);
    await checkNullKeys(opts.session, tables.batch, spec.keys, target.batch.lineage);
    if (opts.tombstones !== undefined)
      await checkTombstones(opts.session, opts.tombstones, spec.keys);
    // The batch rows first, for a message naming their file and row; the rows written below are
    // checked too, as their history columns are computed and closed copies are no batch rows.
    const checks = await checkEveryRow(opts, target, tables.batch, { keys: spec.keys });
    clock.lap('prepare');
    const out = outputOptionsFor({ ...opts, spool: scratch }, target);
    const read = snapshot
      ? await readStored(opts, target, tables, spec, snapshot, temp.files)
      : await emptyStored(opts.session, tables, target);
    try {
      clock.lap('prune');
      const tomb =
        opts.tombstones === undefined ? null : `SELECT * FROM ${ident(opts.tombstones.name)}`;
      // One call for the chain: none of the tables is read back here, and each call is a round
      // trip to DuckDB's threads (as in the MERGE's classifyChanges).
      await opts.session.run(
        [
          eventsSql(tables, spec, tomb),
          versionsSql(tables, spec),
          removedSql(tables, spec),
          addedSql(tables, spec),
        ].join('; '),
      );
      const counts = await readScd2Counts(opts.session, tables, target.batch.rows);
      const table = target.config;
      if (table?.appendOnly && counts.updated + counts.deleted > 0)
        throw new AppendOnlyTableError(
          opts.storage.uri,
          'MERGE',
          `would close or change ${counts.updated + counts.deleted} stored versions`,
        );
      await checkConstraints(opts.session, checks, {
        sql: addedRowsSql(tables, spec),
        keys: spec.keys,
        shown: [spec.validFrom, spec.validTo],
        lineage: { file: false, row: false },
        uri: opts.storage.uri,
      });
      clock.lap('classify');
      const staged =
        snapshot === null
          ? await writeCreate(opts, target, tables, spec, out, counts, clock)
          : await writeExisting(opts, target, tables, spec, out, counts, clock, snapshot, read);
      const name = temp.deletes;
      await opts.session.run(
        `CREATE OR REPLACE TEMP VIEW ${ident(name)} AS ${scd2DeletesSql(tables, spec)}`,
      );
      const row = await opts.session.one(`SELECT count(*) AS n FROM ${ident(name)}`);
      const deletes = {
        relation: { name, dispose: () => opts.session.run(`DROP VIEW IF EXISTS ${ident(name)}`) },
        rows: Number(row?.['n'] ?? 0),
        keyColumns: [...spec.keys],
        tieColumns: [...spec.ties],
      };
      return { ...staged, deletes, dispose: drop };
    } finally {
      await read.deleted?.drop();
    }
  } catch (err) {
    await drop();
    throw err;
  } finally {
    await scratch.close();
  }
}

/** The batch with the history columns as placeholders (valid_from its orderBy, open, current), so the table's schema has them. */
async function historySource(opts: Scd2Options, view: string): Promise<void> {
  const columns = (await describeRelation(opts.session, opts.batch)).map((c) => c.name);
  const h = opts.history;
  for (const [field, name] of [
    ['validFrom', h.validFrom],
    ['validTo', h.validTo],
    ['isCurrent', h.isCurrent],
  ] as const) {
    const clash = columns.find((c) => c.toLowerCase() === name.toLowerCase());
    if (clash !== undefined)
      throw new MergeInputError(
        `[scd2] the batch has a column ${JSON.stringify(clash)}, which target.${field} names as a history column; rename one of them`,
        { context: { field, column: clash } },
      );
  }
  const order = columns.find((c) => c.toLowerCase() === opts.orderBy.toLowerCase());
  // A missing orderBy is refused by name when the target is prepared.
  const from = order === undefined ? 'CAST(NULL AS TIMESTAMP)' : `b.${ident(order)}`;
  await opts.session.run(
    `CREATE OR REPLACE TEMP VIEW ${ident(view)} AS SELECT b.*, ${from} AS ${ident(h.validFrom)}, ` +
      `CASE WHEN FALSE THEN ${from} END AS ${ident(h.validTo)}, TRUE AS ${ident(h.isCurrent)} FROM ${ident(opts.batch)} AS b`,
  );
}

/** The history's time columns take the orderBy's declared type (a naive timestamp's timestamp_ntz). */
function declaredHistoryTypes(opts: Scd2Options): Record<string, string> | undefined {
  const declared = opts.declaredTypes ?? {};
  const order = Object.entries(declared).find(
    ([n]) => n.toLowerCase() === opts.orderBy.toLowerCase(),
  );
  if (!order) return opts.declaredTypes ? { ...declared } : undefined;
  return { ...declared, [opts.history.validFrom]: order[1], [opts.history.validTo]: order[1] };
}

/** A change data feed and row tracking are not written by this mode yet: refused before anything is read. */
function refuseUnsupported(table: TableConfig, uri: string): void {
  const feature = table.recordsChangeData
    ? 'a change data feed'
    : table.rowTracking.assignsIds
      ? 'row tracking'
      : null;
  if (feature === null) return;
  throw new MergeInputError(
    `[scd2] table ${uri} records ${feature}, which scd2 mode does not write yet; use a table without it`,
    { context: { uri, feature } },
  );
}

/** Key, orderBy, history, tracked and tie columns in the table's spelling. */
function scd2Spec(target: TargetTable, opts: Scd2Options): Scd2Spec {
  const columns = target.plan.mappings.map((m) => m.target);
  const find = (name: string) => columns.find((c) => c.toLowerCase() === name.toLowerCase());
  const [validFrom, validTo, isCurrent] = [
    opts.history.validFrom,
    opts.history.validTo,
    opts.history.isCurrent,
  ].map((n) => {
    const found = find(n);
    if (found === undefined)
      throw new MergeInputError(
        `[scd2] table ${opts.storage.uri} has no column ${JSON.stringify(n)}: it was not written in scd2 mode (its columns: ${columns.join(', ')})`,
        { context: { uri: opts.storage.uri, column: n } },
      );
    return found;
  }) as [string, string, string];
  const keys = tableNames(target, opts.keyColumns);
  const orderBy = tableNames(target, [opts.orderBy])[0]!;
  const orderType = target.plan.mappings.find((m) => m.target === orderBy)!.duckType;
  const untracked = new Set(
    [...keys, orderBy, validFrom, validTo, isCurrent, ...(opts.untracked ?? [])].map((c) =>
      c.toLowerCase(),
    ),
  );
  const named = (list: readonly string[], field: string) =>
    list.map((n) => {
      const found = find(n);
      if (found === undefined)
        throw new MergeInputError(
          `[scd2] ${field} names ${JSON.stringify(n)}, which is not a column of the table or the batch (its columns: ${columns.join(', ')})`,
          { context: { field, column: n } },
        );
      return found;
    });
  const track = opts.trackColumns;
  const tracked = Array.isArray(track)
    ? named(track, 'trackColumns')
    : columns.filter((c) => {
        if (untracked.has(c.toLowerCase())) return false;
        const except = track ? named(track.except, 'trackColumns.except') : [];
        return !except.includes(c);
      });
  const ignored = new Set((opts.ignoreColumns ?? []).map((c) => c.toLowerCase()));
  const ties = (opts.tieBreak ?? []).flatMap((t) => {
    const found = find(t);
    return found === undefined ? [] : [found];
  });
  return {
    keys,
    orderBy,
    orderType,
    validFrom,
    validTo,
    isCurrent,
    tracked,
    ties,
    columns,
    compared: columns.filter((c) => !ignored.has(c.toLowerCase())),
  };
}

/** How the stored rows were read. */
interface StoredRead {
  scanned: Map<number, LiveFile>;
  localPaths: Map<string, string>;
  shapes: Map<string, FileShape>;
  deleted: DeletedRows | null;
}

/** The stored rows of the batch's keys: the candidate files after pruning, read with each row's file and position. */
async function readStored(
  opts: Scd2Options,
  target: TargetTable,
  tables: Scd2Tables,
  spec: Scd2Spec,
  snapshot: Snapshot,
  fileTable: string,
): Promise<StoredRead> {
  const mode = TableConfig.of(snapshot.protocol, snapshot.metadata).columnMapping;
  const typed = (names: readonly string[]): TypedColumn[] =>
    names.flatMap((name) => {
      const field = snapshot.schema.fields.find((f) => f.name === name);
      return field ? [{ name, type: field.type, key: physicalName(field, mode) }] : [];
    });
  const pruned = await pruneFiles(opts.session, {
    files: target.batch.rows === 0 ? [] : snapshot.files,
    fileTable,
    batchTable: tables.batch,
    partitions: typed(spec.keys.filter((k) => snapshot.partitionColumns.includes(k))),
    keys: typed(spec.keys.filter((k) => !snapshot.partitionColumns.includes(k))),
  });
  const scanned = new Map(pruned.candidates.map((id) => [id, snapshot.files[id]!]));
  const { paths: localPaths } = await localDataFiles([...scanned.values()], {
    storage: opts.storage,
    spool: opts.spool,
    folder: 'scd2-scan',
    concurrency: opts.concurrency ?? 8,
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
  const shapes =
    scanned.size > 0
      ? await inspectFiles(opts.session, [...localPaths.values()])
      : new Map<string, FileShape>();
  const deleted = await loadDeletedRows(snapshot.files, {
    session: opts.session,
    storage: opts.storage,
    only: scanned.keys(),
  });
  const read = { scanned, localPaths, shapes, deleted };
  // Stored files read in the evolved schema: columns the batch adds are NULL in them.
  const evolved = { ...snapshot, schema: target.schema };
  const scan = perFileScanSql(
    evolved,
    scanned,
    read,
    target.plan.mappings.map((m) => m.target),
  );
  await opts.session.run(storedSql(tables, spec, scan));
  return read;
}

/** No table yet: no stored rows. */
async function emptyStored(
  session: DuckSession,
  tables: Scd2Tables,
  target: TargetTable,
): Promise<StoredRead> {
  const cols = target.plan.mappings.map((m) => `CAST(NULL AS ${m.duckType}) AS ${ident(m.target)}`);
  await session.run(
    `CREATE OR REPLACE TEMP TABLE ${ident(tables.stored)} AS SELECT CAST(NULL AS INTEGER) AS ${ident(FILE_ID)}, ` +
      `CAST(NULL AS BIGINT) AS ${ident(POS)}, ${cols.join(', ')} LIMIT 0`,
  );
  return { scanned: new Map(), localPaths: new Map(), shapes: new Map(), deleted: null };
}

async function readScd2Counts(
  session: DuckSession,
  tables: Scd2Tables,
  sourceRows: number,
): Promise<MergeCounts> {
  const row = (await session.one(scd2CountsSql(tables))) ?? {};
  const n = (k: string) => Number(row[k] ?? 0);
  return {
    sourceRows,
    inserted: n('inserted'),
    updated: n('updated'),
    deleted: n('deleted'),
    skippedStale: 0,
    skippedByTombstone: 0,
    unchanged: n('unchanged'),
    deleteNotFound: 0,
    rowsCopied: 0,
  };
}

type Staged = Omit<StagedMerge, 'deletes' | 'dispose'>;

/** The table does not exist: the rebuilt versions are its first commit (with deletion vectors unless told not to). */
async function writeCreate(
  opts: Scd2Options,
  target: TargetTable,
  tables: Scd2Tables,
  spec: Scd2Spec,
  out: OutputOptions,
  counts: MergeCounts,
  clock: WriteWatch,
): Promise<Staged> {
  const added =
    counts.inserted > 0
      ? await writeAndUpload(out, addedRowsSql(tables, spec), 'insert', {
          targetFileRows: opts.targetFileRows,
          rowsAtMost: counts.inserted,
        })
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
    operationParameters: scd2Parameters(spec),
    operationMetrics: mergeMetrics({ added, removed: [], counts, timings: metricTimings(clock) }),
  });
  const summary = writeSummary(
    { ...counts, filesAdded: added.length, bytesAdded: bytesOf(added), created: true },
    clock,
  );
  return { request, changesTable: true, summary };
}

/** The table exists: removed rows marked (or their files rewritten), new versions written. */
async function writeExisting(
  opts: Scd2Options,
  target: TargetTable,
  tables: Scd2Tables,
  spec: Scd2Spec,
  out: OutputOptions,
  counts: MergeCounts,
  clock: WriteWatch,
  snapshot: Snapshot,
  read: StoredRead,
): Promise<Staged> {
  const now = Date.now();
  const config = TableConfig.of(snapshot.protocol, snapshot.metadata);
  const policy = resolvePolicy(opts.deletionVectors ?? 'auto', config, opts);
  const rows = await opts.session.all(
    `SELECT ${ident(FILE_ID)} AS id, list(${ident(POS)} ORDER BY ${ident(POS)}) AS positions FROM ${ident(tables.removed)} GROUP BY 1 ORDER BY 1`,
  );
  const rewrite = new Map<number, LiveFile>();
  const dv: DvChange[] = [];
  for (const r of rows) {
    const id = Number(r['id']);
    const file = read.scanned.get(id)!;
    const positions = (r['positions'] as unknown[]).map(Number);
    if (writeModeOf(file, positions.length, policy) === 'rewrite') rewrite.set(id, file);
    else dv.push({ id, file, positions, localPath: read.localPaths.get(file.path)! });
  }
  const evolved = { ...snapshot, schema: target.schema };
  const columns = spec.columns.map(ident).join(', ');
  // A rewritten file keeps every row but the removed ones (rows of other keys included).
  const kept =
    `SELECT ${columns} FROM (${perFileScanSql(evolved, rewrite, read)}) AS t ` +
    `ANTI JOIN ${ident(tables.removed)} AS x ON x.${ident(FILE_ID)} = t.${ident(FILE_ID)} AND x.${ident(POS)} = t.${ident(POS)}`;
  const order = [...spec.keys, spec.validFrom].map(ident).join(', ');
  const rewritten =
    rewrite.size > 0
      ? await writeAndUpload(out, `${kept} ORDER BY ${order}`, 'rewrite', {
          targetFileRows: opts.targetFileRows,
        })
      : [];
  const newRows = counts.inserted + counts.updated;
  const added =
    newRows > 0
      ? await writeAndUpload(out, addedRowsSql(tables, spec), 'insert', {
          targetFileRows: opts.targetFileRows,
          rowsAtMost: newRows,
        })
      : [];
  const dvs = await writeDvChanges(dv, {
    session: opts.session,
    storage: opts.storage,
    deleted: read.deleted,
    now,
  });
  clock.lap('write');
  const all = [...rewritten, ...added];
  const removed = [...rewrite.values(), ...dvs.emptied];
  const request = mergeRequest({
    readVersion: snapshot.version,
    spec: { keys: spec.keys, orderBy: spec.orderBy },
    ...(opts.deleteWhen === undefined ? {} : { deleteWhen: opts.deleteWhen }),
    actions: [
      ...metadataActions(target, policy.upgrade && dvs.dvFiles > 0),
      ...[...rewrite.values()].map((f) => ({
        remove: removeFileFor(f, { deletionTimestamp: now }),
      })),
      ...dvs.actions,
      ...all.map((f) => ({ add: addFileFor(f, { modificationTime: now }) })),
    ],
    added: all,
    removed,
    scanned: [...read.scanned.values()],
    partitions: 'all',
    appIds: opts.appIds ?? [],
    counts,
    dvFiles: dvs.dvFiles,
    timings: metricTimings(clock),
  });
  request.operationParameters = { ...request.operationParameters, ...scd2Parameters(spec) };
  const summary = writeSummary(
    {
      ...counts,
      filesAdded: all.length,
      filesRemoved: removed.length,
      bytesRewritten: bytesOf([...rewrite.values()]),
      bytesAdded: bytesOf(all),
      filesScanned: read.scanned.size,
      filesRead: read.scanned.size,
      filesWithNewDv: dvs.dvFiles,
      dvBytes: dvs.binBytes,
    },
    clock,
  );
  return { request, changesTable: request.actions.length > 0, summary };
}

/** What `history` shows of an scd2 commit, beside the MERGE's parameters. */
function scd2Parameters(spec: Scd2Spec): Record<string, unknown> {
  return {
    scd2: {
      key: spec.keys,
      orderBy: spec.orderBy,
      validFrom: spec.validFrom,
      validTo: spec.validTo,
      isCurrent: spec.isCurrent,
      tracked: spec.tracked,
    },
  };
}
