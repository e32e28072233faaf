/**
 * `tidemark optimize` and `tidemark vacuum`: table maintenance on each selected job's target.
 * Jobs run one after another; a failed job is reported and the others still run; the exit code
 * is the worst one (exit-codes.ts: a lost OPTIMIZE race is 3, a refused retention 2).
 *
 * Mount with `addMaintenanceCommands(program, { io, setExitCode })` from main.ts.
 */
import type { Command } from 'commander';
import prettyBytes from 'pretty-bytes';
import { parseDurationOr, parseSize } from '../../config/units.js';
import { ConfigError } from '../../errors.js';
import { optimizeJob, vacuumJob } from '../../job/maintenance.js';
import { forEachJob, type PerJob } from '../job-loop.js';
import type { CliIO, CommandHost } from '../io.js';
import { withCommonOptions, type CommonFlags } from '../options.js';

interface OptimizeFlags extends CommonFlags {
  targetSize?: string;
  minFiles?: string;
  purge?: boolean;
  maxDeletedShare?: string;
  dryRun?: boolean;
}

const HOUR_MS = 3_600_000;

interface VacuumFlags extends CommonFlags {
  retain?: string;
  dryRun?: boolean;
  unsafeAllowShortRetention?: boolean;
}

/** Add `optimize` and `vacuum` to the program. */
export function addMaintenanceCommands(program: Command, cli: CommandHost): void {
  withCommonOptions(program.command('optimize'))
    .description('compact small files within each partition (a dataChange=false commit)')
    .option('--target-size <size>', 'target file size, e.g. 128MiB', '128MiB')
    .option(
      '--min-files <n>',
      'compact a partition only when it has at least this many small files',
      '2',
    )
    .option('--purge', 'also rewrite every file with a deletion vector, without its deleted rows')
    .option(
      '--max-deleted-share <ratio>',
      'rewrite a file whose deletion vector deletes more than this share of its rows',
      '0.05',
    )
    .option('--dry-run', 'show which files would be compacted; write and commit nothing')
    .action(async (flags: OptimizeFlags) => cli.setExitCode(await optimizeCommand(flags, cli.io)));
  withCommonOptions(program.command('vacuum'))
    .description('delete data files no longer referenced and older than the retention')
    .option(
      '--retain <duration>',
      "keep files needed within this duration: 7d, 168h (a plain number is hours; default: the table's retention, 7d)",
    )
    .option('--dry-run', 'list the files that would be deleted; delete nothing')
    .option(
      '--unsafe-allow-short-retention',
      "allow a retention below the table's deletedFileRetentionDuration",
    )
    .action(async (flags: VacuumFlags) => cli.setExitCode(await vacuumCommand(flags, cli.io)));
}

/** Run OPTIMIZE on each selected job's table; resolves to the exit code. */
export async function optimizeCommand(flags: OptimizeFlags, io: CliIO): Promise<number> {
  const targetFileBytes = parseSize(flags.targetSize ?? '128MiB');
  const minFiles = Number(flags.minFiles ?? '2');
  if (targetFileBytes === null || targetFileBytes <= 0)
    throw new ConfigError(`--target-size: not a size: ${flags.targetSize}`, {
      field: 'target-size',
    });
  if (!Number.isInteger(minFiles) || minFiles < 2)
    throw new ConfigError(`--min-files must be an integer of at least 2, got ${flags.minFiles}`, {
      field: 'min-files',
    });
  const maxDeletedShare = Number(flags.maxDeletedShare ?? '0.05');
  if (!(maxDeletedShare >= 0 && maxDeletedShare <= 1)) {
    throw new ConfigError(
      `--max-deleted-share must be a number from 0 to 1, got ${flags.maxDeletedShare}`,
      { field: 'max-deleted-share' },
    );
  }
  const dryRun = flags.dryRun ?? false;
  const opts = {
    targetFileBytes,
    minFilesPerPartition: minFiles,
    purge: flags.purge ?? false,
    maxDeletedShare,
    dryRun,
  };
  const run: PerJob<Awaited<ReturnType<typeof optimizeJob>>['report']>['run'] = async (
    job,
    ctx,
  ) => {
    const outcome = await optimizeJob(job, ctx, opts);
    return dryRun && outcome.ok
      ? { ...outcome, report: { ...outcome.report, status: 'dry-run' } }
      : outcome;
  };
  return forEachJob(flags, io, { command: 'optimize', run, format: formatMaintenance });
}

/** Run VACUUM on each selected job's table; resolves to the exit code. */
export async function vacuumCommand(flags: VacuumFlags, io: CliIO): Promise<number> {
  // The same duration syntax as the config (7d, 168h); a bare number stays hours, as it always was.
  const retainMs = flags.retain === undefined ? undefined : parseDurationOr(flags.retain, HOUR_MS);
  if (retainMs === null)
    throw new ConfigError(
      `--retain must be a duration such as 7d or 168h (or a number of hours), got ${flags.retain}`,
      { field: 'retain' },
    );
  const retainHours = retainMs === undefined ? undefined : retainMs / HOUR_MS;
  const opts = {
    ...(retainHours === undefined ? {} : { retainHours }),
    dryRun: flags.dryRun ?? false,
    unsafeAllowShortRetention: flags.unsafeAllowShortRetention ?? false,
  };
  return forEachJob(flags, io, {
    command: 'vacuum',
    run: (job, ctx) => vacuumJob(job, ctx, opts),
    format: formatMaintenance,
  });
}

const mib = (bytes: unknown): string => prettyBytes(Number(bytes ?? 0), { binary: true });
const purged = (r: Record<string, unknown>): string => {
  const n = Number(r['deletionVectorsPurged'] ?? 0);
  return n === 0 ? '' : `, ${n} deletion vector${n === 1 ? '' : 's'} purged`;
};

/** A few human lines for one job's maintenance report. */
export function formatMaintenance(report: object): string {
  const r = report as Record<string, unknown>;
  const head = `${String(r['job'])}: ${String(r['command'])} ${String(r['status'])}`;
  if (r['status'] === 'failed')
    return `${head}: ${(r['error'] as { message?: string } | undefined)?.message ?? 'unknown error'}\n`;
  if (r['command'] === 'optimize') {
    if (r['dryRun']) {
      return (
        `${head}: would compact ${String(r['filesRemoved'])} files (${mib(r['bytesRemoved'])}) into ${String(r['filesAdded'])} in ` +
        `${String(r['partitionsCompacted'])} partitions${purged(r)} (table version ${String(r['readVersion'])}); nothing written\n`
      );
    }
    if (r['version'] === null) return `${head} (table version ${String(r['readVersion'])})\n`;
    return (
      `${head}: version ${String(r['version'])}; ${String(r['filesRemoved'])} files (${mib(r['bytesRemoved'])}) → ` +
      `${String(r['filesAdded'])} files (${mib(r['bytesAdded'])}) in ${String(r['partitionsCompacted'])} partitions${purged(r)}\n`
    );
  }
  const files = (r['filesDeleted'] as string[] | undefined) ?? [];
  const verb = r['dryRun'] ? 'would delete' : 'deleted';
  const lines = [
    `${head}: ${verb} ${files.length} files (${mib(r['bytesDeleted'])}), retention ${String(r['retainHours'])} h, kept ${String(r['filesKept'])}`,
  ];
  if (r['dryRun']) lines.push(...files.map((k) => `    - ${k}`));
  return lines.join('\n') + '\n';
}
