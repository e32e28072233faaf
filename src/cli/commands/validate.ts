/**
 * `tidemark validate [--config FILE] [--job NAME]... [--json]`: every problem of the config and of
 * each job's source and target at once (src/job/validate.ts). Exit 0 when all is well, 2 when any
 * problem is in the config, else 1, or 4 when the only problems are stores that did not answer.
 *
 * Mount with `addValidateCommand(program, { io, setExitCode })` from main.ts.
 */
import type { Command } from 'commander';
import type { Problem } from '../../job/preflight.js';
import { validateJobs, type ValidateReport } from '../../job/validate.js';
import {
  EXIT_FAILED,
  EXIT_LOST_RACE,
  EXIT_OK,
  EXIT_STORAGE_UNAVAILABLE,
  EXIT_USAGE,
  worstExitCode,
} from '../exit-codes.js';
import type { CliIO, CommandHost } from '../io.js';
import { loggerFor } from '../job-loop.js';
import { withCommonOptions, type CommonFlags } from '../options.js';
import { printJson } from '../output.js';

const VALIDATE_HELP = `
Checks, per job: the config (unknown fields with a suggestion, layouts, time zones, start values,
\${VAR}s), the source (exists, is listable, its folders fit the layout), the target (a probe object
is written and deleted under _tidemark/; the store honours conditional writes unless singleWriter;
an existing table is readable and writable by tidemark) and deleteWhen (one SQL expression, naming
columns the table has). Every problem is reported, not only the first.

Exit codes: 0 all is well (warnings aside), 2 a config problem, 1 another problem, 4 a store did
not answer (retry later).
`;

/** Add `validate` to the program. */
export function addValidateCommand(program: Command, host: CommandHost): void {
  withCommonOptions(program.command('validate'))
    .description("check the config and each job's source and target; report every problem at once")
    .addHelpText('after', VALIDATE_HELP)
    .action(async (flags: CommonFlags) => host.setExitCode(await validateCommand(flags, host.io)));
}

/** Validate the selected jobs and print a report per job; resolves to the exit code. */
export async function validateCommand(flags: CommonFlags, io: CliIO): Promise<number> {
  const logger = loggerFor(flags, io);
  const reports = await validateJobs(
    { file: flags.config, ...(flags.job ? { jobs: flags.job } : {}) },
    { logger, ...(io.signal ? { signal: io.signal } : {}), ...io.context },
  );
  for (const r of reports) {
    if (flags.json)
      printJson(io.stdout, {
        job: r.job,
        status: r.status,
        problems: r.problems.map(shown),
        warnings: r.warnings.map(shown),
      });
    else io.stdout.write(formatValidate(r));
  }
  return validateExitCode(reports);
}

/** The exit code of the problem that most needs a person (worstExitCode): a config problem (2) first, 4 last. */
export function validateExitCode(reports: readonly ValidateReport[]): number {
  const codeOf = (p: Problem) =>
    p.kind === 'usage'
      ? EXIT_USAGE
      : p.kind === 'transient'
        ? EXIT_STORAGE_UNAVAILABLE
        : p.kind === 'conflict'
          ? EXIT_LOST_RACE
          : EXIT_FAILED;
  return reports.flatMap((r) => r.problems.map(codeOf)).reduce(worstExitCode, EXIT_OK);
}

/** A problem as printed: what found it, the field, the message (its kind only decides the exit code). */
function shown(p: Problem): { check: string; field?: string; message: string } {
  return { check: p.check, ...(p.field ? { field: p.field } : {}), message: p.message };
}

/** A few human lines for one job's validation. */
export function formatValidate(r: ValidateReport): string {
  const name = r.job ?? 'config file';
  const n = r.problems.length;
  const lines = [`${name}: ${n === 0 ? 'ok' : `${n} problem${n === 1 ? '' : 's'}`}`];
  for (const p of r.problems) lines.push(`  ${p.check.padEnd(10)} ${p.message}`);
  for (const w of r.warnings) lines.push(`  warning    ${w.message}`);
  return lines.join('\n') + '\n';
}
