/**
 * `tidemark status`: what the table says about a job, read from its latest snapshot.
 */
import type { JobConfig } from '../config/schema.js';
import { TableConfig } from '../delta/table-config.js';
import type { Snapshot } from '../delta/snapshot.js';
import type { Storage } from '../storage/storage.js';
import { readHistory } from './history.js';
import { totalRecords } from '../delta/stats.js';
import { describeSlice } from './backfill/open-split.js';
import { rangeOfDescription } from './backfill/range.js';
import { describeShard, shardSlice, type Shard } from './backfill/shard.js';
import { currentBackfill, missingShards } from './backfill/start.js';
import { readBackfillStates, shardOf, type BackfillState } from './backfill/state.js';
import type { RunContext } from './context.js';
import {
  outcomeOf,
  type BackfillStatusReport,
  type JobOutcome,
  type ShardStatus,
  type StatusReport,
} from './report.js';
import { quarantinedFiles } from './quarantine-list.js';
import { withJobScope } from './scope.js';
import { reportWaiting } from './waiting.js';
import { reportBacklog } from './backlog.js';
import { readJobState } from './state.js';
import { describeWatermark } from './watermark.js';

/** Status of one job, read from its table's latest snapshot. Never throws. */
export async function jobStatus(
  job: JobConfig,
  ctx: RunContext,
): Promise<JobOutcome<StatusReport>> {
  return outcomeOf(
    () => statusOf(job, null),
    () =>
      withJobScope(job, ctx, `${job.name}-status`, async ({ table }) => {
        const snapshot = await table.snapshot();
        const report = statusOf(job, snapshot);
        return snapshot
          ? {
              ...report,
              lastRunAt: await lastRunTime(table.storage, snapshot, job.name, report.lastRunAt),
            }
          : report;
      }),
  );
}

/**
 * When the job last ran. On a table with in-commit timestamps, the timestamp of the job's last run
 * commit: the table's own clock, monotonic whatever the clocks of the hosts that ran the job. Else
 * (or when that commit was cleaned up from the log) the time the run recorded in its state.
 */
async function lastRunTime(
  storage: Storage,
  snapshot: Snapshot,
  job: string,
  recorded: string | null,
): Promise<string | null> {
  if (recorded === null || !TableConfig.of(snapshot.protocol, snapshot.metadata).inCommitTimestamps)
    return recorded;
  const { entries } = await readHistory(storage, { limit: 1, job, kinds: ['run'] });
  return entries[0]?.time ?? recorded;
}

/** What the snapshot says about the job. */
function statusOf(job: JobConfig, snapshot: Snapshot | null): StatusReport {
  const state = readJobState(snapshot, job.name);
  const files = snapshot?.files ?? [];
  // Row counts come from file stats; one file without stats makes the total unknown.
  const rows = totalRecords(files) ?? null;
  return {
    job: job.name,
    discovery: job.source.discover.by,
    watermark: describeWatermark(state.discovery),
    tableVersion: snapshot?.version ?? null,
    lastRunAt: state.lastRunAt,
    rows,
    files: files.length,
    bytes: files.reduce((n, f) => n + f.size, 0),
    // Every owner's (the job's, its backfill's), without files loaded since (./quarantine-list.ts).
    quarantined: quarantinedFiles(snapshot, job.name).map(({ key, error, at }) => ({
      key,
      error,
      at,
    })),
    waitingForMarker: reportWaiting(job, state.waiting ?? [], new Date()),
    backlog: state.backlog ? reportBacklog(state.backlog, new Date()) : null,
    ...backfillOf(snapshot, job),
  };
}

/** The `backfill` field: the latest backfill's range and progress (every shard's, when split). */
function backfillOf(
  snapshot: Snapshot | null,
  job: JobConfig,
): { backfill?: BackfillStatusReport } {
  const states = currentBackfill(readBackfillStates(snapshot, job.name).values());
  const first = states[0];
  if (!first) return {};
  const missing = missingShards(states);
  const updatedAt = states.reduce(
    (max, s) => (s.updatedAt > max ? s.updatedAt : max),
    first.updatedAt,
  );
  const status =
    missing.length === 0 && states.every((s) => s.status === 'done') ? 'done' : 'running';
  if (!first.shard)
    return {
      backfill: {
        from: first.from,
        to: first.to,
        status,
        doneThrough: first.doneThrough,
        updatedAt,
      },
    };
  const shards = [
    ...states.map((s) => ({ index: shardOf(s).index, status: shardStatus(s) })),
    ...missing.map((m) => ({ index: m.index, status: notStarted(job, first, m) })),
  ]
    .sort((a, b) => a.index - b.index)
    .map((s) => s.status);
  return {
    backfill: { from: first.from, to: first.to, status, doneThrough: null, updatedAt, shards },
  };
}

/** A shard of the backfill with no state in the table yet (see missingShards): pending, with the slice it will load. */
function notStarted(job: JobConfig, state: BackfillState, shard: Shard): ShardStatus {
  return {
    shard: describeShard(shard),
    part: describeSlice(shardSlice(job, rangeOfDescription(state.mode, state), shard)),
    status: 'pending',
    doneThrough: null,
    updatedAt: null,
    filesLoaded: 0,
    rowsLoaded: 0,
  };
}

function shardStatus(s: BackfillState): ShardStatus {
  const pending =
    s.status === 'running' &&
    s.doneThrough === null &&
    s.loaded.length === 0 &&
    s.totals.filesLoaded === 0;
  return {
    shard: describeShard(shardOf(s)),
    part: s.part ?? null,
    status: pending ? 'pending' : s.status,
    doneThrough: s.doneThrough,
    // The opening commit wrote a pending shard's state, not the shard: it has committed nothing yet.
    updatedAt: pending ? null : s.updatedAt,
    filesLoaded: s.totals.filesLoaded,
    rowsLoaded: s.totals.rowsLoaded,
  };
}
