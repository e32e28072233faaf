/**
 * Files that landed in a partition the lookback window has passed (`discover.lateCheck`), or, by
 * modification time, that arrived with a LastModified behind the settle window and the job never
 * loaded (its ledger: ./ledger.ts): they are not loaded, so the run names them (the run report's
 * `skipped`, and a warning saying how to load them) rather than passing them over in silence.
 */
import type { JobConfig } from '../config/schema.js';
import { BEHIND_WINDOW_REASONS, PartitionClock, type DiscoveryPlan } from '../discovery/index.js';
import type { SkippedFile } from './report.js';

/**
 * The files of `plan` behind its window that did not load, and the warning about them (null:
 * none); by modification time also the LastModified range a backfill loading them takes.
 */
export function lateFiles(
  job: JobConfig,
  plan: DiscoveryPlan,
): { files: SkippedFile[]; warning: string | null; range?: { from: string; to: string } } {
  const late = plan.decisions.filter((d) => BEHIND_WINDOW_REASONS.has(d.reason));
  if (late.length === 0) return { files: [], warning: null };
  const files = late.map((d) => ({ key: d.key, reason: d.reason }));
  if (plan.mode === 'modified') return behindSettle(job, plan, files);
  const d = job.source.discover;
  const watermark = plan.prevState?.mode === 'partition' ? plan.prevState.watermark : null;
  const oldest = late.reduce(
    (min, f) => (f.partition !== undefined && f.partition < min ? f.partition : min),
    late[0]!.partition ?? '',
  );
  const reach =
    d.by === 'partition' && watermark !== null
      ? lookbackReaching(new PartitionClock(d.timezone), watermark, oldest)
      : null;
  const how =
    reach !== null
      ? `raise source.discover.lookback to ${reach} (the state remembers those partitions: nothing loads twice) or backfill them`
      : 'backfill them';
  const shown = files
    .slice(0, 10)
    .map((f) => f.key)
    .join(', ');
  return {
    files,
    warning: `${late.length} file(s) landed in partitions behind the lookback window (from ${oldest}) and were not loaded: ${shown}${files.length > 10 ? ', …' : ''}; to load them, ${how}`,
  };
}

/** The smallest lookback whose window, from `watermark`, reaches back to `partition`. */
function lookbackReaching(clock: PartitionClock, watermark: string, partition: string): number {
  let n = 0;
  while (clock.step(watermark, -n) > partition) n++;
  return n;
}

/** Files behind the settle window: the warning gives the backfill whose range covers their LastModified times. */
function behindSettle(
  job: JobConfig,
  plan: DiscoveryPlan,
  files: SkippedFile[],
): { files: SkippedFile[]; warning: string; range: { from: string; to: string } } {
  const times = new Map(plan.behindWindow.map((f) => [f.key, f.arrival.getTime()]));
  const at = files.map((f) => times.get(f.key)!);
  const range = {
    from: new Date(Math.min(...at)).toISOString(),
    to: new Date(Math.max(...at)).toISOString(),
  };
  const shown = files
    .slice(0, 10)
    .map((f) => f.key)
    .join(', ');
  return {
    files,
    range,
    warning:
      `${files.length} file(s) have a LastModified behind the settle window (copied in with their old times kept?) and were not loaded: ${shown}${files.length > 10 ? ', …' : ''}; ` +
      `to load them: tidemark backfill --job ${job.name} --from ${range.from} --to ${range.to} (or leave them out with source.exclude)`,
  };
}
