/**
 * The machine and code a benchmark ran on, recorded with every result (figures are only
 * comparable on the same machine, hence the ratios against same-run baselines).
 */
import { execFileSync } from 'node:child_process';
import { cpus, totalmem } from 'node:os';
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
}

/** Describe this machine and checkout; `command` is how to rerun the benchmark. */
export async function benchEnv(command: string): Promise<BenchEnv> {
  const session = await DuckSession.open();
  try {
    const row = await session.one(`SELECT version() AS v, current_setting('threads')::INTEGER AS t`);
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
    };
  } finally {
    session.close();
  }
}

function gitCommit(): string | null {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return null;
  }
}

/** One line for the top of a report. */
export function describeEnv(env: BenchEnv): string {
  return `${env.command}\n${env.cpus} × ${env.cpuModel}, ${env.memoryGiB} GiB, Node ${env.node}, DuckDB ${env.duckdb} (${env.duckdbThreads} threads), commit ${env.gitCommit ?? '?'}`;
}
