/**
 * The one owner of local scratch space. Every piece of tidemark that needs a temporary file
 * (downloaded source and data files, files being written, checkpoint parts, DuckDB's spill files)
 * gets it from a Spool, so one `close()` removes everything a run left on disk.
 *
 * A spool is a folder `tidemark-<owner>-<host>-<pid>-XXXXXX` below a root (default: the OS temp
 * folder). It is removed on normal exit, on failure (the owner's `finally`) and on SIGINT/SIGTERM
 * (the CLI exits through process.exit, which fires 'exit'). SIGKILL or a machine crash runs no
 * cleanup, so the name records its owner, and `removeStaleSpools` (run by every job at start)
 * removes the folders of processes on this host that are gone. A folder whose owner cannot be
 * told apart from a live process (another host sharing the folder, a reused pid) is left alone:
 * removal is never a guess.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';

/** Spool folders of this process, removed by the 'exit' handler if their owner did not. */
const live = new Set<string>();
let hooked = false;

/** A run's scratch folder; see the module comment. */
export class Spool {
  private sequence = 0;

  private constructor(
    /** The spool's own folder (absolute). */
    readonly dir: string,
    /** True for a spool inside another (see `child`): the parent's exit hook covers it. */
    private readonly nested = false,
  ) {}

  /** Create a spool below `root` (default the OS temp folder), named after its owner (a job, a command). */
  static async create(owner: string, root: string = tmpdir()): Promise<Spool> {
    const dir = await mkdtemp(join(root, spoolPrefix(owner)));
    register(dir);
    return new Spool(dir);
  }

  /** Like `create`, for code that cannot await (a process-wide spool made on first use). */
  static createSync(owner: string, root: string = tmpdir()): Spool {
    const dir = mkdtempSync(join(root, spoolPrefix(owner)));
    register(dir);
    return new Spool(dir);
  }

  /**
   * A fresh, empty sub-folder for one piece of work (`name-<n>`), created now. The caller may
   * remove it early to bound the spool's size; otherwise it goes with the spool.
   */
  async folder(name: string): Promise<string> {
    this.sequence += 1;
    const dir = join(this.dir, `${name}-${this.sequence}`);
    await mkdir(dir, { recursive: true });
    return dir;
  }

  /**
   * The sub-folder `name`, the same one on every call (created on the first): for files worth
   * keeping for the whole run, such as downloads that later batches read again.
   */
  async shared(name: string): Promise<string> {
    const dir = join(this.dir, name);
    await mkdir(dir, { recursive: true });
    return dir;
  }

  /**
   * A spool inside this one, for one step that cleans up after itself (a MERGE's downloads and
   * written files): its `close()` removes only its own folder, keeping the run's spool bounded.
   */
  async child(name: string): Promise<Spool> {
    return new Spool(await this.folder(name), true);
  }

  /** Remove the spool and everything in it. Safe to call twice. */
  async close(): Promise<void> {
    await removeFolder(this.dir);
    if (!this.nested) live.delete(this.dir);
  }
}

/**
 * Remove a spool folder while a straggler may still write into it (a download a failing run
 * abandoned lands its file after the removal started): Node's rm then fails with ENOTEMPTY, so
 * it retries, with a growing pause, rather than let a cleanup hide the run's own outcome.
 */
export async function removeFolder(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 20 });
}

/** This host's name as one spool-name segment: no `-`, so names parse from the right. */
function hostTag(): string {
  return (
    hostname()
      .replace(/[^A-Za-z0-9]/g, '_')
      .slice(0, 40) || 'host'
  );
}

function spoolPrefix(owner: string): string {
  return `tidemark-${owner}-${hostTag()}-${process.pid}-`;
}

/** `tidemark-<owner>-<host>-<pid>-XXXXXX` (mkdtemp's six random characters). */
const SPOOL_NAME = /^tidemark-.+-([A-Za-z0-9_]+)-(\d+)-[A-Za-z0-9]{6}$/;

/** True when a process with this pid exists (EPERM: it exists but belongs to another user). */
function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Remove spool folders below `root` left by dead processes on this host; returns their names. Never throws. */
export async function removeStaleSpools(root: string = tmpdir()): Promise<string[]> {
  const host = hostTag();
  const names = await readdir(root).catch(() => [] as string[]);
  const stale = names.filter((name) => {
    const m = SPOOL_NAME.exec(name);
    return (
      m !== null && m[1] === host && Number(m[2]) !== process.pid && !processExists(Number(m[2]))
    );
  });
  await Promise.all(
    stale.map((name) =>
      rm(join(root, name), { recursive: true, force: true }).catch(() => undefined),
    ),
  );
  return stale;
}

function register(dir: string): void {
  live.add(dir);
  if (!hooked) {
    hooked = true;
    process.once('exit', removeAllSpools);
  }
}

/** Remove every spool of this process now (synchronous: safe inside an 'exit' handler). */
function removeAllSpools(): void {
  for (const dir of live) rmSync(dir, { recursive: true, force: true });
  live.clear();
}
