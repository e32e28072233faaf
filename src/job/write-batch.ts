/**
 * Writing one loaded batch into the table with the state after it, in ONE commit (the commit point):
 *
 *   stage the write (engine: MERGE or append; data files uploaded)   ── afterWrite hook
 *   merge mode: write the batch's deletes as a tombstone file (./tombstones/files.ts)
 *   commit the staged actions + the owner's state (txn + domainMetadata)  ── beforeCommit hook
 *
 * A batch with no rows (empty files) commits only the state. The state's owner is the job by
 * default; a backfill of the job commits its own state under its own appId instead
 * (`WriteBatchOptions.owner`, see ./backfill/state.ts). Each owner keeps its own tombstones, and a
 * MERGE buries rows older than the deletes of either.
 */
import { scd2Columns, type JobConfig } from '../config/schema.js';
import type { Action } from '../delta/actions.js';
import { ENABLE_CHANGE_DATA_FEED } from '../delta/change-data.js';
import type { Snapshot } from '../delta/snapshot.js';
import type { KeyBound } from '../delta/key-bounds.js';
import type { CommitRequest } from '../delta/transaction.js';
import { batchKeyBounds } from '../engine/batch-key-bounds.js';
import { SOURCE_FILE, SOURCE_MODIFIED, SOURCE_ROW } from '../engine/load.js';
import {
  stageAppend,
  stageMerge,
  stageReplace,
  stageScd2,
  writeSummary,
  type StagedWrite,
  type WriteSummary,
  type WriteTarget,
} from '../engine/merge/index.js';
import type { DiscoveredFile } from '../discovery/index.js';
import type { LoadedBatch } from './load-batch.js';
import type { PhaseTimer } from './phases.js';
import type { JobScope } from './scope.js';
import { extractBatch, scd2Extract, type ExtractBatch } from './snapshot-deletes.js';
import { unionTombstones } from './tombstones/union.js';
import type { TombstoneState } from './tombstones/plan.js';
import type { LedgerState } from './ledger.js';

/** A state committed with a batch: it lists its owner's tombstone files. */
export interface OwnedState {
  tombstones?: TombstoneState;
  /** scd2 snapshot sources: the as-of of the newest extract applied (./snapshot-deletes.ts). */
  snapshotAsOf?: string;
}

/** Who commits a batch's state: its txn appId, its actions, and whose tombstones it reads. */
export interface StateOwner<S extends OwnedState> {
  /** txn appId (and domain) of the state; the commit reads it, so two writers of one owner conflict. */
  appId: string;
  /** Folder name of the owner's tombstone files (`_tidemark/tombstones/<name>/`). */
  tombstoneFolder: string;
  /** The actions committing `state` (txn + domainMetadata). */
  actions(state: S): Action[];
  /** operationParameters of a commit without data. */
  parameters(state: S): Record<string, unknown>;
  /** Other owners' tombstones, read (never changed) so their deletes bury older rows too. */
  others: Array<{ folder: string; state: TombstoneState | undefined }>;
  /**
   * The job's state records its current key and orderBy (./config-change.ts `acceptedBefore`):
   * tombstones written for older ones are dropped, not refused.
   */
  configAccepted: boolean;
  /**
   * The ledgers of the job and its backfills as of the snapshot the batch plans on (./ledger.ts):
   * where a file's first load of its current content is recorded, its place in the tie order.
   */
  ledgers: readonly LedgerState[];
  /**
   * Writes the state needs before the commit that lists them (the job's ledger: ./ledger.ts),
   * given the state the batch started from, the one it commits, and the files it loaded (each
   * file's lastModified its place in the order, as loaded).
   */
  prepare?(scope: JobScope, before: S, state: S, loaded: readonly DiscoveredFile[]): Promise<S>;
}

