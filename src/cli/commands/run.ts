/**
 * `tidemark run` and `tidemark status`.
 */
import type { Command } from 'commander';
import { runJob } from '../../job/run-job.js';
import { jobStatus } from '../../job/status.js';
import { RunObserver } from '../../observe/observed-run.js';
import { tidemarkVersion } from '../version.js';
import { forEachJob } from '../job-loop.js';
import type { CliIO, CommandHost } from '../io.js';
import { withCommonOptions, type CommonFlags } from '../options.js';
import { formatRun, formatStatus } from '../output.js';

/** Add `run` and `status` to the program. */
export function addRunCommands(program: Command, host: CommandHost): void {
  withCommonOptions(program.command('run'))
    .description('load what is new since the last successful run, one commit per batch')
    .option('--dry-run', 'show the plan and the reason for each decision; change nothing')
    .option('--accept-config-change', 'a changed target.key or orderBy drops the deletes the job remembers (tombstones) that no longer fit it, instead of refusing (exit 2)')
    .action(async (flags: RunFlags) => host.setExitCode(await runCommand(flags, host.io)));
  withCommonOptions(program.command('status'))
    .description('show watermark, last run, table version, rows, files and quarantined files per job')
    .action(async (flags: CommonFlags) => host.setExitCode(await statusCommand(flags, host.io)));
}

type RunFlags = CommonFlags & { dryRun?: boolean; acceptConfigChange?: boolean };

/** Run each selected job once; resolves to the exit code. */
export function runCommand(flags: RunFlags, io: CliIO): Promise<number> {
  // One observer per invocation: lineage's parent run, and one metrics file for its jobs.
  let observer: RunObserver | null = null;
  return forEachJob(flags, io, {
    command: 'run',
    run: (job, ctx, invocation) => {
      observer ??= new RunObserver({ ...invocation, producer: `urn:tidemark:${tidemarkVersion()}` });
      return observer.run(job, ctx, runJob);
    },
    format: formatRun,
    context: { dryRun: flags.dryRun ?? false, ...(flags.acceptConfigChange ? { acceptConfigChange: true } : {}) },
  });
}

/** Print each selected job's status; resolves to the exit code. */
export function statusCommand(flags: CommonFlags, io: CliIO): Promise<number> {
  return forEachJob(flags, io, { command: 'status', run: jobStatus, format: formatStatus });
}
