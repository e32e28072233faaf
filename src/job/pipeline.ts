/**
 * The load pipeline that `run` and `backfill` share:
 *
 *   open the job's scope (./scope.ts)
 *   ┌─► read the latest snapshot ──► plan (the command's own part: discovery, or the range)
 *   │    for each planned batch: fetch ──► load ──► dedupe ──► stage MERGE/append ──► commit
 *   │    (./batch.ts; each batch is its own commit, with the owner's state)
 *   └── a commit race lost to another writer: plan again on the new snapshot (./replan.ts)
 *   report: counts, versions, per-phase timings, returned as a value, also when it failed
 *
 * Each batch plans on the version the previous one committed, never a later one: a later
 * version may hold a rival writer's commit of the same files, and planning on it with this
 * run's state would hide that race from the conflict check (and load those files twice).
 */
import type { Snapshot } from '../delta/snapshot.js';
import type { DiscoveredFile } from '../discovery/index.js';
import type { Progress } from '../log/progress.js';
import type { FormerSource } from './former-sources.js';
import { loadAndCommitBatch, type BatchLoaded, type CommittedBatch } from './batch.js';
import type { PhaseTimer } from './phases.js';
import type { BadFilePolicy } from './quarantine.js';
import { addWrite, type LoadCounts, type SkippedFile } from './report.js';
import type { JobScope } from './scope.js';
import type { OwnedState, StateOwner } from './write-batch.js';

/** A batch loaded, as the command computes the state committed with it. */
export interface BatchDone<S> extends BatchLoaded {
  /** The state before the batch (committed, or carried on from a batch that could not commit). */
  before: S;
  /** The batch's index in `BatchLoop.batches`. */
  index: number;
}

/** Batches to load one after another, from a state, planned on a snapshot. */
export interface BatchLoop<S extends OwnedState> {
  scope: JobScope;
  timer: PhaseTimer;
  /**
   * The owner of the state, as of the snapshot a batch plans on: the other owners' tombstones it
   * reads are that snapshot's, so a delete committed by another writer between two batches
   * buries the older rows of the next one.
   */
  owner(snapshot: Snapshot | null): StateOwner<S>;
  snapshot: Snapshot | null;
  /** The committed state the first batch starts from. */
  state: S;
  batches: ReadonlyArray<readonly DiscoveredFile[]>;
  /** The state to commit after a batch, given the state before it, its index and what it loaded. */
  stateAfter(done: BatchDone<S>): S;
  /** Number of the first batch (batches committed earlier in this command), for the hooks. */
  firstBatchNo: number;
  /** True for the batch that is a snapshot source's full extract: keys it lacks are deleted (./snapshot-deletes.ts). */
  fullExtract?(index: number): boolean;
  /** Label of each batch's fetch progress bar; null when the caller shows its own (`progress`). */
  progressLabel: string | null;
  progress?: Progress;
  /** The command's report: each committed batch is added to it (`reportBatch`) right after its commit. */
  report: CommittedReport;
  /** What a batch's failed attempt does with the file it names (./quarantine.ts). */
  badFiles: BadFilePolicy;
  /** Folders the job's source was loaded from before source.uri was edited (./former-sources.ts). */
  formerSources?: readonly FormerSource[];
  /** Called right after each commit and its report, before the afterCommit hook (a failed run's report keeps the batch). */
  onCommitted(batch: CommittedBatch<S>, index: number): void;
}

/** What the batches committed, and what waits for a table. */
export interface LoadedBatches<S extends OwnedState> {
  /** The table's version after them (the starting snapshot's when nothing was committed; null: no table). */
  version: number | null;
  /** The last committed state (the starting one when nothing was committed). */
  state: S;
  /**
   * Files of batches that could not commit (no table yet, and no rows that declare its types:
   * ./write-batch.ts) and that no later batch committed: not loaded, listed again next time.
   */
  waiting: SkippedFile[];
}

/** Why a batch without rows commits nothing when there is no table. */
export const NO_TABLE_YET = 'empty, no table yet (loaded with the first file that has rows)';

/**
 * Load and commit every batch; returns the last committed state and the table's version after
 * them. A batch that commits nothing (no table yet, no rows: ./write-batch.ts) passes its state
 * on: the next batch that commits records its files too, and is reported with them, so a file
 * counts as loaded once, in the commit that records it.
 */
