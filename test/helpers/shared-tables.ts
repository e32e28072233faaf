/**
 * Locating the real Delta test tables written by Spark and delta-rs: the copy kept in
 * fixtures/delta-tables (from ../shared/delta-tables, with its README of expected contents),
 * or $TIDEMARK_SHARED; and copying one to a temp folder when a test must change it.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { cp, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** The folder holding the shared tables; throws (failing the suite loudly) when it is missing. */
export function sharedTablesDir(): string {
  const env = process.env['TIDEMARK_SHARED'];
  const candidates = [
    ...(env ? [join(env, 'delta-tables'), env] : []),
    resolve(REPO_ROOT, 'fixtures/delta-tables'),
    resolve(REPO_ROOT, '../shared/delta-tables'),
  ];
  const found = candidates.find((dir) => existsSync(join(dir, 'README.md')) && existsSync(dir));
  if (!found) {
    throw new Error(
      `shared Delta test tables not found; looked in: ${candidates.join(', ')} (set TIDEMARK_SHARED)`,
    );
  }
  return found;
}

/** Names of every table folder in the shared folder. */
export function sharedTableNames(): string[] {
  const dir = sharedTablesDir();
  return readdirSync(dir)
    .filter((name) => statSync(join(dir, name)).isDirectory())
    .sort();
}

/** Absolute path of one shared table. */
export function sharedTable(name: string): string {
  return join(sharedTablesDir(), name);
}

/** A private, writable copy of a shared table (the originals must never be written). */
export async function copySharedTable(name: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `tidemark-${name}-`));
  await cp(sharedTable(name), dir, { recursive: true });
  return dir;
}