export interface WriteBatchOptions<S extends OwnedState> {
  scope: JobScope;
  snapshot: Snapshot | null;
  batch: LoadedBatch;
  /**
   * Source files (as `_source_file` names them) the table may already hold an earlier version of:
   * an append replaces their rows, or leaves an unchanged file out (../engine/merge/source-files.ts).
   */
  loadedBefore?: readonly string[];
  /** Other names the table may hold a file of `loadedBefore` under (./source-moved.ts). */
  formerNames?: ReadonlyMap<string, readonly string[]>;
  /** The state after this batch, committed with it (its tombstones are those before the batch). */
  state: S;
  /**
   * The owner's writes for `state` (its `prepare`, bound to the batch's files), made at the commit
   * point, once the write is staged: a batch refused before then (an unsupported table feature, a
   * constraint) leaves no file behind.
   */
  prepare?: (state: S) => Promise<S>;
  owner: StateOwner<S>;
  /** The batch's number within the command (0-based), passed to the hooks. */
  batchNo: number;
  timer: PhaseTimer;
  /** The batch is a snapshot source's newest full extract: keys it lacks are deleted too (./snapshot-deletes.ts). */
  fullExtract?: boolean;
  /** The batch's source files, as `_source_file` names them (messages about the batch as a whole). */
  sources?: readonly string[];
  /** The batch's clock in ms (tombstone expiry and stamps); default Date.now(). */
  now?: number;
}

export interface WrittenBatch<S extends OwnedState> {
  /** Committed version, or null when nothing could be committed (no rows and no table yet). */
  version: number | null;
  /** What the write did, as the engine staged it (all 0 when only the state was committed); ./report.ts adds it up. */
  summary: WriteSummary;
  /** The state committed (`opts.state` with this batch's tombstones): the next batch starts from it. */
  state: S;
}

/** Commit the batch and the state together. */
export async function writeBatch<S extends OwnedState>(
  opts: WriteBatchOptions<S>,
): Promise<WrittenBatch<S>> {
  const mode = opts.scope.job.target.mode;
  // An empty extract in scd2 mode cannot say when its keys ended: refused (./snapshot-deletes.ts).
  const closesAbsent = mode === 'scd2' && opts.fullExtract === true && opts.batch.files > 0;
  // A replace by a delivery without rows empties the table: that is what the delivery says.
  const emptiesTable =
    closesAbsent ||
    ((mode === 'replace' || opts.fullExtract === true) &&
      opts.snapshot !== null &&
      opts.batch.files > 0);
  if (opts.batch.rowsRead === 0 && !emptiesTable) {
    if (opts.snapshot) return commitStateOnly(opts, opts.snapshot);
    // No table yet. Empty Parquet files declare their columns' types: they create the table (no
    // rows), and its first commit records them. Empty CSV or JSON files declare none: creating
    // the table from them would guess its types, so nothing commits and they wait (version null).
    if (!opts.batch.typesDeclared)
      return { version: null, summary: writeSummary({}, null), state: opts.state };
  }
  return mode === 'append'
    ? appendBatch(opts)
    : mode === 'replace'
      ? replaceBatch(opts)
      : mode === 'scd2'
        ? scd2Batch(opts)
        : mergeBatch(opts);
}

/**
 * The types a column this write creates takes where the batch's DuckDB type alone would not say:
 * `source.columns`, and `timestamp_ntz` for a naive Parquet timestamp (a wall clock, as Spark
 * reads it; ../engine/parquet-timestamps.ts). A declaration wins.
 */
function declaredTypesOf(
  job: JobConfig,
  batch: LoadedBatch,
): { declaredTypes?: Record<string, string> } {
  const naive = Object.fromEntries(batch.naiveTimestamps.map((c) => [c, 'timestamp_ntz']));
  const declared = { ...naive, ...job.source.columns };
  return Object.keys(declared).length === 0 ? {} : { declaredTypes: declared };
}

/** What append and MERGE share. */
function writeTarget<S extends OwnedState>(opts: WriteBatchOptions<S>): WriteTarget {
  const { scope } = opts;
  const { job } = scope;
  return {
    session: scope.session,
    storage: scope.table.storage,
    snapshot: opts.snapshot,
    batch: opts.batch.table,
    ...(job.target.partitionBy ? { partitionBy: job.target.partitionBy } : {}),
    ...tablePropertiesOf(job),
    ...(job.target.columnMapping ? { columnMapping: job.target.columnMapping } : {}),
    ...declaredTypesOf(job, opts.batch),
    schemaEvolution: job.schemaEvolution,
    internalColumns: [SOURCE_ROW],
    sourceFileColumn: SOURCE_FILE,
    sourceRowColumn: SOURCE_ROW,
    appIds: [opts.owner.appId],
    spool: scope.spool,
    concurrency: job.concurrency,
    targetFileRows: job.target.maxRowsPerFile,
    ...(scope.ctx.signal ? { signal: scope.ctx.signal } : {}),
  };
}

