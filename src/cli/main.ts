/**
 * The command line: arguments to a validated config, jobs run one after another, reports on
 * stdout, logs on stderr, and the exit code of the worst outcome.
 */
import { Command, CommanderError } from 'commander';
import { loadConfig } from '../config/load.js';
import { DuckSession } from '../engine/duckdb.js';
import { createLogger, type Logger } from '../log/logger.js';
import type { RunContext } from '../job/context.js';
import { reportOfFailedRun, runJob } from '../job/run-job.js';
import { jobStatus } from '../job/status.js';
import { emptyReport, type RunReport } from '../job/report.js';
import { addMaintenanceCommands } from './commands/maintenance.js';
import { addBackfillCommands } from './commands/backfill.js';
import { selectJobs } from './select-jobs.js';
import { withCommonOptions, type CommonFlags } from './options.js';
import { EXIT_FAILED, EXIT_OK, EXIT_USAGE, exitCodeFor } from './exit-codes.js';
import { errorInfo, formatRun, formatStatus, printJson, type Output } from './output.js';

export interface CliIO {
  stdout: Output;
  stderr: NodeJS.WritableStream;
  /** Aborted on SIGINT/SIGTERM. */
  signal?: AbortSignal;
  /** Overrides for tests. */
  context?: Partial<RunContext>;
}

/** Run the CLI; resolves to the exit code. */
export async function main(argv: string[], io: CliIO): Promise<number> {
  let exitCode = EXIT_OK;
  const program = new Command('tidemark')
    .description('Load new files from S3 landing zones into Delta Lake tables, exactly once.')
    .version(process.env['npm_package_version'] ?? '0.1.0')
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.stdout.write(s), writeErr: (s) => io.stderr.write(s) })
    .showHelpAfterError();

  withCommonOptions(program.command('run'))
    .description('load what is new since the last successful run, one commit per batch')
    .option('--dry-run', 'show the plan and the reason for each decision; change nothing')
    .action(async (flags: CommonFlags & { dryRun?: boolean }) => {
      exitCode = await runCommand(flags, io);
    });

  withCommonOptions(program.command('status'))
    .description('show watermark, last run, table version, rows, files and quarantined files per job')
    .action(async (flags: CommonFlags) => {
      exitCode = await statusCommand(flags, io);
    });

  addMaintenanceCommands(program, { io, setExitCode: (code) => (exitCode = code) });
  addBackfillCommands(program, { io, setExitCode: (code) => (exitCode = code) });

  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) {
      return err.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
    }
    io.stderr.write(`tidemark: ${errorInfo(err).message}\n`);
    return exitCodeFor(err);
  }
  return exitCode;
}

function loggerFor(flags: CommonFlags, io: CliIO): Logger {
  return io.context?.logger ?? createLogger({ stream: io.stderr, ...(flags.logLevel ? { level: flags.logLevel as 'info' } : {}) });
}

async function runCommand(flags: CommonFlags & { dryRun?: boolean }, io: CliIO): Promise<number> {
  const logger = loggerFor(flags, io);
  const config = await loadConfig(flags.config);
  const jobs = selectJobs(config, flags.job);
  let worst = EXIT_OK;
  for (const job of jobs) {
    const ctx: RunContext = {
      storage: config.storage,
      logger,
      dryRun: flags.dryRun ?? false,
      ...(io.signal ? { signal: io.signal } : {}),
      ...io.context,
    };
    let report: RunReport;
    try {
      report = await runJob(job, ctx);
    } catch (err) {
      const code = exitCodeFor(err);
      worst = Math.max(worst, code === EXIT_USAGE ? EXIT_USAGE : code);
      logger.error({ job: job.name, error: errorInfo(err) }, 'run failed');
      // The batches committed before the failure stay committed; the report says so.
      report = { ...(reportOfFailedRun(err) ?? emptyReport(job.name)), status: 'failed', error: errorInfo(err) };
    }
    if (flags.json) printJson(io.stdout, report);
    else io.stdout.write(formatRun(report));
    if (io.signal?.aborted) return Math.max(worst, EXIT_FAILED);
  }
  return worst;
}

async function statusCommand(flags: CommonFlags, io: CliIO): Promise<number> {
  const config = await loadConfig(flags.config);
  const jobs = selectJobs(config, flags.job);
  const session = await DuckSession.open();
  try {
    for (const job of jobs) {
      const status = await jobStatus(job, { storage: config.storage }, session);
      if (flags.json) printJson(io.stdout, status);
      else io.stdout.write(formatStatus(status));
    }
  } finally {
    session.close();
  }
  return EXIT_OK;
}
