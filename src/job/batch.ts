/**
 * One batch, as a run and a backfill both load it:
 *
 *   fetch ──► load into DuckDB ──► dedupe (merge mode) ──► MERGE / append (./write-batch.ts)
 *   └─ data + the owner's state (its txn + domainMetadata) in ONE Delta commit (the commit point)
 *
 * Files are read in the table's column types. When an attempt fails, the bad-file policy
 * (./quarantine.ts) may set aside the file it names; the rest is loaded again, in the same commit.
 * Fault-injection hooks (RunContext.hooks) fire at the same points for both.
 */
import type { Spool } from '../spool/spool.js';
import type { Snapshot } from '../delta/snapshot.js';
import type { DiscoveredFile } from '../discovery/index.js';
import { startProgress, type Progress } from '../log/progress.js';
import { fetchFiles, type FetchedFile } from './fetch.js';
import { orderTimes } from './ledger.js';
import { loadBatch, sourceName } from './load-batch.js';
import { formerNames, type FormerSource } from './former-sources.js';
import type { PhaseTimer } from './phases.js';
import type { JobScope } from './scope.js';
import type { BadFilePolicy, Quarantined, QuarantinedFile } from './quarantine.js';
import { writeBatch, type OwnedState, type StateOwner, type WrittenBatch } from './write-batch.js';

/** A batch's files as loaded: what the state committed with it is computed from. */
export interface BatchLoaded {
  /**
   * Its files, with the ETag of the content actually fetched (a file overwritten since the listing
   * is known by its new ETag), including those set aside by `onBadFile: quarantine`.
   */
  loaded: readonly DiscoveredFile[];
  rowsRead: number;
  /** The files set aside, also in `loaded`. */
  quarantined: readonly QuarantinedFile[];
}

/** One batch to load and commit. */
export interface BatchSpec<S extends OwnedState> {
  files: readonly DiscoveredFile[];
  /** The snapshot the batch is planned on (null: no table yet). */
  snapshot: Snapshot | null;
  /** The batch's number within the command (0-based), passed to the hooks. */
  batchNo: number;
  /** Label of the fetch progress bar; null for none (the caller shows its own progress). */
  progressLabel: string | null;
  /** The state to commit with the batch, given its files as loaded. */
  stateAfter(done: BatchLoaded): S;
  /** The committed state the batch starts from. */
  before: S;
  owner: StateOwner<S>;
  timer: PhaseTimer;
  /** The batch is a snapshot source's full extract (./snapshot-deletes.ts). */
  fullExtract?: boolean;
  /** What a failed attempt does with the file it names (./quarantine.ts). */
  badFiles: BadFilePolicy;
  /** Folders the job's source was loaded from before source.uri was edited (./former-sources.ts). */
  formerSources?: readonly FormerSource[];
}

/** A committed batch. */
export interface CommittedBatch<S extends OwnedState> {
  written: WrittenBatch<S>;
  /** Files loaded (quarantined ones not counted). */
  files: number;
  /** Their keys. */
  keys: string[];
  /** Files set aside by `onBadFile: quarantine` (see ./quarantine.ts). */
  quarantined: QuarantinedFile[];
  bytes: number;
  rowsRead: number;
  rowsAfterDedupe: number;
}

/** Fetch, load, dedupe and commit one batch with its state. */
export async function loadAndCommitBatch<S extends OwnedState>(
  scope: JobScope,
  spec: BatchSpec<S>,
): Promise<CommittedBatch<S>> {
  const { ctx } = scope;
  const progress =
    spec.progressLabel === null
      ? undefined
      : (ctx.progress?.fetch(spec.files.length) ??
        startProgress({
          label: spec.progressLabel,
          total: spec.files.length,
          logger: ctx.logger,
          ...(ctx.tty !== undefined ? { tty: ctx.tty } : {}),
        }));
  const spool = await scope.spool.child('fetch');
  try {
    return await fetchLoadAndCommit(scope, spec, spool, progress);
  } finally {
    // Also on failure: a terminal bar left running keeps the process alive, and a batch planned
    // again after a lost race downloads into a new folder.
    progress?.done();
    await spool.close();
  }
}

/**
 * Where the ledger places fetched files whose content it recorded a first load of, with a time
 * other than their LastModified (a touch, a copy in place of the same bytes): the tie order takes
 * that first time, so reloading them never makes their rows win a tie they lost (docs/concepts.md).
 */
async function placeInOrder(
  scope: JobScope,
  owner: StateOwner<OwnedState>,
  fetched: readonly FetchedFile[],
): Promise<Map<string, Date>> {
  const placed = new Map<string, Date>();
  const known = await orderTimes(
    scope,
    owner.ledgers,
    fetched.map((f) => ({ key: f.file.key, etag: f.etag })),
  );
  for (const f of fetched) {
    const first = known.get(f.file.key);
    if (first && first.getTime() !== f.file.lastModified.getTime()) placed.set(f.file.key, first);
  }
  return placed;
}