/**
 * Append, exactly once per file version: the files the table may hold already are looked up by
 * `_source_file`; under `onOverwrite: reload` their earlier rows are replaced in this commit (an
 * unchanged file is left out), under `ignore` they are not appended again.
 */
async function appendBatch<S extends OwnedState>(
  opts: WriteBatchOptions<S>,
): Promise<WrittenBatch<S>> {
  const { job } = opts.scope;
  const loadedBefore = opts.loadedBefore ?? [];
  const existingSources = {
    onExisting:
      job.source.discover.onOverwrite === 'ignore' ? ('keep' as const) : ('replace' as const),
    files: loadedBefore,
    ...(opts.formerNames ? { formerNames: opts.formerNames } : {}),
    ignoreColumns: [SOURCE_MODIFIED],
    deletionVectors: dvSetting(job),
    rewriteBelowBytes: job.target.rewriteFilesBelow,
    rewriteDeletedShare: job.target.rewriteDeletedShare,
  };
  const staged = await opts.timer.time('merge', () =>
    stageAppend({ ...writeTarget(opts), ...(loadedBefore.length > 0 ? { existingSources } : {}) }),
  );
  if (staged.summary.filesAdded > 0) await opts.scope.ctx.hooks?.afterWrite?.(opts.batchNo);
  const state = await preparedState(opts, opts.state);
  const version = await commitWith(opts, staged, state);
  return { version, summary: staged.summary, state };
}

/**
 * Replace: every live file removed and the delivery's rows added, with the state, in one commit
 * (../engine/merge/replace.ts). The job chose the delivery (./deliveries.ts).
 */
async function replaceBatch<S extends OwnedState>(
  opts: WriteBatchOptions<S>,
): Promise<WrittenBatch<S>> {
  const staged = await opts.timer.time('merge', () => stageReplace(writeTarget(opts)));
  if (staged.summary.filesAdded > 0) await opts.scope.ctx.hooks?.afterWrite?.(opts.batchNo);
  const state = await preparedState(opts, opts.state);
  const version = await commitWith(opts, staged, state);
  return { version, summary: staged.summary, state };
}

/** `target.deletionVectors` as the engine takes it. */
function dvSetting(job: JobScope['job']): 'auto' | 'on' | 'off' {
  return job.target.deletionVectors === 'auto' ? 'auto' : job.target.deletionVectors ? 'on' : 'off';
}

/**
 * MERGE with the owner's tombstones (./tombstones/) and those of the other owners: the live ones
 * bury older rows, and the batch's deletes are written as a tombstone file of the owner just before
 * the commit, whose state lists it.
 */
async function mergeBatch<S extends OwnedState>(
  opts: WriteBatchOptions<S>,
): Promise<WrittenBatch<S>> {
  const { scope } = opts;
  // A full extract: the batch with delete rows of the keys it lacks (refused past the bound before anything is written).
  const extract =
    opts.fullExtract && opts.snapshot ? await extractBatch(scope, opts.snapshot, opts.batch) : null;
  try {
    return await mergeInto(opts, extract);
  } finally {
    await extract?.drop();
  }
}

/**
 * scd2: a snapshot source's extract closes the current versions of the keys it lacks at its as-of
 * (checked first: an extract that cannot say when it was taken is refused); the as-of is metadata,
 * never stored, and the state keeps the newest applied.
 */
async function scd2Batch<S extends OwnedState>(
  opts: WriteBatchOptions<S>,
): Promise<WrittenBatch<S>> {
  const { scope } = opts;
  if (!opts.fullExtract || scope.job.source.snapshotAsOf === undefined)
    return mergeInto(opts, null);
  const extract = await scd2Extract(
    scope,
    opts.snapshot,
    opts.batch,
    opts.sources ?? [],
    opts.state.snapshotAsOf,
  );
  try {
    const state = extract.older ? opts.state : { ...opts.state, snapshotAsOf: extract.asOf };
    return await mergeInto({ ...opts, state }, extract.closes);
  } finally {
    await extract.closes?.drop();
  }
}

