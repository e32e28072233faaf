/**
 * `tidemark optimize` and `tidemark vacuum`: table maintenance on each selected job's target.
 * Jobs run one after another; a failed job is reported and the others still run; the exit code
 * is the worst one (exit-codes.ts: a lost OPTIMIZE race is 3, a refused retention 2).
 *
 * Mount with `addMaintenanceCommands(program, { io, setExitCode })` from main.ts.
 */
import type { Command } from 'commander';
import { loadConfig } from '../../config/load.js';
import { parseSize } from '../../config/units.js';
import { DeltaTable } from '../../delta/table.js';
import { DuckSession } from '../../engine/duckdb.js';
import { ConfigError } from '../../errors.js';
import { openTarget } from '../../job/open.js';
import { createLogger, type Logger } from '../../log/logger.js';
import { optimizeTable, type OptimizeResult } from '../../maintenance/optimize.js';
import { vacuumTable, type VacuumResult } from '../../maintenance/vacuum.js';
import { EXIT_OK, exitCodeFor } from '../exit-codes.js';
import type { CliIO } from '../main.js';
import { selectJobs } from '../select-jobs.js';
import { withCommonOptions, type CommonFlags } from '../options.js';
import { errorInfo, printJson } from '../output.js';

/** What the commands need from main: its IO and a way to set the process's exit code. */
export interface MaintenanceCli {
  io: CliIO;
  setExitCode(code: number): void;
}


interface OptimizeFlags extends CommonFlags {
  targetSize?: string;
  minFiles?: string;
}

interface VacuumFlags extends CommonFlags {
  retain?: string;
  dryRun?: boolean;
  unsafeAllowShortRetention?: boolean;
}

/** Add `optimize` and `vacuum` to the program. */
export function addMaintenanceCommands(program: Command, cli: MaintenanceCli): void {
  withCommonOptions(program.command('optimize'))
    .description('compact small files within each partition (a dataChange=false commit)')
    .option('--target-size <size>', 'target file size, e.g. 128MiB', '128MiB')
    .option('--min-files <n>', 'compact a partition only when it has at least this many small files', '2')
    .action(async (flags: OptimizeFlags) => cli.setExitCode(await optimizeCommand(flags, cli.io)));
  withCommonOptions(program.command('vacuum'))
    .description('delete data files no longer referenced and older than the retention')
    .option('--retain <hours>', "keep files needed within this many hours (default: the table's retention, 168)")
    .option('--dry-run', 'list the files that would be deleted; delete nothing')
    .option('--unsafe-allow-short-retention', "allow a retention below the table's deletedFileRetentionDuration")
    .action(async (flags: VacuumFlags) => cli.setExitCode(await vacuumCommand(flags, cli.io)));
}

/** Run OPTIMIZE on each selected job's table; resolves to the exit code. */
export async function optimizeCommand(flags: OptimizeFlags, io: CliIO): Promise<number> {
  const targetFileBytes = parseSize(flags.targetSize ?? '128MiB');
  const minFiles = Number(flags.minFiles ?? '2');
  if (targetFileBytes === null || targetFileBytes <= 0) throw new ConfigError(`--target-size: not a size: ${flags.targetSize}`, { field: 'target-size' });
  if (!Number.isInteger(minFiles) || minFiles < 2) throw new ConfigError(`--min-files must be an integer of at least 2, got ${flags.minFiles}`, { field: 'min-files' });
  return forEachJob(flags, io, 'optimize', async (table, session) => {
    const result = await optimizeTable(table, session, { targetFileBytes, minFilesPerPartition: minFiles, ...signalOf(io) });
    return { status: result.version === null ? 'nothing-to-do' : 'optimized', ...result };
  });
}

/** Run VACUUM on each selected job's table; resolves to the exit code. */
export async function vacuumCommand(flags: VacuumFlags, io: CliIO): Promise<number> {
  const retainHours = flags.retain === undefined ? undefined : Number(flags.retain);
  if (retainHours !== undefined && !(Number.isFinite(retainHours) && retainHours >= 0)) {
    throw new ConfigError(`--retain must be a number of hours, got ${flags.retain}`, { field: 'retain' });
  }
  return forEachJob(flags, io, 'vacuum', async (table) => {
    const result = await vacuumTable(table, {
      ...(retainHours === undefined ? {} : { retainHours }),
      dryRun: flags.dryRun ?? false,
      unsafeAllowShortRetention: flags.unsafeAllowShortRetention ?? false,
      ...signalOf(io),
    });
    return { status: result.dryRun ? 'dry-run' : 'vacuumed', ...result };
  });
}

/** A job's result plus its status word, printed as JSON or by formatMaintenance. */
type Report = { status: string } & (OptimizeResult | VacuumResult);

async function forEachJob(
  flags: CommonFlags,
  io: CliIO,
  command: 'optimize' | 'vacuum',
  fn: (table: DeltaTable, session: DuckSession) => Promise<Report>,
): Promise<number> {
  const logger: Logger = io.context?.logger ?? createLogger({ stream: io.stderr, ...(flags.logLevel ? { level: flags.logLevel as 'info' } : {}) });
  const config = await loadConfig(flags.config);
  const session = await DuckSession.open();
  let worst = EXIT_OK;
  try {
    for (const job of selectJobs(config, flags.job)) {
      const started = performance.now();
      let report: Record<string, unknown>;
      try {
        const storage = openTarget(job, config.storage, io.context?.openStorage);
        const table = DeltaTable.open(storage, session, { singleWriter: config.storage.singleWriter });
        report = { job: job.name, command, table: job.target.uri, ...(await fn(table, session)) };
      } catch (err) {
        worst = Math.max(worst, exitCodeFor(err));
        logger.error({ job: job.name, error: errorInfo(err) }, `${command} failed`);
        report = { job: job.name, command, table: job.target.uri, status: 'failed', error: errorInfo(err) };
      }
      report['durationMs'] = Math.round(performance.now() - started);
      if (flags.json) printJson(io.stdout, report);
      else io.stdout.write(formatMaintenance(report));
      if (io.signal?.aborted) break;
    }
  } finally {
    session.close();
  }
  return worst;
}

function signalOf(io: CliIO): { signal?: AbortSignal } {
  return io.signal ? { signal: io.signal } : {};
}

const mib = (bytes: unknown): string => `${(Number(bytes ?? 0) / 1024 / 1024).toFixed(1)} MiB`;

/** A few human lines for one job's maintenance report. */
export function formatMaintenance(r: Record<string, unknown>): string {
  const head = `${String(r['job'])}: ${String(r['command'])} ${String(r['status'])}`;
  if (r['status'] === 'failed') return `${head}: ${(r['error'] as { message?: string } | undefined)?.message ?? 'unknown error'}\n`;
  if (r['command'] === 'optimize') {
    if (r['version'] === null) return `${head} (table version ${String(r['readVersion'])})\n`;
    return (
      `${head}: version ${String(r['version'])}; ${String(r['filesRemoved'])} files (${mib(r['bytesRemoved'])}) → ` +
      `${String(r['filesAdded'])} files (${mib(r['bytesAdded'])}) in ${String(r['partitionsCompacted'])} partitions\n`
    );
  }
  const files = (r['filesDeleted'] as string[] | undefined) ?? [];
  const verb = r['dryRun'] ? 'would delete' : 'deleted';
  const lines = [`${head}: ${verb} ${files.length} files (${mib(r['bytesDeleted'])}), retention ${String(r['retainHours'])} h, kept ${String(r['filesKept'])}`];
  if (r['dryRun']) lines.push(...files.map((k) => `    - ${k}`));
  return lines.join('\n') + '\n';
}
