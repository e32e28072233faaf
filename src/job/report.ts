/**
 * What a command reports: one object per job, printed as JSON with `--json` (see docs/operations.md, Commands),
 * and the outcome that carries it back to the CLI as a value, also when the job failed.
 */
import { writeSummary, type WriteSummary } from '../engine/merge/index.js';
import type { ChecksumCounts, RequestCounts } from '../storage/storage.js';
import type { Backlog } from './backlog.js';
import type { ConfigChange } from './config-change.js';
import type { PhaseTimings } from './phases.js';

export type RunStatus = 'succeeded' | 'nothing-new' | 'failed' | 'dry-run';

export interface SkippedFile {
  key: string;
  reason: string;
}

/** A partition whose files wait for its `_SUCCESS` marker (`requireSuccessMarker`): the watermark stays before the oldest. */
export interface WaitingForMarker {
  partition: string;
  /** Data files waiting in it. */
  files: number;
  /** The oldest LastModified of those files (ISO). */
  since: string;
  /** Waiting longer than `discover.markerTimeout`. */
  overdue: boolean;
}

/** A failure as reports show it: the error's class, message and what it concerns. */
export interface ReportedError {
  type: string;
  message: string;
  context?: Record<string, unknown>;
  /** True when the command may simply be run again later (storage was unavailable: exit code 4). */
  retryable?: boolean;
}

/** What one committed write changed: rows per action, and the table's files. */
export interface WriteCounts {
  inserted: number;
  updated: number;
  deleted: number;
  skippedStale: number;
  /** Matched rows equal in every column to the stored row: nothing was written for them. */
  unchanged: number;
  /** Data files the commits added to the table, and removed from it (rewritten or emptied). */
  dataFilesAdded: number;
  dataFilesRemoved: number;
  /** Data files given a (new or extended) deletion vector instead of being rewritten. */
  filesWithNewDeletionVector: number;
  /** Bytes of the new data files and deletion-vector files. */
  bytesWritten: number;
}

/** What loading did, counted the same way by a run and a backfill. */
export interface LoadCounts extends WriteCounts {
  filesLoaded: number;
  rowsRead: number;
  rowsAfterDedupe: number;
  /** Append mode: overwritten files whose earlier rows were replaced by their new version, and those rows. */
  filesReplaced?: number;
  rowsReplaced?: number;
  /** Append mode: files the table already held unchanged (or, under onOverwrite: ignore, at all): not appended again. */
  filesAlreadyLoaded?: number;
}

/** Add `files` to a report's skipped files and its counts by reason. */
export function reportSkipped(
  report: { skipped?: SkippedFile[]; skippedByReason?: Record<string, number> },
  files: readonly SkippedFile[],
): void {
  if (files.length === 0) return;
  report.skipped = [...(report.skipped ?? []), ...files];
  const byReason = (report.skippedByReason ??= {});
  for (const f of files) byReason[f.reason] = (byReason[f.reason] ?? 0) + 1;
}

/**
 * A write's figures under the report's names: the one place the engine's summary
 * (../engine/merge/results.ts), carried unchanged from MERGE, append or replace, meets the
 * report's JSON (docs/operations.md), whose names are older.
 */
export function writeCounts(s: WriteSummary): WriteCounts {
  return {
    inserted: s.inserted,
    updated: s.updated,
    deleted: s.deleted,
    skippedStale: s.skippedStale,
    unchanged: s.unchanged,
    dataFilesAdded: s.filesAdded,
    dataFilesRemoved: s.filesRemoved,
    filesWithNewDeletionVector: s.filesWithNewDv,
    bytesWritten: s.bytesAdded + s.dvBytes,
  };
}

/** Add a committed write to a report's counts (append's source-file figures only once there are some). */
export function addWrite(counts: LoadCounts, s: WriteSummary): void {
  const w = writeCounts(s);
  for (const k of Object.keys(w) as Array<keyof WriteCounts>) counts[k] += w[k];
  if (s.sourcesReplaced.length > 0) {
    counts.filesReplaced = (counts.filesReplaced ?? 0) + s.sourcesReplaced.length;
    counts.rowsReplaced = (counts.rowsReplaced ?? 0) + s.rowsReplaced;
  }
  if (s.sourcesAlreadyHeld.length > 0)
    counts.filesAlreadyLoaded = (counts.filesAlreadyLoaded ?? 0) + s.sourcesAlreadyHeld.length;
}

/** The load counts of a command that loaded nothing yet. */
export function noLoadCounts(): LoadCounts {
  return {
    filesLoaded: 0,
    rowsRead: 0,
    rowsAfterDedupe: 0,
    ...writeCounts(writeSummary({}, null)),
  };
}

/** What the run report says about the queue. */
export interface NotificationReport {
  queue: string;
  /** Messages received, and of them deleted by this run. */
  received: number;
  deleted: number;
  /** Object events in the messages; of them, outside the source (other bucket or prefix), other kinds (removed, test events), and naming objects gone. */
  events: number;
  outside: number;
  notCreated: number;
  gone: number;
  /** Messages tidemark could not read: left on the queue (its redrive policy moves them to a dead-letter queue). */
  unreadable: Array<{ id: string; why: string }>;
  /** True when the run listed the whole prefix to find files whose event was lost. */
  reconciled: boolean;
  /** True when the run received as many as it takes (./notified.ts): the queue may hold more, for the next run. */
  moreWaiting: boolean;
  /** Requests sent to the queue, by kind. */
  requests: { receive: number; changeVisibility: number; delete: number; attributes: number };
}