async function mergeInto<S extends OwnedState>(
  opts: WriteBatchOptions<S>,
  extract: ExtractBatch | null,
): Promise<WrittenBatch<S>> {
  const { scope } = opts;
  const { job } = scope;
  const target = writeTarget(opts);
  // The as-of column of a snapshot source in scd2 mode is the extract's metadata, never table data.
  const asOf = job.target.mode === 'scd2' ? job.source.snapshotAsOf : undefined;
  const internal = [
    ...(target.internalColumns ?? []),
    ...(asOf === undefined ? [] : [asOf]),
    ...(extract ? [extract.flagColumn] : []),
  ];
  const deleteWhen = extract?.deleteWhen ?? job.target.deleteWhen;
  const tombstones = await unionTombstones({
    session: scope.session,
    storage: scope.table.storage,
    spec: {
      job: opts.owner.tombstoneFolder,
      key: job.target.key!,
      orderBy: job.target.orderBy!,
      retentionMs: job.target.tombstoneRetention,
      dropUnfit: scope.ctx.acceptConfigChange === true || opts.owner.configAccepted,
    },
    state: opts.state.tombstones,
    others: opts.owner.others,
    now: opts.now ?? Date.now(),
    spool: scope.spool,
    ...(scope.ctx.signal ? { signal: scope.ctx.signal } : {}),
  });
  try {
    const staged = await opts.timer.time('merge', () =>
      job.target.mode === 'scd2'
        ? stageScd2({
            ...target,
            ...(extract ? { batch: extract.table } : {}),
            internalColumns: internal,
            keyColumns: job.target.key!,
            orderBy: job.target.orderBy!,
            history: scd2Columns(job.target),
            ...(job.target.trackColumns ? { trackColumns: job.target.trackColumns } : {}),
            untracked: [SOURCE_FILE, SOURCE_MODIFIED],
            // Two rows of a key at one orderBy: the later file by LastModified, then by key (as in merge mode).
            tieBreak: [SOURCE_MODIFIED, SOURCE_FILE],
            ignoreColumns: [SOURCE_MODIFIED],
            deletionVectors: dvSetting(job),
            rewriteBelowBytes: job.target.rewriteFilesBelow,
            rewriteDeletedShare: job.target.rewriteDeletedShare,
            ...(deleteWhen ? { deleteWhen } : {}),
            ...(tombstones.relation ? { tombstones: tombstones.relation } : {}),
          })
        : stageMerge({
            ...target,
            ...(extract ? { batch: extract.table, internalColumns: internal } : {}),
            keyColumns: job.target.key!,
            orderBy: job.target.orderBy!,
            // Ties: the later file by LastModified, then by key; within a file dedupe took the later row (docs/concepts.md).
            tieBreak: [SOURCE_MODIFIED, SOURCE_FILE],
            // A file touched or copied in place repeats its rows: those equal to the stored ones are unchanged.
            ignoreColumns: [SOURCE_MODIFIED],
            keysUnique: true, // loadBatch reduced the batch to one row per key
            deletionVectors: dvSetting(job),
            rewriteBelowBytes: job.target.rewriteFilesBelow,
            rewriteDeletedShare: job.target.rewriteDeletedShare,
            ...(deleteWhen ? { deleteWhen } : {}),
            ...(tombstones.relation ? { tombstones: tombstones.relation } : {}),
          }),
    );
    try {
      if (staged.summary.filesAdded > 0) await scope.ctx.hooks?.afterWrite?.(opts.batchNo);
      // The tombstone file is written before the commit that lists it: a failed commit leaves an orphan.
      const state = await preparedState(
        opts,
        withTombstones(opts.state, await tombstones.own.record(staged.deletes)),
      );
      // A full extract's absent keys were found by reading every key of the table: its read is
      // the whole table, so a rival's commit of any key (one added outside the extract's bounds
      // too) makes this one plan again, not delete (close) what it never saw.
      const keyBounds =
        opts.snapshot && !extract
          ? await batchKeyBounds(scope.session, opts.batch.table, opts.snapshot, job.target.key!)
          : [];
      const version = await commitWith(opts, staged, state, keyBounds, extract !== null);
      await tombstones.own.purge();
      return { version, summary: staged.summary, state };
    } finally {
      await staged.dispose();
    }
  } finally {
    await tombstones.dispose();
  }
}

