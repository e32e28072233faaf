/**
 * `tidemark backfill` and `tidemark reset`: reload a range of a job's source without moving its
 * watermark, and move the watermark itself. Jobs run one after another; a failed job is reported
 * and the exit code is the worst one (2 bad flags or a refused range, 1 failed, 3 lost races).
 *
 * Mount with `addBackfillCommands(program, { io, setExitCode })` from main.ts.
 */
import { InvalidArgumentError, Option, type Command } from 'commander';
import { runBackfill } from '../../job/backfill/run.js';
import type { ShardPlan } from '../../job/backfill/split.js';
import { resetJob } from '../../job/reset.js';
import { forEachJob } from '../job-loop.js';
import type { CliIO, CommandHost } from '../io.js';
import { jobOption, withCommonOptions, type CommonFlags } from '../options.js';
import { shardSelectionOf, type ShardFlags } from '../shard-flags.js';

/** The shared flags (`--job` differs: repeatable for backfill, exactly one for reset). */
interface BaseFlags extends Omit<CommonFlags, 'job'> {
  dryRun?: boolean;
  force?: boolean;
}

interface BackfillFlags extends BaseFlags, ShardFlags {
  acceptConfigChange?: boolean;
  from: string;
  to: string;
  job?: string[];
  restart?: boolean;
  partitionsPerCommit?: number;
}

interface ResetFlags extends BaseFlags {
  job: string;
  to: string;
}

const BACKFILL_HELP = `
Range (both ends included), in the job's discovery mode:
  by partition  partition ids: 2026-11-01, or 2026-11-01T05 for hourly layouts (a bare date
                on an hourly layout means the whole day: T00 to T23); only the partition
                folders in the range are listed.
  by modified   LastModified timestamps: 2026-11-01T00:00:00Z (with an offset), or a date
                (--from: its UTC midnight; --to: the end of that day).

Partitions load oldest first, one commit per partition (or per batch when a partition exceeds
maxFilesPerBatch/maxBytesPerBatch), each with the backfill's progress (its own txn appId
tidemark.backfill.<job>). The job's watermark is not moved, and rows the job loaded later are
kept (MERGE never replaces a row with an older one). A backfill may run while the hourly run does.

Interrupted? Run the same command again: it continues after the last committed partition.
A completed range is a no-op (--restart loads it again). Another range is refused while one is
unfinished (--restart abandons it). In append mode the rows of a file the table holds already
are replaced by the file's current rows (an unchanged file appends nothing), so a range is never
appended twice, and the run that later reaches it appends none of it again.

Shards: N workers share one backfill, each running --shard K/N, counting from 1 (1/4 … 4/4,
as in Playwright, Jest and Vitest). Shard K takes the K-th of N runs of consecutive partitions
of the range (sizes differ by at most one; by modified: the K-th of N equal time intervals),
keeps its own progress (txn appId tidemark.backfill.<job>@shard-I-of-N, I = K-1) and commits
per partition. Shards run at the same time as
each other and as the hourly run; \`tidemark status\` shows every shard. A finished shard's rerun
is a no-op; --restart starts that shard over. --shard all/N --dry-run shows the split and what
each shard would load; --shard all/N --restart starts every shard over (then run the workers).
The index may come from the scheduler, counting from 0 as schedulers do: --shards N
--shard-index-env JOB_COMPLETION_INDEX (Kubernetes Indexed Job) or AWS_BATCH_JOB_ARRAY_INDEX
(AWS Batch array job); index 0 is shard 1/N. Or set TIDEMARK_SHARD=K/N (K from 1, as --shard)
when no shard flag is given.

Examples:
  tidemark backfill --job orders --from 2026-11-01 --to 2026-11-07
  tidemark backfill --job orders --from 2026-01-01 --to 2026-03-31 --shard 2/4
  tidemark backfill --job orders --from 2026-01-01 --to 2026-03-31 --shards 4 --shard-index-env JOB_COMPLETION_INDEX
`;

