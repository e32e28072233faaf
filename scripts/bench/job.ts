/**
 * Running tidemark's real job for the ingest benchmark, and where its time goes.
 *
 * `runOrdersJob` calls `runJob` exactly as the CLI does (config validated with defaults, silent
 * logger). Where the time goes comes from the run report's own per-phase timings (list, fetch,
 * load, dedupe, merge, commit), so the profile is the real job, never a copy of it.
 */
import { validateConfig } from '../../src/config/load.js';
import type { JobConfig } from '../../src/config/schema.js';
import type { RunContext } from '../../src/job/context.js';
import type { PhaseTimings } from '../../src/job/phases.js';
import type { RunReport } from '../../src/job/report.js';
import { runJob } from '../../src/job/run-job.js';
import { silentLogger } from '../../src/log/logger.js';
import { timed } from './clock.js';
import { slowest, traceSql, type SlowSql } from './sql-trace.js';

/** Where an orders job reads and writes. */
export interface OrdersJobSpec {
  name: string;
  /** Landing zone folder ({yyyy}/{mm}/{dd}). */
  source: string;
  /** Delta table folder. */
  target: string;
  maxFilesPerBatch?: number;
  /** Bytes per batch (jobs[].maxBytesPerBatch); default the job's (1 GiB). */
  maxBytesPerBatch?: number;
  /** Rows per data file written (target.maxRowsPerFile); default the job's. */
  maxRowsPerFile?: number;
  /** Parent of the run's spool folder. */
  spoolRoot: string;
  /** Settings of the config's `storage` (an S3 endpoint); default none (local folders). */
  storage?: Record<string, unknown>;
}

/** A validated job (all defaults applied) and its run context. */
export interface OrdersJob {
  job: JobConfig;
  ctx: RunContext;
}

/** The job as a user would configure it: by partition, MERGE on order_id, latest updated_at. */
export function ordersJob(spec: OrdersJobSpec): OrdersJob {
  const config = validateConfig({
    storage: { singleWriter: false, ...spec.storage },
    jobs: [
      {
        name: spec.name,
        source: {
          uri: spec.source,
          format: 'parquet',
          discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}' },
        },
        target: {
          uri: spec.target,
          mode: 'merge',
          key: ['order_id'],
          orderBy: 'updated_at',
          ...(spec.maxRowsPerFile === undefined ? {} : { maxRowsPerFile: spec.maxRowsPerFile }),
        },
        ...(spec.maxFilesPerBatch === undefined ? {} : { maxFilesPerBatch: spec.maxFilesPerBatch }),
        ...(spec.maxBytesPerBatch === undefined ? {} : { maxBytesPerBatch: spec.maxBytesPerBatch }),
      },
    ],
  });
  const ctx: RunContext = {
    storage: config.storage,
    logger: silentLogger(),
    spoolRoot: spec.spoolRoot,
    tty: false,
  };
  return { job: config.jobs[0]!, ctx };
}

/** One real run, timed (wall and process CPU); a failed run throws its error. */
export async function runOrdersJob(
  j: OrdersJob,
): Promise<{ ms: number; cpuMs: number; report: RunReport }> {
  const { ms, cpuMs, value } = await timed(() => runJob(j.job, j.ctx));
  if (!value.ok) throw value.error;
  return { ms, cpuMs, report: value.report };
}

/** A real run's phases (from its report), its duration and its slowest statements. */
export interface JobProfile {
  totalMs: number;
  phases: PhaseTimings;
  sql: SlowSql[];
}

/** One real run with every DuckDB statement traced; keeps the `top` slowest shapes. */
export async function tracedProfile(j: OrdersJob, top = 8): Promise<JobProfile> {
  const { value, statements } = await traceSql(() => runOrdersJob(j));
  return {
    totalMs: value.report.durationMs,
    phases: value.report.phases,
    sql: slowest(statements, top),
  };
}