/**
 * Commit the staged write with the owner's state in the same version. A MERGE's read names the
 * batch's key bounds, so a concurrent writer of other keys (another job, another shard) adding
 * files outside them does not conflict with it (../delta/conflicts.ts). `wholeTable`: the write
 * read every row of the table (a full extract's compare), whatever its partitions.
 */
async function commitWith<S extends OwnedState>(
  opts: WriteBatchOptions<S>,
  staged: StagedWrite,
  state: S,
  keyBounds: KeyBound[] = [],
  wholeTable = false,
): Promise<number> {
  const read = {
    ...staged.request.read,
    ...(wholeTable ? { partitions: 'all' as const } : {}),
    appIds: unique([...staged.request.read.appIds, opts.owner.appId]),
  };
  const request: CommitRequest = {
    ...staged.request,
    actions: [...staged.request.actions, ...opts.owner.actions(state)],
    read: keyBounds.length > 0 && read.readVersion >= 0 ? { ...read, keyBounds } : read,
  };
  return commit(opts, request);
}

/** `state` with its tombstones field replaced (left out when there are none). */
function withTombstones<S extends OwnedState>(state: S, tombstones: TombstoneState | undefined): S {
  const { tombstones: _old, ...rest } = state;
  return (tombstones ? { ...rest, tombstones } : rest) as S;
}

/** Empty files still move the watermark, so they are not listed again. */
async function commitStateOnly<S extends OwnedState>(
  opts: WriteBatchOptions<S>,
  snapshot: Snapshot,
): Promise<WrittenBatch<S>> {
  const state = await preparedState(opts, opts.state);
  const version = await commit(opts, stateCommitRequest(opts.owner, state, snapshot));
  return { version, summary: writeSummary({}, null), state };
}

/** `state` after the owner's writes (`opts.prepare`): called once the commit is all that is left. */
async function preparedState<S extends OwnedState>(
  opts: WriteBatchOptions<S>,
  state: S,
): Promise<S> {
  return opts.prepare ? opts.prepare(state) : state;
}

/** A commit of the owner's state alone, without data (SET TRANSACTION), read on `snapshot`. */
export function stateCommitRequest<S extends OwnedState>(
  owner: StateOwner<S>,
  state: S,
  snapshot: Snapshot,
): CommitRequest {
  return {
    actions: owner.actions(state),
    operation: 'SET TRANSACTION',
    operationParameters: owner.parameters(state),
    operationMetrics: { numFiles: '0', numOutputRows: '0' },
    read: { readVersion: snapshot.version, partitions: [], files: [], appIds: [owner.appId] },
    isBlindAppend: true,
  };
}

/** The commit point, between the beforeCommit hook and the table's commit loop. */
async function commit<S extends OwnedState>(
  opts: WriteBatchOptions<S>,
  request: CommitRequest,
): Promise<number> {
  const { ctx, table, contention } = opts.scope;
  await ctx.hooks?.beforeCommit?.(opts.batchNo);
  const onRetry = () => void (contention.commitRetries += 1);
  const result = await opts.timer.time('commit', () =>
    table.commit(request, { onRetry, ...(ctx.signal ? { signal: ctx.signal } : {}) }),
  );
  return result.version;
}

/**
 * The properties of a table the job creates: `target.tableProperties`, with
 * `delta.enableChangeDataFeed` when `target.changeDataFeed` asks for it.
 */
function tablePropertiesOf(job: JobScope['job']): Pick<WriteTarget, 'tableProperties'> {
  const properties = {
    ...job.target.tableProperties,
    ...(job.target.changeDataFeed ? { [ENABLE_CHANGE_DATA_FEED]: 'true' } : {}),
  };
  return Object.keys(properties).length > 0 ? { tableProperties: properties } : {};
}

function unique(names: readonly string[]): string[] {
  return [...new Set(names)];
}
