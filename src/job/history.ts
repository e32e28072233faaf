/**
 * `tidemark history`: what happened to a job's table, read from the Delta log's commits, newest
 * first. Each commit's `commitInfo` gives the operation, time and metrics (Spark's names:
 * numTargetRowsInserted, numOutputRows, executionTimeMs …); its `txn` actions say which tidemark
 * job or backfill made it (`tidemark.job.<name>`, `tidemark.backfill.<name>`). Versions older than
 * the oldest commit file kept (log cleanup after checkpoints) are simply absent.
 *
 * VACUUM writes no commit (see maintenance/vacuum.ts), so it never appears here.
 */
import type { Action, CommitInfo } from '../delta/actions.js';
import { listLog } from '../delta/log-listing.js';
import { readCommits } from '../delta/replay.js';
import type { JobConfig } from '../config/schema.js';
import type { Storage } from '../storage/storage.js';
import type { RunContext } from './context.js';
import { describeShard } from './backfill/shard.js';
import { openTarget } from './open.js';
import { timedOutcome, type JobOutcome, type ReportedError } from './report.js';

/** Who made a commit: a tidemark job's run, its backfill or reset, OPTIMIZE, or something else. */
export type CommitKind = 'run' | 'backfill' | 'reset' | 'optimize' | 'other';

/** One commit as `history` shows it. */
export interface HistoryEntry {
  version: number;
  /**
   * The commit's time as ISO-8601: its in-commit timestamp on tables that write them (monotonic,
   * whatever the writers' clocks), else commitInfo.timestamp; null when the commit has neither.
   */
  time: string | null;
  operation: string;
  kind: CommitKind;
  /** The tidemark job the commit belongs to; null for commits of other writers and of OPTIMIZE. */
  job: string | null;
  /** The backfill's range, for backfill commits. */
  backfill: string | null;
  /** The batch sequence number of the job (or backfill) state committed. */
  batch: number | null;
  filesAdded: number;
  filesRemoved: number;
  /** Rows from operationMetrics; null when the commit does not say. */
  rowsInserted: number | null;
  rowsUpdated: number | null;
  rowsDeleted: number | null;
  /** operationMetrics.executionTimeMs; null when unknown. */
  durationMs: number | null;
}

/** Options of `readHistory`. */
export interface HistoryOptions {
  /** Most commits to return (newest first). */
  limit: number;
  /** Keep this job's commits and those of no tidemark job (OPTIMIZE, other writers); drop other jobs'. */
  job?: string;
  /** Keep only commits of these kinds (and, with `job`, only that job's own). */
  kinds?: readonly CommitKind[];
}

/** Commit files read per round while looking for `limit` matching commits. */
const READ_CHUNK = 64;

/** The newest `limit` commits of the table at `storage` (matching `job`), newest first, and the table's latest version (null: no table). */
export async function readHistory(
  storage: Storage,
  opts: HistoryOptions,
): Promise<{ entries: HistoryEntry[]; latestVersion: number | null }> {
  const { commits } = await listLog(storage);
  const entries: HistoryEntry[] = [];
  for (let end = commits.length; end > 0 && entries.length < opts.limit; end -= READ_CHUNK) {
    const refs = commits.slice(Math.max(0, end - READ_CHUNK), end);
    const read = await readCommits(storage, refs);
    for (let i = refs.length - 1; i >= 0 && entries.length < opts.limit; i--) {
      const entry = describeCommit(refs[i]!.version, read[i]!);
      if (matches(entry, opts)) entries.push(entry);
    }
  }
  return { entries, latestVersion: commits.at(-1)?.version ?? null };
}

function matches(entry: HistoryEntry, opts: HistoryOptions): boolean {
  if (opts.kinds)
    return opts.kinds.includes(entry.kind) && (opts.job === undefined || entry.job === opts.job);
  return opts.job === undefined || entry.job === null || entry.job === opts.job;
}

const JOB_APP = /^tidemark\.job\.(.+)$/;
/** A backfill's appId; a shard's ends in `@shard-I-of-N`, I its 0-based index (shown as `I+1/N`, as --shard takes it). */
const BACKFILL_APP = /^tidemark\.backfill\.([^@]+)(?:@shard-(\d+)-of-(\d+))?$/;

