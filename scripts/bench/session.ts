/**
 * Every measured step runs on a fresh DuckDB session (fresh caches, no temp tables left over).
 */
import { DuckSession } from '../../src/engine/duckdb.js';

/** Run `fn` on a new session and close it afterwards. */
export async function withSession<T>(fn: (session: DuckSession) => Promise<T>): Promise<T> {
  const session = await DuckSession.open();
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
