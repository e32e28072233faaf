/**
 * `tidemark cleanup`: move or delete the source files whose load committed at least
 * `source.afterLoad.after` ago (job/cleanup.ts). A dry run unless `--apply`: it lists what it
 * would move or delete, and every file it leaves with the reason.
 *
 * Mount with `addCleanupCommand(program, { io, setExitCode })` from main.ts.
 */
import type { Command } from 'commander';
import prettyBytes from 'pretty-bytes';
import { SKIP_REASON_TEXT, type CleanupSkipReason } from '../../job/cleanup-plan.js';
import { cleanupJob, type CleanupReport } from '../../job/cleanup.js';
import { forEachJob } from '../job-loop.js';
import type { CliIO, CommandHost } from '../io.js';
import { withCommonOptions, type CommonFlags } from '../options.js';

interface CleanupFlags extends CommonFlags {
  apply?: boolean;
  dryRun?: boolean;
}

/** Files listed per group in the human report (every one is in --json). */
const SHOWN = 50;

/** Add `cleanup` to the program. */
export function addCleanupCommand(program: Command, cli: CommandHost): void {
  withCommonOptions(program.command('cleanup'))
    .description(
      'move or delete source files loaded at least source.afterLoad.after ago (a dry run unless --apply)',
    )
    .option('--apply', 'move or delete the files; without it, only list them')
    .option(
      '--dry-run',
      'list what would be moved or deleted, and why each other file stays (the default)',
    )
    .action(async (flags: CleanupFlags) => cli.setExitCode(await cleanupCommand(flags, cli.io)));
}

/** Clean up each selected job's source; resolves to the exit code. */
export async function cleanupCommand(flags: CleanupFlags, io: CliIO): Promise<number> {
  // --dry-run wins: a script that says it wants a dry run never gets anything else.
  const apply = flags.apply === true && flags.dryRun !== true;
  return forEachJob(flags, io, {
    command: 'cleanup',
    run: (job, ctx) => cleanupJob(job, ctx, { apply }),
    format: formatCleanup,
  });
}

/** The human lines of one job's cleanup report. */
export function formatCleanup(report: CleanupReport): string {
  const head = `${report.job}: cleanup ${report.status}`;
  if (report.status === 'failed') return `${head}: ${report.error?.message ?? 'unknown error'}\n`;
  if (report.status === 'not-configured') return `${head}: the job has no source.afterLoad\n`;
  const verb = report.action === 'move' ? 'move' : 'delete';
  const where = report.action === 'move' ? ` to ${String(report.moveTo)}` : '';
  const days = `${(Number(report.afterMs) / 86_400_000).toFixed(1).replace(/\.0$/, '')}d`;
  const size = prettyBytes(report.bytes, { binary: true });
  const lines = [
    report.dryRun
      ? `${head}: would ${verb} ${report.files.length} files (${size})${where}, loaded at least ${days} ago; nothing changed (--apply acts)`
      : `${head}: ${verb === 'move' ? 'moved' : 'deleted'} ${report.files.length} files (${size})${where}`,
  ];
  lines.push(
    ...shown(
      report.files.map((f) => `    ${verb} ${f.key} (loaded ${f.loadedAt}, batch ${f.batch})`),
    ),
  );
  for (const l of report.left) lines.push(`    left ${l.key}: ${l.reason}`);
  const byReason = new Map<CleanupSkipReason, string[]>();
  for (const s of report.skipped)
    byReason.set(s.reason, [...(byReason.get(s.reason) ?? []), s.key]);
  for (const [reason, keys] of byReason) {
    lines.push(`  kept ${keys.length} files: ${SKIP_REASON_TEXT[reason]}`);
    lines.push(...shown(keys.map((k) => `    - ${k}`)));
  }
  if (report.record)
    lines.push(`  recorded in ${report.table.replace(/\/+$/, '')}/${report.record}`);
  return lines.join('\n') + '\n';
}

function shown(lines: string[]): string[] {
  return lines.length <= SHOWN
    ? lines
    : [...lines.slice(0, SHOWN), `    … and ${lines.length - SHOWN} more (--json lists all)`];
}
