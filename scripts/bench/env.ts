/**
 * The machine and code a benchmark ran on, recorded with every result (figures are only
 * comparable on the same machine, hence the ratios against same-run baselines).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { performance } from 'node:perf_hooks';
import { DuckSession } from '../../src/engine/duckdb.js';

/** Where and on what a benchmark ran. */
export interface BenchEnv {
  startedAt: string;
  node: string;
  cpus: number;
  cpuModel: string;
  memoryGiB: number;
  duckdb: string;
  duckdbThreads: number;
  gitCommit: string | null;
  command: string;
  /** 1-minute load average when the benchmark started (other work on the machine skews times). */
  loadAverage: number;
}

/** Describe this machine and checkout; `command` is how to rerun the benchmark. */
export async function benchEnv(command: string): Promise<BenchEnv> {
  const session = await DuckSession.open();
  try {
    const row = await session.one(
      `SELECT version() AS v, current_setting('threads')::INTEGER AS t`,
    );
    return {
      startedAt: new Date().toISOString(),
      node: process.version,
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model ?? 'unknown',
      memoryGiB: Math.round(totalmem() / 2 ** 30),
      duckdb: String(row?.['v']),
      duckdbThreads: Number(row?.['t']),
      gitCommit: gitCommit(),
      command,
      loadAverage: loadavg()[0] ?? 0,
    };
  } finally {
    session.close();
  }
}

function gitCommit(): string | null {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return null;
  }
}

/** One line for the top of a report. */
export function describeEnv(env: BenchEnv): string {
  return (
    `${env.command}\n${env.cpus} × ${env.cpuModel}, ${env.memoryGiB} GiB, Node ${env.node}, DuckDB ${env.duckdb} ` +
    `(${env.duckdbThreads} threads), commit ${env.gitCommit ?? '?'}, load average ${env.loadAverage.toFixed(2)} at start`
  );
}

/** CPU used on the machine by other processes while the benchmark ran (Linux /proc/stat). */
export interface OtherLoad {
  /** Share of all cores' time used by other processes, 0..1. */
  share: number;
  /** CPU seconds used by other processes. */
  cpuSeconds: number;
}

/** Start measuring other processes' CPU use; call the result to stop. Null off Linux. */
export function watchOtherLoad(): () => OtherLoad | null {
  const start = { busy: busyTicks(), own: process.cpuUsage(), at: performance.now() };
  return () => {
    const end = busyTicks();
    if (start.busy === null || end === null) return null;
    const own = process.cpuUsage(start.own);
    const busySeconds = (end - start.busy) / 100; // USER_HZ is 100 on Linux
    const others = Math.max(0, busySeconds - (own.user + own.system) / 1e6);
    const wall = (performance.now() - start.at) / 1000;
    return { share: others / (wall * cpus().length), cpuSeconds: others };
  };
}

/** Busy jiffies of all CPUs (user, nice, system, irq, softirq, steal), or null. */
function busyTicks(): number | null {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
    const [, user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).map(Number);
    return [user, nice, system, irq, softirq, steal].reduce<number>((n, v) => n + (v ?? 0), 0);
  } catch {
    return null;
  }
}

/** A line about other processes' CPU use, for the end of a report. */
export function describeOtherLoad(load: OtherLoad | null): string {
  if (load === null) return '';
  const note =
    load.share > 0.1
      ? ': other work shared the CPUs, so times are inflated; the ratios (same-run baselines, interleaved) hold better'
      : '';
  return `other processes used ${(load.share * 100).toFixed(0)} % of the machine's CPU time during the benchmark${note}\n`;
}