async function fetchLoadAndCommit<S extends OwnedState>(
  scope: JobScope,
  spec: BatchSpec<S>,
  spool: Spool,
  progress: Progress | undefined,
): Promise<CommittedBatch<S>> {
  const { job, ctx } = scope;
  const signal = ctx.signal ? { signal: ctx.signal } : {};
  const fetched = await spec.timer.time('fetch', () =>
    fetchFiles(scope.source, spec.files, {
      spool,
      concurrency: job.concurrency,
      ...(progress ? { progress } : {}),
      ...signal,
    }),
  );
  progress?.done();
  await ctx.hooks?.afterFetch?.(spec.batchNo);
  const attempt: Attempt = { fetched, placed: await placeInOrder(scope, spec.owner, fetched) };

  // Load and commit; each time that fails on a file the policy sets aside, again without it
  // (at most once per file), in the same commit.
  let kept: readonly FetchedFile[] = fetched;
  const quarantined: Quarantined[] = [];
  for (;;) {
    try {
      const result = await loadAndWrite(scope, spec, attempt, kept, quarantined);
      const setAside = new Set(quarantined.map((q) => q.entry.key));
      return {
        ...result,
        files: spec.files.length - quarantined.length,
        keys: spec.files.map((f) => f.key).filter((k) => !setAside.has(k)),
        bytes: spec.files.reduce((n, f) => n + f.size, 0),
        quarantined: quarantined.map((q) => q.entry),
      };
    } catch (err) {
      const bad = spec.badFiles.setAside(err, kept);
      if (!bad) throw err;
      quarantined.push(bad);
      kept = kept.filter((f) => f !== bad.fetched);
    }
  }
}

/** A batch's fetched files, and where the ledger places those it recorded earlier (`placeInOrder`). */
interface Attempt {
  fetched: readonly FetchedFile[];
  placed: ReadonlyMap<string, Date>;
}

/**
 * One attempt at the batch: load the files `kept` into DuckDB, compute the state, stage the MERGE
 * or append and commit it with the state (./write-batch.ts).
 */
async function loadAndWrite<S extends OwnedState>(
  scope: JobScope,
  spec: BatchSpec<S>,
  { fetched, placed }: Attempt,
  kept: readonly FetchedFile[],
  quarantined: readonly Quarantined[],
): Promise<Pick<CommittedBatch<S>, 'written' | 'rowsRead' | 'rowsAfterDedupe'>> {
  const { job, ctx } = scope;
  const loaded = await loadBatch(scope.session, job, scope.source.uri, kept, {
    schema: spec.snapshot?.schema ?? null,
    timer: spec.timer,
    placed,
  });
  for (const warning of loaded.warnings)
    ctx.logger.warn(
      { job: job.name, table: scope.table.uri },
      `[load] job ${job.name}: ${warning}`,
    );
  try {
    // Every fetched file is done: loaded, or quarantined (recorded, and not listed again).
    const planned = spec.stateAfter({
      loaded: fetched.map((f) => ({ ...f.file, etag: f.etag })),
      rowsRead: loaded.rowsRead,
      quarantined: quarantined.map((q) => q.entry),
    });
    const asLoaded = kept.map((f) => ({
      ...f.file,
      etag: f.etag,
      lastModified: placed.get(f.file.key) ?? f.file.lastModified,
    }));
    const { prepare } = spec.owner;
    const before = kept
      .filter((f) => f.file.loadedBefore)
      .map((f) => ({ key: f.file.key, name: sourceName(scope.source.uri, f.file.key) }));
    const former = spec.formerSources;
    const written = await writeBatch<S>({
      scope,
      snapshot: spec.snapshot,
      batch: loaded,
      loadedBefore: before.map((f) => f.name),
      ...(former?.length
        ? {
            formerNames: new Map(before.map((f) => [f.name, formerNames(former, f.key, f.name)])),
          }
        : {}),
      state: planned,
      ...(prepare ? { prepare: (state: S) => prepare(scope, spec.before, state, asLoaded) } : {}),
      owner: spec.owner,
      batchNo: spec.batchNo,
      timer: spec.timer,
      ...(spec.fullExtract ? { fullExtract: true } : {}),
      sources: kept.map((f) => sourceName(scope.source.uri, f.file.key)),
    });
    return { written, rowsRead: loaded.rowsRead, rowsAfterDedupe: loaded.rowsAfterDedupe };
  } finally {
    await loaded.dispose();
  }
}
