/**
 * `tidemark status`: what the table says about a job, read from its latest snapshot.
 */
import type { JobConfig } from '../config/schema.js';
import { DeltaTable } from '../delta/table.js';
import type { Snapshot } from '../delta/snapshot.js';
import { totalRecords } from '../delta/stats.js';
import type { DiscoveryState } from '../discovery/index.js';
import type { DuckSession } from '../engine/duckdb.js';
import type { RunContext } from './context.js';
import { openTarget } from './open.js';
import type { StatusReport } from './report.js';
import { readBackfillState } from './backfill-state.js';
import { readJobState } from './state.js';
import { describeWatermark } from './watermark.js';

/** Status of one job. */
export async function jobStatus(job: JobConfig, ctx: Pick<RunContext, 'storage'>, session: DuckSession): Promise<StatusReport> {
  const table = DeltaTable.open(openTarget(job, ctx.storage), session, { singleWriter: ctx.storage.singleWriter });
  const snapshot = await table.snapshot();
  const state = readJobState(snapshot, job.name);
  const files = snapshot?.files ?? [];
  // Row counts come from file stats; one file without stats makes the total unknown.
  const rows = totalRecords(files) ?? null;
  return {
    job: job.name,
    discovery: job.source.discover.by,
    watermark: describeWatermark(state.discovery as DiscoveryState | null),
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
