/**
 * The command line: arguments to a validated config, jobs run one after another, reports on
 * stdout, logs on stderr, and the exit code of the worst outcome.
 */
import { randomUUID } from 'node:crypto';
import { Command, CommanderError } from 'commander';
import { addBackfillCommands } from './commands/backfill.js';
import { addCleanupCommand } from './commands/cleanup.js';
import { addMaintenanceCommands } from './commands/maintenance.js';
import { addInspectCommands } from './commands/inspect.js';
import { addRunCommands } from './commands/run.js';
import { addValidateCommand } from './commands/validate.js';
import { EXIT_OK, EXIT_USAGE, exitCodeFor } from './exit-codes.js';
import { EXIT_INTERRUPTED, failureReport, interruptedReport } from './failure.js';
import type { CliIO } from './io.js';
import { errorInfo, printJson } from './output.js';
import { tidemarkVersion } from './version.js';

export type { CliIO } from './io.js';

/** Run the CLI; resolves to the exit code. */
export async function main(argv: string[], io: CliIO): Promise<number> {
  let exitCode = EXIT_OK;
  const runId = io.runId ?? randomUUID();
  io = { ...io, runId };
  // Stopped before anything ran (a signal while the process was starting): nothing to run.
  if (io.signal?.aborted) {
    if (argv.includes('--json')) printJson(io.stdout, interruptedReport(io.signal, runId));
    return EXIT_INTERRUPTED;
  }
  const program = new Command('tidemark')
    .description('Load new files from S3 landing zones into Delta Lake tables, exactly once.')
    .version(tidemarkVersion())
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.stdout.write(s), writeErr: (s) => io.stderr.write(s) })
    .showHelpAfterError();

  const host = { io, setExitCode: (code: number) => (exitCode = code) };
  addRunCommands(program, host);
  addMaintenanceCommands(program, host);
  addCleanupCommand(program, host);
  addBackfillCommands(program, host);
  addValidateCommand(program, host);
  addInspectCommands(program, host);
  program.addHelpText('after', EXIT_CODES_HELP);

  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (err) {
    const code =
      err instanceof CommanderError
        ? err.exitCode === 0
          ? EXIT_OK
          : EXIT_USAGE
        : exitCodeFor(err);
    if (!(err instanceof CommanderError)) io.stderr.write(`tidemark: ${errorInfo(err).message}\n`);
    // A scheduler reading --json gets an object for every outcome, also before any job ran.
    if (code !== EXIT_OK && argv.includes('--json'))
      printJson(io.stdout, failureReport(err, code, runId));
    return code;
  }
  return exitCode;
}

const EXIT_CODES_HELP = `
Exit codes (for schedulers):
  0    done (also when nothing was new)
  1    a job failed and needs a person (bad file, bad data)
  2    bad usage or config
  3    lost a commit race to concurrent writers after retries (retry later)
  4    storage unavailable after retries (retry later)
  130  interrupted by SIGINT or SIGTERM (nothing partial committed; run it again)
With --json every outcome prints JSON on stdout: one object per job, or one
{ status: "failed", error, exitCode, retryable } when the command failed before any job ran.
`;
