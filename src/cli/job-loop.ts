/**
 * The loop every command runs: load the config, select the jobs, run the command on each one
 * after another (a failed job is reported and the others still run), print one report per job
 * (a JSON line with --json, a few human lines otherwise), and return the worst exit code.
 */
import { loadConfig } from '../config/load.js';
import type { JobConfig } from '../config/schema.js';
import type { RunContext } from '../job/context.js';
import type { JobOutcome } from '../job/report.js';
import { createLogger, type Logger } from '../log/logger.js';
import { EXIT_FAILED, EXIT_OK, exitCodeFor, worstExitCode } from './exit-codes.js';
import type { CliIO } from './io.js';
import type { CommonFlags } from './options.js';
import { errorInfo, printJson } from './output.js';
import { selectJobs } from './select-jobs.js';

/** One command's work on one job, and how its report reads on a terminal. */
export interface PerJob<R> {
  /** Name in log lines (`run failed`, `vacuum failed`). */
  command: string;
  run(job: JobConfig, ctx: RunContext): Promise<JobOutcome<R>>;
  format(report: R & { error?: unknown }): string;
  /** Extra context fields for every job (e.g. dryRun). */
  context?: Partial<RunContext>;
}

/** Run `perJob` on each job selected by `jobs` (default: --job flags); resolves to the exit code. */
export async function forEachJob<R extends object>(
  flags: Omit<CommonFlags, 'job'> & { job?: string[] | string },
  io: CliIO,
  perJob: PerJob<R>,
): Promise<number> {
  const logger = loggerFor(flags, io);
  const config = await loadConfig(flags.config);
  const names = flags.job === undefined ? undefined : Array.isArray(flags.job) ? flags.job : [flags.job];
  let worst = EXIT_OK;
  for (const job of selectJobs(config, names)) {
    const ctx: RunContext = { storage: config.storage, engine: config.engine, logger, ...(io.signal ? { signal: io.signal } : {}), ...perJob.context, ...io.context };
    const outcome = await perJob.run(job, ctx);
    let report: R & { error?: unknown } = outcome.report;
    if (!outcome.ok) {
      worst = worstExitCode(worst, exitCodeFor(outcome.error));
      logger.error({ job: job.name, error: errorInfo(outcome.error) }, `${perJob.command} failed`);
      // What was committed before the failure stays committed; the report says so.
      report = { ...report, error: errorInfo(outcome.error) };
    }
    if (flags.json) printJson(io.stdout, report);
    else io.stdout.write(perJob.format(report));
    if (io.signal?.aborted) return worstExitCode(worst, EXIT_FAILED);
  }
  return worst;
}

/** The logger of a command: the test's, or JSON/pretty lines on stderr at the flag's level. */
export function loggerFor(flags: Pick<CommonFlags, 'logLevel'>, io: CliIO): Logger {
  return io.context?.logger ?? createLogger({ stream: io.stderr, ...(flags.logLevel ? { level: flags.logLevel as 'info' } : {}) });
}
