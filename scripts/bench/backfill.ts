/**
 * `npm run bench -- backfill` (docs/scaling.md): a backfill of 90 daily partitions by 1, 2 and 4
 * shards, each shard its own `tidemark backfill --shard K/N` process (as a scheduler runs them),
 * all on this machine, local landing zone and table (real put-if-absent).
 *
 *   landing   90 days × 4 Parquet files of orders (./landing.ts: new orders plus status changes of
 *             the last day's), partition discovery `{yyyy}/{mm}/{dd}`
 *   table     MERGE on order_id by updated_at, partitioned by order_date, created by the job's
 *             hourly run of the last day; each configuration backfills a copy of it
 *   measured  wall time from the first spawn to the last exit; rows and files loaded, commits,
 *             commit retries (a lost race, no re-plan) and re-plans (a conflicting winner) summed
 *             over the shards' JSON reports; mean time per commit (its `commit` phase)
 *
 * Configurations run interleaved `--repeat` times (1, 2, 4, 1, 2, 4, …); medians are reported,
 * with throughput as a ratio to 1 shard. Every configuration's table must equal the others' (row
 * count and a fingerprint of every row), or the benchmark fails.
 */
import { spawn } from 'node:child_process';
import { cp, rm, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { withTableScan } from '../../src/engine/scan.js';
import { LocalStorage } from '../../src/storage/local.js';
import { openTable, scanSource } from '../lib/tables.js';
import { timed } from './clock.js';
import { benchEnv, describeEnv, describeOtherLoad, watchOtherLoad } from './env.js';
import { landingKey, writeLanding, type LandingSpec } from './landing.js';
import { count, printTables, secs, times, writeJson } from './report.js';
import { progress, withSession } from './session.js';
import { openWorkspace, type Workspace } from './workspace.js';

export interface BackfillBenchOptions {
  days: number;
  filesPerDay: number;
  rowsPerFile: number;
  /** Shard counts to compare; the first is the baseline of the ratios. */
  shards: number[];
  /** `--partitions-per-commit` of every shard (1: a commit per partition). */
  partitionsPerCommit: number;
  repeat: number;
  keep: boolean;
  jsonPath: string;
  command: string;
}

/** One configuration's run. */
interface ShardedRun {
  shards: number;
  ms: number;
  rows: number;
  files: number;
  commits: number;
  commitRetries: number;
  replans: number;
  /** Summed `commit` phase of every shard, ms. */
  commitMs: number;
  /** CPU time of every shard process (user + system, DuckDB's threads included), ms. */
  cpuMs: number;
  fingerprint: string;
}

const START_DAY = '2026-01-01';
const TSX = new URL('../../node_modules/tsx/dist/loader.mjs', import.meta.url).href;
/** Preloaded into each CLI process: prints the process's CPU time on stderr as it exits. */
const CPU_AT_EXIT =
  'data:text/javascript,import{writeSync}from"node:fs";process.on("exit",()=>writeSync(2,"\\n@@cpu "+JSON.stringify(process.cpuUsage())+"\\n"))';
const BIN = fileURLToPath(new URL('../../src/cli/bin.ts', import.meta.url));

/** Run the benchmark, print its table and write the JSON result. */
export async function benchBackfill(opts: BackfillBenchOptions): Promise<void> {
  const env = await benchEnv(opts.command);
  process.stdout.write(`${describeEnv(env)}\n`);
  const ws = await openWorkspace('backfill', { keep: opts.keep });
  const stopWatch = watchOtherLoad();
  try {
    const spec: LandingSpec = {
      root: ws.path('landing'),
      startDay: START_DAY,
      files: opts.days * opts.filesPerDay,
      rowsPerFile: opts.rowsPerFile,
      filesPerDay: opts.filesPerDay,
      dupShare: 0.05,
    };
    progress(
      `landing ${count(spec.files)} files of ${count(spec.rowsPerFile)} rows in ${opts.days} day folders`,
    );
    await withSession((session) => writeLanding(session, spec));
    const lastDay = landingKey(spec, spec.files - 1)
      .slice(0, 10)
      .replaceAll('/', '-');
    const base = await baseTable(ws, lastDay);
    const runs: ShardedRun[] = [];
    for (let r = 0; r < opts.repeat; r++) {
      for (const shards of opts.shards) {
        progress(`round ${r + 1}/${opts.repeat}: ${shards} shard${shards === 1 ? '' : 's'}`);
        runs.push(
          await backfillWith(
            ws,
            base,
            shards,
            { from: START_DAY, to: lastDay },
            { round: r, keep: opts.keep, partitionsPerCommit: opts.partitionsPerCommit },
          ),
        );
      }
    }
    const fingerprints = new Set(runs.map((x) => x.fingerprint));
    if (fingerprints.size !== 1)
      throw new Error(
        `[bench] the configurations left different tables: ${[...fingerprints].join(' / ')}`,
      );
    const summary = summarize(runs, opts.shards);
    printTables([
      {
        title:
          `Backfill of ${opts.days} daily partitions (${count(spec.files)} files, ${count(summary[0]!.rows)} rows), one process per shard, ` +
          `${opts.partitionsPerCommit} partition${opts.partitionsPerCommit === 1 ? '' : 's'} per commit; medians of ${opts.repeat}`,
        header: [
          'shards',
          'wall time',
          'rows/s',
          'throughput vs 1',
          'CPU time',
          'CPU vs 1',
          'commits',
          'commit retries',
          're-plans',
          'conflict rate',
          'ms per commit',
        ],
        rows: summary.map((s) => [
          String(s.shards),
          secs(s.ms),
          count(Math.round(s.rowsPerSecond)),
          times(s.speedup),
          secs(s.cpuMs),
          times(s.cpuRatio),
          String(s.commits),
          String(s.commitRetries),
          String(s.replans),
          `${(s.conflictRate * 100).toFixed(1)} %`,
          s.msPerCommit.toFixed(0),
        ]),
      },
    ]);
    process.stdout.write(
      'rows/s: rows of the range loaded per second of wall time (process start-up included, as a scheduler pays it).\n' +
        'commit retries: commits retried at a later version after losing a race to a commit that touched nothing they read.\n' +
        're-plans: lost races to a conflicting commit (the shard planned its partition again). conflict rate: re-plans per commit.\n' +
        'ms per commit: the commit phase (put-if-absent of the log entry, checks of winners, checkpoints) per commit.\n' +
        'CPU time: user + system of every shard process; its ratio is what splitting costs, whatever else shares the machine.\n',
    );
    const other = stopWatch();
    if (other) process.stdout.write(`${describeOtherLoad(other)}\n`);
    await writeJson(opts.jsonPath, { env, options: opts, runs, summary, otherLoad: other });
    process.stdout.write(`result: ${opts.jsonPath}\n`);
  } finally {
    await ws.dispose();
  }
}

/** The table after the hourly job's first run (the last day): what each configuration copies. */
async function baseTable(ws: Workspace, lastDay: string): Promise<string> {
  const config = await configFile(ws, 'base', lastDay);
  const exit = await runCli(['run', '-c', config, '--json']);
  if (exit.code !== 0)
    throw new Error(`[bench] the hourly run failed: ${exit.stderr.slice(-2000)}`);
  return ws.path('table-base');
}

/** Backfill a fresh copy of the base table with `shards` processes at once. */
async function backfillWith(
  ws: Workspace,
  base: string,
  shards: number,
  range: { from: string; to: string },
  opts: { round: number; keep: boolean; partitionsPerCommit: number },
): Promise<ShardedRun> {
  const name = `table-${shards}-${opts.round}`;
  await cp(base, ws.path(name), { recursive: true });
  const config = await configFile(ws, name.replace('table-', ''), range.to, name);
  // One shard is the plain, unsharded backfill.
  const args = (k: number) => [
    'backfill',
    ...[
      '-c',
      config,
      '--from',
      range.from,
      '--to',
      range.to,
      '--partitions-per-commit',
      String(opts.partitionsPerCommit),
    ],
    ...(shards > 1 ? ['--shard', `${k + 1}/${shards}`] : []),
    '--json',
  ];
  const { ms, value: exits } = await timed(() =>
    Promise.all(Array.from({ length: shards }, (_, k) => runCli(args(k)))),
  );
  const run: ShardedRun = {
    shards,
    ms,
    rows: 0,
    files: 0,
    commits: 0,
    commitRetries: 0,
    replans: 0,
    commitMs: 0,
    cpuMs: 0,
    fingerprint: '',
  };
  for (const exit of exits) {
    if (exit.code !== 0)
      throw new Error(
        `[bench] a shard of ${shards} exited ${exit.code}: ${exit.stderr.slice(-2000)}`,
      );
    const report = JSON.parse(exit.stdout) as {
      rowsRead: number;
      filesLoaded: number;
      commits: number;
      commitRetries: number;
      replans: number;
      phases: { commit?: number };
    };
    run.rows += report.rowsRead;
    run.files += report.filesLoaded;
    run.commits += report.commits;
    run.commitRetries += report.commitRetries;
    run.replans += report.replans;
    run.commitMs += report.phases.commit ?? 0;
    run.cpuMs += cpuOf(exit.stderr);
  }
  run.fingerprint = await fingerprint(ws.path(name));
  if (!opts.keep) await rm(ws.path(name), { recursive: true, force: true });
  return run;
}

/** The CPU time a process printed as it exited (CPU_AT_EXIT), ms. */
function cpuOf(stderr: string): number {
  const m = /@@cpu (\{.*\})/.exec(stderr);
  if (!m) return 0;
  const usage = JSON.parse(m[1]!) as { user: number; system: number };
  return (usage.user + usage.system) / 1000;
}

/** The job's config: landing zone, the table folder `table`, hourly run starting at `start`. */
async function configFile(
  ws: Workspace,
  label: string,
  start: string,
  table = 'table-base',
): Promise<string> {
  const file = ws.path(`tidemark-${label}.yaml`);
  await writeFile(
    file,
    [
      'jobs:',
      '  - name: orders',
      `    source: { uri: ./landing, discover: { by: partition, layout: "{yyyy}/{mm}/{dd}", start: "${start}" } }`,
      `    target: { uri: ./${table}, key: [order_id], orderBy: updated_at, partitionBy: [order_date] }`,
    ].join('\n') + '\n',
  );
  return file;
}

/** Row count and an order-independent hash of every row: equal tables have equal fingerprints. */
async function fingerprint(dir: string): Promise<string> {
  return withSession(async (session) => {
    const storage = new LocalStorage(dir);
    const snapshot = await openTable(storage, session).snapshot();
    if (!snapshot) return 'no table';
    const row = await withTableScan(session, scanSource(storage), snapshot, (relation) =>
      session.one(
        `SELECT count(*) AS n, sum(hash(order_id, status, updated_at, order_date, amount) % 1000000007) AS h FROM (${relation})`,
      ),
    );
    return `${String(row?.['n'])} rows, hash ${String(row?.['h'])}`;
  });
}

interface Summary {
  shards: number;
  ms: number;
  rows: number;
  rowsPerSecond: number;
  speedup: number;
  commits: number;
  commitRetries: number;
  replans: number;
  conflictRate: number;
  msPerCommit: number;
  cpuMs: number;
  /** CPU time relative to the first configuration's: what splitting costs. */
  cpuRatio: number;
}

/** Medians per shard count; throughput ratios against the first shard count. */
function summarize(runs: readonly ShardedRun[], order: readonly number[]): Summary[] {
  const median = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length % 2 === 1
      ? s[(s.length - 1) / 2]!
      : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
  };
  const out = order.map((shards) => {
    const mine = runs.filter((r) => r.shards === shards);
    const ms = median(mine.map((r) => r.ms));
    const rows = mine[0]!.rows;
    const commits = median(mine.map((r) => r.commits));
    const replans = median(mine.map((r) => r.replans));
    return {
      shards,
      ms,
      rows,
      rowsPerSecond: rows / (ms / 1000),
      speedup: 1,
      commits,
      commitRetries: median(mine.map((r) => r.commitRetries)),
      replans,
      conflictRate: commits === 0 ? 0 : replans / commits,
      msPerCommit: median(mine.map((r) => (r.commits === 0 ? 0 : r.commitMs / r.commits))),
      cpuMs: median(mine.map((r) => r.cpuMs)),
      cpuRatio: 1,
    };
  });
  const base = out[0]!;
  return out.map((s) => ({
    ...s,
    speedup: s.rowsPerSecond / base.rowsPerSecond,
    cpuRatio: base.cpuMs === 0 ? 0 : s.cpuMs / base.cpuMs,
  }));
}

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run the tidemark CLI (through tsx, like `npx tidemark` from a checkout) to its end. */
function runCli(args: string[]): Promise<Exit> {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      ['--import', CPU_AT_EXIT, '--import', TSX, BIN, ...args],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, TIDEMARK_LOG_LEVEL: 'warn' } },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