/** The cleanup a run did at its end (`source.afterLoad.atEndOfRun`), in brief; `tidemark cleanup` reports it in full. */
export interface RunCleanup {
  status: string;
  action: 'move' | 'delete' | null;
  /** Files moved or deleted, and their bytes. */
  files: number;
  bytes: number;
  /** Files planned and left in place when their turn came (changed or gone since the plan, a different file at the move target). */
  left: Array<{ key: string; reason: string }>;
  /** The record under the table's `_tidemark/cleanup/`, or null. */
  record: string | null;
}

export interface RunReport extends LoadCounts {
  job: string;
  status: RunStatus;
  /** With `source.afterLoad.atEndOfRun`: what the cleanup after the run did (../job/cleanup.ts); absent: none ran. */
  cleanup?: RunCleanup;
  filesDiscovered: number;
  /** Table version after the run (unchanged when nothing was committed; null when no table yet). */
  tableVersion: number | null;
  /** The committed watermark after the run (partition or ISO timestamp), null before the first load. */
  watermark: string | null;
  durationMs: number;
  /** Milliseconds per phase, summed over the run's batches. */
  phases: PhaseTimings;
  /** Commits made by this run (one per batch). */
  commits: number;
  /** Commits retried at a later version: another writer won the race but touched nothing this run read. */
  commitRetries: number;
  /** Races lost to a conflicting writer, after which the run planned again. */
  replans: number;
  batches: number;
  /** Bytes of the source files loaded (as listed). */
  bytesLoaded?: number;
  /** S3 requests the run sent, by kind (absent when source and target are local). */
  requests?: RequestCounts;
  /** Whole-object reads and uploads whose bytes were checked, by checksum kind (absent when both are local). */
  checksums?: ChecksumCounts;
  /** LIST requests discovery sent (pages of up to 1,000 keys; a local folder is paged the same way). */
  listRequests?: number;
  /** Partition folders (or prefixes) listed by discovery. */
  partitionsListed?: string[];
  /** With --dry-run: the watermark the run would commit. */
  watermarkAfter?: string | null;
  /** With --dry-run: the files that would load. */
  plannedFiles?: string[];
  /** Files skipped, with the reason (dry-run shows all; a normal run shows counts by reason). */
  skipped?: SkippedFile[];
  skippedByReason?: Record<string, number>;
  quarantined?: SkippedFile[];
  /** Partitions waiting for their success marker, oldest first (absent: none). */
  waitingForMarker?: WaitingForMarker[];
  /**
   * Files discovered and not loaded when the run ended (./backlog.ts): of batches it did not
   * commit, and waiting for their marker; absent when the run failed before planning.
   */
  backlog?: Backlog;
  /** Notification discovery: what the queue held and what the run did with it (absent: other modes). */
  notifications?: NotificationReport;
  /** Settings changed since the job's state was committed, and what the run did about each (absent: none). */
  configChanges?: ConfigChange[];
  /** `--adopt-state-of`: the job whose state this run carried over to the job (absent: none). */
  adoptedStateOf?: string;
  error?: ReportedError;
}

export interface StatusReport {
  job: string;
  discovery: 'partition' | 'modified' | 'notifications';
  watermark: string | null;
  tableVersion: number | null;
  lastRunAt: string | null;
  rows: number | null;
  files: number;
  bytes: number;
  quarantined: Array<{ key: string; error: string; at: string }>;
  /** Partitions waiting for their success marker as the last commit saw them (overdue as of now). */
  waitingForMarker: WaitingForMarker[];
  /** Files discovered and not loaded as of the job's last commit (./backlog.ts); null before the first, or when it recorded none. */
  backlog: Backlog | null;
  /** The job's latest backfill (`tidemark backfill`), absent when it never had one. */
  backfill?: BackfillStatusReport;
}

/** A backfill as `status` shows it; a sharded one lists every shard (done only when all are). */
export interface BackfillStatusReport {
  from: string;
  to: string;
  status: 'running' | 'done';
  /** The cursor (unsharded); null for a sharded backfill (each shard has its own). */
  doneThrough: string | null;
  /** The newest update of any shard. */
  updatedAt: string;
  shards?: ShardStatus[];
}

/** One shard's progress. */
export interface ShardStatus {
  /** `K/N`. */
  shard: string;
  /** Its slice of the range (null: the split left it nothing). */
  part: { from: string; to: string } | null;
  /** `pending`: opened, nothing committed by the shard yet. */
  status: 'pending' | 'running' | 'done';
  doneThrough: string | null;
  /** Null for a shard with no state in the table yet (it has not committed anything). */
  updatedAt: string | null;
  filesLoaded: number;
  rowsLoaded: number;
}

/**
 * A command's result for one job: its report, and the error when it failed. A failed job's report
 * still says what was committed before the failure (batches, table version, watermark).
 */
export type JobOutcome<R> = { ok: true; report: R } | { ok: false; report: R; error: unknown };

/** Run `work`; a failure becomes a failed outcome whose report is `failed()` at that moment. */
export async function outcomeOf<R>(
  failed: () => R,
  work: () => Promise<R>,
): Promise<JobOutcome<R>> {
  try {
    return { ok: true, report: await work() };
  } catch (error) {
    return { ok: false, report: failed(), error };
  }
}

/**
 * `outcomeOf` for reports with a status and a duration: a failure's report is `progress()` at the
 * moment of failure with status 'failed'; `durationMs` is set on both.
 */
export async function timedOutcome<R extends { status: string; durationMs: number }>(
  progress: () => R,
  work: () => Promise<R>,
): Promise<JobOutcome<R>> {
  const started = Date.now();
  const outcome = await outcomeOf(() => ({ ...progress(), status: 'failed' }), work);
  return { ...outcome, report: { ...outcome.report, durationMs: Date.now() - started } };
}
