/**
 * `tidemark history` and `tidemark show`: look at what happened to a job's table and at its rows,
 * without changing anything.
 *
 * Mount with `addInspectCommands(program, { io, setExitCode })` from main.ts.
 */
import type { Command } from 'commander';
import prettyMs from 'pretty-ms';
import { ConfigError } from '../../errors.js';
import { jobHistory, type HistoryEntry, type HistoryReport } from '../../job/history.js';
import { forEachJob } from '../job-loop.js';
import { withCommonOptions, type CommonFlags } from '../options.js';
import { printJson } from '../output.js';
import { formatTable } from '../table-text.js';
import type { CliIO, CommandHost } from '../io.js';
import { showJob, type ShowReport } from './show.js';

interface HistoryFlags extends CommonFlags {
  limit?: string;
}

interface ShowFlags extends Omit<CommonFlags, 'job'> {
  job: string;
  where?: string;
  limit?: string;
  columns?: string;
}

const HISTORY_HELP = `
One line per commit, newest first: version, time, operation, what made it (a run's batch, a
backfill's range, a reset, OPTIMIZE or another writer), files added/removed, rows
inserted/updated/deleted and duration, from each commit's commitInfo. With --job, the commits of
other tidemark jobs writing the same table are left out. Versions older than the oldest commit
file the log still keeps are absent. VACUUM writes no commit, so it is not listed.

Example:
  tidemark history --job orders --limit 5
`;

const SHOW_HELP = `
--where is one SQL expression over the table's columns (DuckDB syntax), checked by DuckDB's
parser before anything runs: anything that is not exactly one expression, or holds a subquery,
is refused (exit 2). Rows come in key order for merge jobs. Every data file is read (downloaded
first for tables on S3): narrow with --where and --limit on big tables.

Example:
  tidemark show --job orders --where "status = 'paid' AND amount > 100" --limit 5
`;

/** Add `history` and `show` to the program. */
export function addInspectCommands(program: Command, cli: CommandHost): void {
  withCommonOptions(program.command('history'))
    .description(
      "list the commits of each job's table: runs, backfills, resets, optimize; newest first",
    )
    .option('--limit <n>', 'most commits per job', '20')
    .addHelpText('after', HISTORY_HELP)
    .action(async (flags: HistoryFlags) => cli.setExitCode(await historyCommand(flags, cli.io)));
  withCommonOptions(program.command('show'), {
    job: false,
    json: 'print each row as one JSON object per line on stdout (a failure: one report object)',
  })
    .description("print rows of a job's target table")
    .requiredOption('-j, --job <name>', 'the job whose table to show')
    .option('--where <sql>', 'one SQL expression the rows must satisfy')
    .option('--limit <n>', 'most rows', '20')
    .option('--columns <a,b>', 'only these columns, in this order')
    .addHelpText('after', SHOW_HELP)
    .action(async (flags: ShowFlags) => cli.setExitCode(await showCommand(flags, cli.io)));
}

/** A non-negative integer flag; ConfigError (exit 2) naming it otherwise. */
export function integerFlag(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(n)) {
    throw new ConfigError(`--${name} must be a whole number, got ${JSON.stringify(text)}`, {
      field: name,
    });
  }
  return n;
}

/** Print the newest commits of each selected job's table; resolves to the exit code. */
export function historyCommand(flags: HistoryFlags, io: CliIO): Promise<number> {
  const limit = integerFlag('limit', flags.limit, 20);
  return forEachJob(flags, io, {
    command: 'history',
    run: (job, ctx) => jobHistory(job, ctx, { limit }),
    format: formatHistory,
  });
}

/** Print rows of one job's table; resolves to the exit code. */
export function showCommand(flags: ShowFlags, io: CliIO): Promise<number> {
  const opts = {
    limit: integerFlag('limit', flags.limit, 20),
    ...(flags.where !== undefined ? { where: flags.where } : {}),
    ...(flags.columns !== undefined
      ? {
          columns: flags.columns
            .split(',')
            .map((c) => c.trim())
            .filter((c) => c !== ''),
        }
      : {}),
  };
  const json = flags.json ?? false;
  // Rows print as JSON lines, one per row, so the loop's one-object-per-job printing is off.
  return forEachJob({ ...flags, json: false }, io, {
    command: 'show',
    run: (job, ctx) => showJob(job, ctx, opts),
    format: (report) => (json ? showJsonLines(report) : formatShow(report)),
  });
}

function showJsonLines(report: ShowReport & { error?: unknown }): string {
  if (report.status !== 'ok') {
    let text = '';
    printJson({ write: (s) => (text += s) }, report);
    return text;
  }
  return report.rows.map((row) => JSON.stringify(row) + '\n').join('');
}

/** The rows as an aligned text table, or what went wrong. */
export function formatShow(r: ShowReport & { error?: { message?: string } }): string {
  if (r.status === 'failed')
    return `${r.job}: show failed: ${r.error?.message ?? 'unknown error'}\n`;
  if (r.status === 'no-table') return `${r.job}: no table yet at ${r.table}\n`;
  const cells = r.rows.map((row) => r.columns.map((c) => cellText(row[c])));
  const foot = `(${r.rows.length} row${r.rows.length === 1 ? '' : 's'}${r.rows.length === r.limit ? `, --limit ${r.limit}` : ''}; table version ${r.tableVersion}${r.filesRead < r.tableFiles ? `; ${r.filesRead} of ${r.tableFiles} files read` : ''})`;
  return formatTable(r.columns, cells) + foot + '\n';
}

function cellText(v: unknown): string {
  if (v === null || v === undefined) return 'NULL';
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** The commits as an aligned text table. */
export function formatHistory(r: HistoryReport & { error?: { message?: string } }): string {
  if (r.status === 'failed')
    return `${r.job}: history failed: ${r.error?.message ?? 'unknown error'}\n`;
  if (r.status === 'no-table') return `${r.job}: no table yet at ${r.table}\n`;
  const head = `${r.job}: ${r.table}, version ${r.tableVersion}; newest ${r.commits.length} commit${r.commits.length === 1 ? '' : 's'}\n`;
  const columns = [
    'version',
    'time (UTC)',
    'operation',
    'by',
    'files +/-',
    'rows ins/upd/del',
    'took',
  ];
  return head + formatTable(columns, r.commits.map(historyRow), { right: [0, 4, 5, 6] });
}

function historyRow(c: HistoryEntry): string[] {
  const n = (v: number | null) => (v === null ? '-' : String(v));
  return [
    String(c.version),
    c.time === null ? '-' : c.time.slice(0, 19).replace('T', ' '),
    c.operation,
    byText(c),
    `${c.filesAdded}/${c.filesRemoved}`,
    `${n(c.rowsInserted)}/${n(c.rowsUpdated)}/${n(c.rowsDeleted)}`,
    c.durationMs === null ? '-' : prettyMs(c.durationMs),
  ];
}

function byText(c: HistoryEntry): string {
  const batch = c.batch === null ? '' : ` #${c.batch}`;
  if (c.kind === 'run') return `run${batch}`;
  if (c.kind === 'reset') return `reset${batch}`;
  if (c.kind === 'backfill') return `backfill${c.backfill ? ` ${c.backfill}` : ''}${batch}`;
  if (c.kind === 'optimize') return 'optimize';
  return 'other writer';
}
