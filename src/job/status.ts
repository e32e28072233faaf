/**
 * `tidemark status`: what the table says about a job, read from its latest snapshot.
 */
import type { JobConfig } from '../config/schema.js';
import type { Snapshot } from '../delta/snapshot.js';
import { totalRecords } from '../delta/stats.js';
import { readBackfillState } from './backfill/state.js';
import type { RunContext } from './context.js';
import { outcomeOf, type JobOutcome, type StatusReport } from './report.js';
import { withJobScope } from './scope.js';
import { readJobState } from './state.js';
import { describeWatermark } from './watermark.js';

/** Status of one job, read from its table's latest snapshot. Never throws. */
export async function jobStatus(job: JobConfig, ctx: RunContext): Promise<JobOutcome<StatusReport>> {
  return outcomeOf(
    () => statusOf(job, null),
    () => withJobScope(job, ctx, `${job.name}-status`, async ({ table }) => statusOf(job, await table.snapshot())),
  );
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
    quarantined: state.quarantined.map(({ key, error, at }) => ({ key, error, at })),
    ...backfillOf(snapshot, job.name),
  };
}

/** The `backfill` field: the latest backfill's range and progress. */
function backfillOf(snapshot: Snapshot | null, job: string): Pick<StatusReport, 'backfill'> {
  const b = readBackfillState(snapshot, job);
  return b ? { backfill: { from: b.from, to: b.to, status: b.status, doneThrough: b.doneThrough, updatedAt: b.updatedAt } } : {};
}