export async function loadBatches<S extends OwnedState>(
  loop: BatchLoop<S>,
): Promise<LoadedBatches<S>> {
  const { scope } = loop;
  let { snapshot, state } = loop;
  let committed = snapshot?.version ?? null;
  let committedState = state;
  let waiting: Array<CommittedBatch<S>> = [];
  for (const [index, files] of loop.batches.entries()) {
    // SIGINT/SIGTERM: stop between batches; what is committed stays, the rerun goes on from it.
    scope.ctx.signal?.throwIfAborted();
    // A caller with its own progress (a backfill's bar over the range) is not drawn over.
    if (loop.progressLabel !== null) scope.ctx.progress?.batch(index + 1, loop.batches.length);
    const before = state;
    const batchNo = loop.firstBatchNo + index;
    const batch = await loadAndCommitBatch<S>(scope, {
      files,
      snapshot,
      batchNo,
      progressLabel: loop.progressLabel,
      stateAfter: (done) => loop.stateAfter({ ...done, before, index }),
      before,
      owner: loop.owner(snapshot),
      timer: loop.timer,
      badFiles: loop.badFiles,
      ...(loop.formerSources ? { formerSources: loop.formerSources } : {}),
      ...(loop.fullExtract?.(index) ? { fullExtract: true } : {}),
    });
    loop.progress?.tick(files.length, batch.bytes);
    // The state after it (committed, or carried on): it lists the tombstone files this batch wrote.
    state = batch.written.state;
    const { version } = batch.written;
    if (version === null) {
      waiting.push(batch);
      continue;
    }
    const recorded = waiting.length === 0 ? batch : recordedTogether([...waiting, batch]);
    reportBatch(loop.report, recorded);
    loop.onCommitted(recorded, index);
    waiting = [];
    await scope.ctx.hooks?.afterCommit?.(batchNo, version);
    committed = version;
    committedState = state;
    // The next batch plans on this version (read only when there is a next batch).
    if (index < loop.batches.length - 1) snapshot = await scope.table.snapshot({ version });
  }
  return { version: committed, state: committedState, waiting: waiting.flatMap(waitingFiles) };
}

/** Batches that waited, and the one whose commit recorded them: one batch, as reports count it. */
function recordedTogether<S extends OwnedState>(
  batches: ReadonlyArray<CommittedBatch<S>>,
): CommittedBatch<S> {
  const last = batches.at(-1)!;
  const sum = (f: (b: CommittedBatch<S>) => number) => batches.reduce((n, b) => n + f(b), 0);
  return {
    written: last.written,
    files: sum((b) => b.files),
    keys: batches.flatMap((b) => b.keys),
    quarantined: batches.flatMap((b) => b.quarantined),
    bytes: sum((b) => b.bytes),
    rowsRead: sum((b) => b.rowsRead),
    rowsAfterDedupe: sum((b) => b.rowsAfterDedupe),
  };
}

function waitingFiles(batch: CommittedBatch<OwnedState>): SkippedFile[] {
  return [
    ...batch.keys.map((key) => ({ key, reason: NO_TABLE_YET })),
    ...batch.quarantined.map((q) => ({
      key: q.key,
      reason: 'bad, no table yet to record its quarantine (tried again next time)',
    })),
  ];
}

/** What `run` and `backfill` report alike of the batches they commit. */
export interface CommittedReport extends LoadCounts {
  tableVersion: number | null;
  bytesLoaded?: number;
  commits: number;
  quarantined?: SkippedFile[];
}

/** Add a committed batch to a command's report: its counts, bytes, commit, version and the files it set aside. */
function reportBatch(report: CommittedReport, batch: CommittedBatch<OwnedState>): void {
  report.filesLoaded += batch.files;
  report.rowsRead += batch.rowsRead;
  report.rowsAfterDedupe += batch.rowsAfterDedupe;
  addWrite(report, batch.written.summary);
  report.bytesLoaded = (report.bytesLoaded ?? 0) + batch.bytes;
  if (batch.written.version !== null) report.tableVersion = batch.written.version;
  report.commits += 1;
  if (batch.quarantined.length > 0)
    report.quarantined = [
      ...(report.quarantined ?? []),
      ...batch.quarantined.map((q) => ({ key: q.key, reason: q.error })),
    ];
}