const RESET_HELP = `
--to W means "W is the last partition (or instant) considered loaded". The next run loads every
file after W and, as every run does, rescans the lookback partitions (or the settle window) up to
W for files the state does not remember. Files it remembers up to W stay loaded; everything after
W is forgotten. Formats: a partition id of the layout's granularity (2026-11-03, or 2026-11-03T23
for hourly layouts), or a timestamp (2026-11-03T00:00:00Z; a date is its UTC midnight).

The commit holds no data (operation SET TRANSACTION with the job's txn and state). In merge mode
reloading is idempotent: the table ends the same. In append mode moving the watermark back is
refused unless --force (with --dry-run too): the next run looks each reloaded file up in the
table and replaces its rows (never appended twice); rows of files gone from the source stay.

Example (reload everything after November 3rd):
  tidemark reset --job orders --to 2026-11-03 && tidemark run --job orders
`;

/** Add `backfill` and `reset` to the program. */
export function addBackfillCommands(program: Command, cli: CommandHost): void {
  withCommonOptions(program.command('backfill'), { job: false })
    .description(
      'reload a range of partitions (or LastModified range), oldest first, resumably, without moving the watermark',
    )
    .requiredOption('--from <P>', 'first partition (or timestamp) of the range')
    .requiredOption('--to <P>', 'last partition (or timestamp) of the range, included')
    .addOption(jobOption())
    .option(
      '--shard <K/N>',
      'run shard K of N of the range, K from 1 (1/4 … 4/4); all/N with --dry-run or --restart: every shard (default: $TIDEMARK_SHARD, else the whole range)',
    )
    .option('--shards <N>', 'the number of shards, with --shard-index-env')
    .option(
      '--shard-index-env <NAME>',
      "read this worker's shard index, 0-based as schedulers give it (0 is shard 1/N), from environment variable NAME (JOB_COMPLETION_INDEX, AWS_BATCH_JOB_ARRAY_INDEX)",
    )
    .option(
      '--restart',
      'load the range (or this shard) from its start again, even when done; abandons an unfinished backfill of another range',
    )
    .addOption(
      new Option(
        '--partitions-per-commit <N>',
        'load up to N consecutive whole partitions in one commit (fewer, larger commits: less contention with many workers)',
      )
        .argParser(positiveInteger('--partitions-per-commit'))
        .default(1),
    )
    .option(
      '--accept-config-change',
      'a changed target.key or orderBy drops the deletes the job and its backfills remember (tombstones) that no longer fit it, instead of refusing (exit 2), as run --accept-config-change does',
    )
    .option(
      '--force',
      'accepted for older scripts; append-mode backfills no longer need it (they replace the rows of files loaded before)',
    )
    .option('--dry-run', 'list the files the backfill would load; change nothing')
    .addHelpText('after', BACKFILL_HELP)
    .action(async (flags: BackfillFlags) => cli.setExitCode(await backfillCommand(flags, cli.io)));
  withCommonOptions(program.command('reset'), { job: false })
    .description(
      "move a job's watermark back (or forward) in a commit without data; the next run loads from there",
    )
    .requiredOption('-j, --job <name>', 'the job to reset')
    .requiredOption('--to <watermark>', 'the last partition (or instant) to consider loaded')
    .option(
      '--force',
      'allow moving the watermark of an append-mode job back (reloaded files replace their rows), or into the future',
    )
    .option('--dry-run', 'show the watermark change; commit nothing')
    .addHelpText('after', RESET_HELP)
    .action(async (flags: ResetFlags) => cli.setExitCode(await resetCommand(flags, cli.io)));
}

/** A commander parser of a whole number of at least 1. */
function positiveInteger(flag: string): (value: string) => number {
  return (value) => {
    if (!/^\s*\d+\s*$/.test(value) || Number(value) < 1)
      throw new InvalidArgumentError(`${flag} takes a whole number of at least 1`);
    return Number(value);
  };
}

/** Backfill each selected job over the range; resolves to the exit code. */
export function backfillCommand(flags: BackfillFlags, io: CliIO): Promise<number> {
  const shard = shardSelectionOf(flags);
  const opts = {
    from: flags.from,
    to: flags.to,
    restart: flags.restart ?? false,
    dryRun: flags.dryRun ?? false,
    partitionsPerCommit: flags.partitionsPerCommit ?? 1,
    ...(shard ? { shard } : {}),
  };
  return forEachJob(flags, io, {
    command: 'backfill',
    run: (job, ctx) => runBackfill(job, ctx, opts),
    format: formatReport,
    ...(flags.acceptConfigChange ? { context: { acceptConfigChange: true } } : {}),
  });
}

