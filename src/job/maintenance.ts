/**
 * `optimize` and `vacuum` of a job's target table, inside the job's scope (./scope.ts), with
 * their outcomes returned as values like every other command.
 */
import type { JobConfig } from '../config/schema.js';
import {
  optimizeTable,
  type OptimizeOptions,
  type OptimizeResult,
} from '../maintenance/optimize.js';
import { vacuumTable, type VacuumOptions, type VacuumResult } from '../maintenance/vacuum.js';
import type { RunContext } from './context.js';
import { timedOutcome, type JobOutcome, type ReportedError } from './report.js';
import { withJobScope } from './scope.js';

/** What optimize and vacuum report per job. */
export type MaintenanceReport<R> = {
  job: string;
  command: 'optimize' | 'vacuum';
  /** The target table's URI. */
  table: string;
  status: string;
  durationMs: number;
  error?: ReportedError;
} & Partial<R>;

/** Compact the job's table (see maintenance/optimize.ts). */
export async function optimizeJob(
  job: JobConfig,
  ctx: RunContext,
  opts: Omit<OptimizeOptions, 'spool' | 'signal'>,
): Promise<JobOutcome<MaintenanceReport<OptimizeResult>>> {
  const base = {
    job: job.name,
    command: 'optimize' as const,
    table: job.target.uri,
    status: 'failed',
    durationMs: 0,
  };
  return timedOutcome(
    () => base,
    () =>
      withJobScope(job, ctx, `${job.name}-optimize`, async ({ table, session, spool }) => {
        const result = await optimizeTable(table, session, {
          ...opts,
          spool,
          ...(ctx.signal ? { signal: ctx.signal } : {}),
        });
        return {
          ...base,
          status: result.version === null ? 'nothing-to-do' : 'optimized',
          ...result,
        };
      }),
  );
}

/** Delete the job's table's unneeded files (see maintenance/vacuum.ts). */
export async function vacuumJob(
  job: JobConfig,
  ctx: RunContext,
  opts: Omit<VacuumOptions, 'signal'>,
): Promise<JobOutcome<MaintenanceReport<VacuumResult>>> {
  const base = {
    job: job.name,
    command: 'vacuum' as const,
    table: job.target.uri,
    status: 'failed',
    durationMs: 0,
  };
  return timedOutcome(
    () => base,
    () =>
      withJobScope(job, ctx, `${job.name}-vacuum`, async ({ table }) => {
        const result = await vacuumTable(table, {
          ...opts,
          ...(ctx.signal ? { signal: ctx.signal } : {}),
        });
        return { ...base, status: result.dryRun ? 'dry-run' : 'vacuumed', ...result };
      }),
  );
}
