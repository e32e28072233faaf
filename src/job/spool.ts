/**
 * Spool folders of running jobs, removed on normal exit, on failure (the run's `finally`)
 * and on SIGINT/SIGTERM (the CLI exits through process.exit, which fires 'exit').
 *
 * SIGKILL (or a crash of the machine) runs no cleanup, so a folder's name records its owner,
 * `tidemark-<job>-<host>-<pid>-XXXXXX`, and every run first removes the folders of runs on this
 * host whose process is gone. A folder whose owner cannot be told apart from a live process
 * (another host sharing the folder, a reused pid) is left alone: removal is never a guess.
 */
import { rmSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';

const live = new Set<string>();
let hooked = false;

/** This host's name as one spool-name segment: no `-`, so names parse from the right. */
function hostTag(): string {
  return hostname().replace(/[^A-Za-z0-9]/g, '_').slice(0, 40) || 'host';
}

/** `tidemark-<job>-<host>-<pid>-XXXXXX` (mkdtemp's six random characters). */
const SPOOL_NAME = /^tidemark-.+-([A-Za-z0-9_]+)-(\d+)-[A-Za-z0-9]{6}$/;

/** Create this run's spool folder below `root` and remember it until `unregisterSpool`. */
export async function createSpool(root: string, job: string): Promise<string> {
  const dir = await mkdtemp(join(root, `tidemark-${job}-${hostTag()}-${process.pid}-`));
  registerSpool(dir);
  return dir;
}

/** True when a process with this pid exists (EPERM: it exists but belongs to another user). */
function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Remove spool folders below `root` left by dead runs on this host; returns their names. Never throws. */
export async function removeStaleSpools(root: string): Promise<string[]> {
  const host = hostTag();
  const names = await readdir(root).catch(() => [] as string[]);
  const stale = names.filter((name) => {
    const m = SPOOL_NAME.exec(name);
    return m !== null && m[1] === host && Number(m[2]) !== process.pid && !processExists(Number(m[2]));
  });
  await Promise.all(stale.map((name) => rm(join(root, name), { recursive: true, force: true }).catch(() => undefined)));
  return stale;
}

/** Remember a spool folder until `unregisterSpool`. */
export function registerSpool(dir: string): void {
  live.add(dir);
  if (!hooked) {
    hooked = true;
    process.once('exit', removeAllSpools);
  }
}

/** Forget a spool folder (its run removed it). */
export function unregisterSpool(dir: string): void {
  live.delete(dir);
}

/** Remove every live spool folder now (synchronous: safe inside an 'exit' handler). */
export function removeAllSpools(): void {
  for (const dir of live) rmSync(dir, { recursive: true, force: true });
  live.clear();
}