/** One commit's actions as a history entry. Pure. */
export function describeCommit(version: number, actions: readonly Action[]): HistoryEntry {
  const info: CommitInfo =
    actions.find((a): a is { commitInfo: CommitInfo } => 'commitInfo' in a)?.commitInfo ?? {};
  const params = (info['operationParameters'] ?? {}) as Record<string, unknown>;
  const metrics = (info['operationMetrics'] ?? {}) as Record<string, unknown>;
  const operation = typeof info['operation'] === 'string' ? info['operation'] : 'UNKNOWN';
  const owner = ownerOf(actions, params);
  const stamp = info['inCommitTimestamp'] ?? info['timestamp'];
  const timestamp = Number(stamp);
  const inserted =
    metric(metrics, 'numTargetRowsInserted') ??
    (/^(WRITE|CREATE TABLE AS SELECT|STREAMING UPDATE)$/.test(operation)
      ? metric(metrics, 'numOutputRows')
      : null);
  return {
    version,
    time:
      Number.isFinite(timestamp) && stamp !== undefined && stamp !== null
        ? new Date(timestamp).toISOString()
        : null,
    operation,
    kind: owner.kind ?? (operation === 'OPTIMIZE' ? 'optimize' : 'other'),
    job: owner.job,
    backfill: owner.backfill,
    batch: owner.batch,
    filesAdded: actions.filter((a) => 'add' in a).length,
    filesRemoved: actions.filter((a) => 'remove' in a).length,
    rowsInserted: inserted,
    rowsUpdated: metric(metrics, 'numTargetRowsUpdated') ?? metric(metrics, 'numUpdatedRows'),
    rowsDeleted: metric(metrics, 'numTargetRowsDeleted') ?? metric(metrics, 'numDeletedRows'),
    durationMs: metric(metrics, 'executionTimeMs'),
  };
}

interface Owner {
  kind: CommitKind | null;
  job: string | null;
  backfill: string | null;
  batch: number | null;
}

/** The tidemark job (or backfill) whose txn the commit carries; operationParameters add the range or reset. */
function ownerOf(actions: readonly Action[], params: Record<string, unknown>): Owner {
  for (const a of actions) {
    if (!('txn' in a)) continue;
    const job = JOB_APP.exec(a.txn.appId)?.[1];
    const backfill = BACKFILL_APP.exec(a.txn.appId);
    const backfillOf = backfill?.[1];
    if (job !== undefined) {
      return {
        kind: params['reset'] !== undefined ? 'reset' : 'run',
        job,
        backfill: null,
        batch: a.txn.version,
      };
    }
    if (backfillOf !== undefined) {
      // Data commits carry the MERGE's parameters, not the range: the state committed with them has it.
      const shard =
        backfill?.[2] === undefined
          ? null
          : `shard ${describeShard({ index: Number(backfill[2]), count: Number(backfill[3]) })}`;
      const range = paramText(params['backfill']) ?? committedRange(actions, a.txn.appId);
      const what = [range, shard].filter((p) => p !== null).join(' ');
      return {
        kind: 'backfill',
        job: backfillOf,
        backfill: what === '' ? null : what,
        batch: a.txn.version,
      };
    }
  }
  return { kind: null, job: null, backfill: null, batch: null };
}

/** `FROM..TO` of the backfill state the commit writes under `domain`, or null. */
function committedRange(actions: readonly Action[], domain: string): string | null {
  const d = actions.find(
    (a): a is Extract<Action, { domainMetadata: unknown }> =>
      'domainMetadata' in a && a.domainMetadata.domain === domain,
  );
  if (!d) return null;
  try {
    const state = JSON.parse(d.domainMetadata.configuration) as { from?: unknown; to?: unknown };
    return typeof state.from === 'string' && typeof state.to === 'string'
      ? `${state.from}..${state.to}`
      : null;
  } catch {
    return null;
  }
}

/** operationParameters values are JSON text (Spark's convention): `"2026-11-01..2026-11-07"` → the string. */
function paramText(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  try {
    const parsed: unknown = JSON.parse(value);
    return typeof parsed === 'string' ? parsed : value;
  } catch {
    return value;
  }
}

function metric(metrics: Record<string, unknown>, name: string): number | null {
  const v = metrics[name];
  if (v === undefined || v === null || v === '') return null;
  const n = Number(v);
  return Number.isFinite(n) ? n : null;
}

/** What `history` reports per job (one JSON object per job with --json). */
export interface HistoryReport {
  job: string;
  /** The target table's URI. */
  table: string;
  status: 'ok' | 'no-table' | 'failed';
  /** The table's latest version; null when there is no table yet. */
  tableVersion: number | null;
  commits: HistoryEntry[];
  durationMs: number;
  error?: ReportedError;
}

/** The newest commits of the job's table that concern the job. Never throws. */
export async function jobHistory(
  job: JobConfig,
  ctx: RunContext,
  opts: { limit: number },
): Promise<JobOutcome<HistoryReport>> {
  const base: HistoryReport = {
    job: job.name,
    table: job.target.uri,
    status: 'failed',
    tableVersion: null,
    commits: [],
    durationMs: 0,
  };
  return timedOutcome(
    () => base,
    async () => {
      const storage = openTarget(job, ctx.storage, ctx.openStorage);
      const { entries, latestVersion } = await readHistory(storage, {
        limit: opts.limit,
        job: job.name,
      });
      return {
        ...base,
        status: latestVersion === null ? 'no-table' : 'ok',
        tableVersion: latestVersion,
        commits: entries,
      };
    },
  );
}
