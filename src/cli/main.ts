/**
 * The command line: arguments to a validated config, jobs run one after another, reports on
 * stdout, logs on stderr, and the exit code of the worst outcome.
 */
import { Command, CommanderError } from 'commander';
import { addBackfillCommands } from './commands/backfill.js';
import { addMaintenanceCommands } from './commands/maintenance.js';
import { addRunCommands } from './commands/run.js';
import { addValidateCommand } from './commands/validate.js';
import { EXIT_OK, EXIT_USAGE, exitCodeFor } from './exit-codes.js';
import type { CliIO } from './io.js';
import { errorInfo } from './output.js';

export type { CliIO } from './io.js';

/** Run the CLI; resolves to the exit code. */
export async function main(argv: string[], io: CliIO): Promise<number> {
  let exitCode = EXIT_OK;
  const program = new Command('tidemark')
    .description('Load new files from S3 landing zones into Delta Lake tables, exactly once.')
    .version(process.env['npm_package_version'] ?? '0.1.0')
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.stdout.write(s), writeErr: (s) => io.stderr.write(s) })
    .showHelpAfterError();

  const host = { io, setExitCode: (code: number) => (exitCode = code) };
  addRunCommands(program, host);
  addMaintenanceCommands(program, host);
  addBackfillCommands(program, host);
  addValidateCommand(program, host);

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
