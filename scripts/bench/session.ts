/**
 * Every measured step runs on a fresh DuckDB session (fresh caches, no temp tables left over).
 */
import { join } from 'node:path';
import { DuckSession } from '../../src/engine/duckdb.js';
import { BENCH_ROOT } from './workspace.js';

/**
 * DuckDB's memory limit in every step: the job's default (`engine.memoryLimit`, 3 GiB), so
 * peak memory is what a user's run would see; past it DuckDB spills under `.bench/spill`.
 */
const MEMORY_LIMIT = 3 * 2 ** 30;

/** Run `fn` on a new session and close it afterwards. */
export async function withSession<T>(fn: (session: DuckSession) => Promise<T>): Promise<T> {
  const session = await DuckSession.open({
    memoryLimit: MEMORY_LIMIT,
    tempDirectory: join(BENCH_ROOT, 'spill'),
  });
  try {
    return await fn(session);
  } finally {
    session.close();
  }
}

/** A progress line on stderr (stdout carries the result tables). */
export function progress(line: string): void {
  process.stderr.write(`${line}\n`);
}
