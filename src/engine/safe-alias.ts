/**
 * DuckDB's file readers expand `*`, `?`, `[` and `{` in paths as globs, so a data file named
 * `x?.parquet` would also read `xa.parquet`. Such files are read through a symbolic link with
 * a plain name in a process-wide spool (removed when the process exits, and by the next run's
 * clean-up of stale spools after a kill).
 */
import { createHash } from 'node:crypto';
import { symlinkSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Spool } from '../spool/spool.js';
import { needsSafeAlias } from './sql.js';

let aliasDir: string | null = null;

function dir(): string {
  if (aliasDir) return aliasDir;
  const created = Spool.createSync('alias').dir;
  if (needsSafeAlias(created))
    throw new Error(`the temp folder ${created} itself contains glob characters`);
  aliasDir = created;
  return created;
}

/**
 * A path DuckDB reads literally: `path` itself when it has no glob characters, else a
 * symlink to it (stable per path, so repeated calls reuse one link).
 */
export function safeReadPath(path: string): string {
  if (!needsSafeAlias(path)) return path;
  const target = resolve(path);
  // All the suffixes (`.csv.gz`): readers tell format and compression by them.
  const ext = /(\.[A-Za-z0-9]{1,12}){1,3}$/.exec(target)?.[0] ?? '';
  const link = join(dir(), createHash('sha256').update(target).digest('hex').slice(0, 32) + ext);
  try {
    symlinkSync(target, link);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  return link;
}