/** Reset one job's watermark; resolves to the exit code. */
export function resetCommand(flags: ResetFlags, io: CliIO): Promise<number> {
  const opts = { to: flags.to, force: flags.force ?? false, dryRun: flags.dryRun ?? false };
  return forEachJob(flags, io, {
    command: 'reset',
    run: (job, ctx) => resetJob(job, ctx, opts),
    format: formatReport,
  });
}

/** A few human lines for one job's backfill or reset. */
export function formatReport(report: object): string {
  const r = report as Record<string, unknown>;
  const s = (k: string) => String(r[k] ?? '-');
  if (r['status'] === 'failed')
    return `${s('job')}: ${s('command')} failed: ${(r['error'] as { message?: string } | undefined)?.message ?? 'unknown error'}\n`;
  if (r['command'] === 'reset') {
    const verb = r['status'] === 'dry-run' ? 'would reset' : 'reset';
    return (
      `${s('job')}: watermark ${verb} ${s('watermarkBefore')} → ${s('watermark')}${r['rewound'] ? ' (rewound)' : ''}; table version ${s('tableVersion')}\n` +
      `  the next run loads what follows ${s('watermark')} (${s('filesRemembered')} files up to it stay remembered as loaded)\n`
    );
  }
  const shard = r['shard'] === undefined ? '' : ` shard ${s('shard')}`;
  const part =
    r['part'] === undefined
      ? ''
      : r['part'] === null
        ? ' (empty slice)'
        : ` (${(r['part'] as { from: string }).from}..${(r['part'] as { to: string }).to})`;
  const head = `${s('job')}: backfill ${s('from')}..${s('to')}${shard}${part}`;
  if (r['status'] === 'already-done')
    return `${head} already done (table version ${s('tableVersion')}); --restart loads it again\n`;
  if (r['status'] === 'reset')
    return `${head}: every shard starts over (table version ${s('tableVersion')}); now run the shards\n`;
  if (r['split']) return formatSplit(head, r['split'] as ShardPlan[]);
  const lines = [
    `${head} ${s('status')} in ${(Number(r['durationMs'] ?? 0) / 1000).toFixed(1)}s; table version ${s('tableVersion')}; job watermark ${s('watermark')} (unchanged)`,
    `  ${s('partitionsListed')} partitions listed${r['resumedFrom'] ? `, resumed after ${s('resumedFrom')}` : ''}; ${s('filesLoaded')} of ${s('filesPlanned')} files loaded in ${s('commits')} commits`,
    `  rows: ${s('rowsRead')} read, ${s('rowsAfterDedupe')} after dedupe; ${s('inserted')} inserted, ${s('updated')} updated, ${s('deleted')} deleted, ${s('skippedStale')} stale skipped`,
  ];
  if (Number(r['replans'] ?? 0) + Number(r['commitRetries'] ?? 0) > 0) {
    lines.push(
      `  other writers: ${s('replans')} conflicting commits (planned again), ${s('commitRetries')} commits retried at a later version`,
    );
  }
  if (r['status'] === 'dry-run')
    lines.push(...((r['plannedFiles'] as string[] | undefined) ?? []).map((k) => `    + ${k}`));
  return lines.join('\n') + '\n';
}

/** `--shard all/N --dry-run`: one line per shard. */
function formatSplit(head: string, split: readonly ShardPlan[]): string {
  const lines = [`${head}: dry-run, ${split.length} shards`];
  for (const p of split) {
    const part = p.part ? `${p.part.from}..${p.part.to}` : '(empty slice)';
    lines.push(
      `  shard ${p.shard} ${part}: ${p.status}${p.doneThrough ? ` through ${p.doneThrough}` : ''}; would load ${p.files} files (${p.bytes} bytes)`,
    );
  }
  return lines.join('\n') + '\n';
}
