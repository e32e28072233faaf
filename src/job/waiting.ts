/**
 * Partitions waiting for their `_SUCCESS` marker (`requireSuccessMarker`, partition discovery):
 * what a run plans (discovery's `waiting`), records in the job state, and reports; `status`
 * shows the recorded ones. One waiting longer than `discover.markerTimeout` is overdue: it still
 * holds the watermark (its files are never dropped), and is called out until its marker comes or
 * the job is reset past it.
 */
import type { JobConfig } from '../config/schema.js';
import type { DiscoveryPlan } from '../discovery/index.js';
import type { WaitingForMarker } from './report.js';
import type { WaitingPartitionState } from './state.js';

/** The plan's waiting partitions, as the state records them. */
export function waitingOf(plan: DiscoveryPlan): WaitingPartitionState[] {
  return plan.waiting.map((w) => ({
    partition: w.partition,
    files: w.files,
    since: w.since.toISOString(),
  }));
}

/** The job's marker timeout in ms (null: the job does not wait for markers). */
function markerTimeoutOf(job: JobConfig): number | null {
  const d = job.source.discover;
  return d.by === 'partition' && d.requireSuccessMarker ? d.markerTimeout : null;
}

/** Waiting partitions as reports show them, overdue as of `now`. */
export function reportWaiting(
  job: JobConfig,
  waiting: readonly WaitingPartitionState[],
  now: Date,
): WaitingForMarker[] {
  const timeout = markerTimeoutOf(job);
  return waiting.map((w) => ({
    ...w,
    overdue: timeout !== null && now.getTime() - Date.parse(w.since) > timeout,
  }));
}

/** Whether two recorded lists say the same. */
export function sameWaiting(
  a: readonly WaitingPartitionState[] | undefined,
  b: readonly WaitingPartitionState[],
): boolean {
  return JSON.stringify(a ?? []) === JSON.stringify(b);
}
