/**
 * The loop every command runs: load the config, select the jobs, run the command on each one
 * after another (a failed job is reported and the others still run), print one report per job
 * (a JSON line with --json, a few human lines otherwise), and return the worst exit code.
 */
import { loadConfig } from '../config/load.js';
import type { JobConfig, TidemarkConfig } from '../config/schema.js';
import type { RunContext } from '../job/context.js';
import type { JobOutcome } from '../job/report.js';
import { createLogger, type Logger } from '../log/logger.js';
import { startRunProgress } from '../log/progress.js';
import { EXIT_OK, exitCodeFor, worstExitCode } from './exit-codes.js';
import { EXIT_INTERRUPTED, interruptedError } from './failure.js';
import type { CliIO } from './io.js';
import type { CommonFlags } from './options.js';
import { errorInfo, printJson } from './output.js';
import { selectJobs } from './select-jobs.js';

/** What a command may want to know about the invocation besides the job. */
export interface Invocation {
  config: TidemarkConfig;
  /** The config file as given (relative paths in it are relative to its folder). */
  configPath: string;
  runId: string;
}

/** One command's work on one job, and how its report reads on a terminal. */
export interface PerJob<R> {
  /** Name in log lines (`run failed`, `vacuum failed`). */
  command: string;
  run(job: JobConfig, ctx: RunContext, invocation: Invocation): Promise<JobOutcome<R>>;
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
  const runId = io.runId ?? 'unknown';
  const logger = loggerFor(flags, io);
  const config = await loadConfig(flags.config);
  const names =
    flags.job === undefined ? undefined : Array.isArray(flags.job) ? flags.job : [flags.job];
  const invocation: Invocation = { config, configPath: flags.config, runId };
  let worst = EXIT_OK;
  for (const job of selectJobs(config, names)) {
    const progress = startRunProgress({
      job: job.name,
      logger,
      ...(io.context?.tty !== undefined ? { tty: io.context.tty } : {}),
      stream: io.stderr,
    });
    const ctx: RunContext = {
      storage: config.storage,
      engine: config.engine,
      progress,
      ...(io.signal ? { signal: io.signal } : {}),
      ...perJob.context,
      ...io.context,
      logger,
    };
    const outcome = await perJob.run(job, ctx, invocation).finally(() => progress.done());
    let report: R & { error?: unknown; runId?: string } = outcome.report;
    if (!outcome.ok) {
      // Whatever the abort surfaced as inside the job, the report says it was interrupted.
      const interrupted = io.signal?.aborted ?? false;
      worst = interrupted ? EXIT_INTERRUPTED : worstExitCode(worst, exitCodeFor(outcome.error));
      const error = interrupted ? interruptedError(io.signal!) : errorInfo(outcome.error);
      logger.error({ job: job.name, error }, `${perJob.command} failed`);
      // What was committed before the failure stays committed; the report says so.
      report = { ...report, error };
    }
    report = { ...report, runId };
    if (flags.json) printJson(io.stdout, report);
    else io.stdout.write(perJob.format(report));
    if (io.signal?.aborted) return EXIT_INTERRUPTED;
  }
  return worst;
}

/** The logger of a command: the test's, or JSON/pretty lines on stderr at the flag's level; every line carries the runId. */
export function loggerFor(flags: Pick<CommonFlags, 'logLevel'>, io: CliIO): Logger {
  const base =
    io.context?.logger ??
    createLogger({
      stream: io.stderr,
      ...(flags.logLevel ? { level: flags.logLevel as 'info' } : {}),
    });
  return io.runId ? base.child({ runId: io.runId }) : base;
}
