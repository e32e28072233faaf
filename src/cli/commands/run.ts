/**
 * `tidemark run` and `tidemark status`.
 */
import type { Command } from 'commander';
import { ConfigError } from '../../errors.js';
import { cleanupAfterRun } from '../../job/cleanup.js';
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
    .option(
      '--accept-config-change',
      'a changed target.key or orderBy drops the deletes the job remembers (tombstones) that no longer fit it, instead of refusing (exit 2)',
    )
    .option(
      '--adopt-state-of <old>',
      "the job (one --job) was renamed from OLD: carry OLD's state in the table over to it (watermark, remembered files, tombstones), in a commit of its own",
    )
    .option(
      '--allow-large-delete',
      "a snapshot source may delete more than source.maxDeleteShare of the table's keys, this run only",
    )
    .option(
      '--fresh',
      'the job is not a renamed one although another job in its table loads the same source: start it anew',
    )
    .action(async (flags: RunFlags) => host.setExitCode(await runCommand(flags, host.io)));
  withCommonOptions(program.command('status'))
    .description(
      'show watermark, last run, table version, rows, files and quarantined files per job',
    )
    .action(async (flags: CommonFlags) => host.setExitCode(await statusCommand(flags, host.io)));
}

type RunFlags = CommonFlags & {
  dryRun?: boolean;
  acceptConfigChange?: boolean;
  allowLargeDelete?: boolean;
  adoptStateOf?: string;
  fresh?: boolean;
};

/** Run each selected job once; resolves to the exit code. */
export async function runCommand(flags: RunFlags, io: CliIO): Promise<number> {
  if (flags.adoptStateOf !== undefined && flags.job?.length !== 1) {
    throw new ConfigError(
      `--adopt-state-of ${flags.adoptStateOf} takes exactly one --job NAME: the job's new name`,
      { field: 'job' },
    );
  }
  if (flags.adoptStateOf !== undefined && flags.fresh)
    throw new ConfigError('--adopt-state-of and --fresh say opposite things: give one', {
      field: 'fresh',
    });
  // One observer per invocation: lineage's parent run, and one metrics file for its jobs.
  let observer: RunObserver | null = null;
  return forEachJob(flags, io, {
    command: 'run',
    run: (job, ctx, invocation) => {
      observer ??= new RunObserver({
        ...invocation,
        producer: `urn:tidemark:${tidemarkVersion()}`,
      });
      return observer.run(job, ctx, async (j, c) => cleanupAfterRun(j, c, await runJob(j, c)));
    },
    format: formatRun,
    context: {
      dryRun: flags.dryRun ?? false,
      ...(flags.acceptConfigChange ? { acceptConfigChange: true } : {}),
      ...(flags.allowLargeDelete ? { allowLargeDelete: true } : {}),
      ...(flags.adoptStateOf !== undefined ? { adoptStateOf: flags.adoptStateOf } : {}),
      ...(flags.fresh ? { fresh: true } : {}),
    },
  });
}

/** Print each selected job's status; resolves to the exit code. */
export function statusCommand(flags: CommonFlags, io: CliIO): Promise<number> {
  return forEachJob(flags, io, { command: 'status', run: jobStatus, format: formatStatus });
}
