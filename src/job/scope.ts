/**
 * What one command needs for one job, opened once and closed on every exit path: the scratch
 * spool, a DuckDB session spilling into it, the job's source store and its target table.
 * `run`, `backfill`, `reset`, `status`, `optimize` and `vacuum` all work inside a scope.
 */
import { join } from 'node:path';
import type { JobConfig } from '../config/schema.js';
import { targetStorageConfig } from '../config/storage.js';
import type { DeltaTable } from '../delta/table.js';
import { DuckSession } from '../engine/duckdb.js';
import { openTable } from '../engine/table.js';
import { ResourceError } from '../errors.js';
import { removeStaleSpools, Spool } from '../spool/spool.js';
import { RetryBudget } from '../storage/s3.js';
import type { ChecksumCounts, RequestCounts, Storage } from '../storage/storage.js';
import type { RunContext } from './context.js';
import { openSource, openTarget } from './open.js';

/** The resources of one job for one command. */
export interface JobScope {
  job: JobConfig;
  ctx: RunContext;
  spool: Spool;
  session: DuckSession;
  /** The source store (one S3 client for the whole command). */
  source: Storage;
  /** The target table (it need not exist yet). */
  table: DeltaTable;
  /** How often this command met other writers of the table (reports show it). */
  contention: Contention;
}

/** Commit races of one command: retries that needed no new plan, and re-plans after a conflict. */
export interface Contention {
  /** Commits retried at a later version because a winner touched nothing this commit read. */
  commitRetries: number;
  /** Lost races whose winner conflicted with what was read: the command planned again. */
  replans: number;
}

/**
 * `withJobScope` for a command that reports: however `fn` ends, `report` gets the scope's S3
 * requests, checked reads and uploads, and commit contention, so a failed run still says what it cost.
 */
export function withReportedScope<T>(
  job: JobConfig,
  ctx: RunContext,
  label: string,
  report: { requests?: RequestCounts; checksums?: ChecksumCounts } & Partial<Contention>,
  fn: (scope: JobScope) => Promise<T>,
): Promise<T> {
  return withJobScope(job, ctx, label, async (scope) => {
    try {
      return await fn(scope);
    } finally {
      const requests = requestsOf(scope);
      if (requests) report.requests = requests;
      const checksums = checksumsOf(scope);
      if (checksums) report.checksums = checksums;
      Object.assign(report, scope.contention);
    }
  });
}

/**
 * The S3 requests the scope's source and target sent so far, by kind (what the run cost);
 * undefined when neither is on S3.
 */
function requestsOf(scope: Pick<JobScope, 'source' | 'table'>): RequestCounts | undefined {
  const counts = [scope.source.requestCounts?.(), scope.table.storage.requestCounts?.()].filter(
    (c) => c !== undefined,
  );
  if (counts.length === 0) return undefined;
  const total: RequestCounts = { list: 0, get: 0, put: 0, head: 0, delete: 0 };
  for (const c of counts)
    for (const kind of Object.keys(total) as (keyof RequestCounts)[]) total[kind] += c[kind];
  return total;
}

/** The reads and uploads the scope's source and target checked, by kind; undefined when neither is on S3. */
function checksumsOf(scope: Pick<JobScope, 'source' | 'table'>): ChecksumCounts | undefined {
  const counts = [scope.source.checksumCounts?.(), scope.table.storage.checksumCounts?.()].filter(
    (c) => c !== undefined,
  );
  if (counts.length === 0) return undefined;
  const total: ChecksumCounts = { reads: {}, uploads: {} };
  for (const c of counts) {
    for (const side of ['reads', 'uploads'] as const) {
      for (const [kind, n] of Object.entries(c[side]))
        total[side][kind] = (total[side][kind] ?? 0) + n;
    }
  }
  return total;
}

/**
 * The error to report when `err` says the disk under the spool folder is full (ENOSPC from a
 * download or a file written there, or DuckDB failing to spill into it); null for other errors.
 * The spool is removed on the way out, which frees what the run took.
 */
function spoolDiskFull(err: unknown, spool: Spool): ResourceError | null {
  for (let e = err, depth = 0; e instanceof Error && depth < 16; e = e.cause, depth++) {
    const errno = e as NodeJS.ErrnoException;
    const full = errno.code === 'ENOSPC' || /No space left on device/i.test(e.message);
    const inSpool = (errno.path ?? e.message).includes(spool.dir);
    if (full && inSpool) {
      return new ResourceError(
        `[job] the disk holding the spool folder ${spool.dir} is full (ENOSPC); the run stopped, committed nothing more and removed the spool. ` +
          'Free space there, or point the spool at a larger disk (TMPDIR), then run again',
        { kind: 'terminal', context: { key: spool.dir }, cause: err },
      );
    }
  }
  return null;
}

/**
 * Open a scope for `job` (named `label` in its spool folder's name), run `fn` in it, and close it:
 * the session, then the spool with everything in it. Spool folders of killed runs on this host
 * are removed first (see src/spool/spool.ts).
 */
export async function withJobScope<T>(
  job: JobConfig,
  ctx: RunContext,
  label: string,
  fn: (scope: JobScope) => Promise<T>,
): Promise<T> {
  const stale = await removeStaleSpools(ctx.spoolRoot);
  if (stale.length > 0)
    ctx.logger.info({ job: job.name, folders: stale }, 'removed spool folders of killed runs');
  const spool = await Spool.create(label, ctx.spoolRoot);
  let session: DuckSession | null = null;
  try {
    // DuckDB spills past its memory limit into the spool, which every exit path removes.
    session = await DuckSession.open({
      tempDirectory: join(spool.dir, 'duckdb'),
      ...(ctx.engine?.memoryLimit ? { memoryLimit: ctx.engine.memoryLimit } : {}),
      ...(ctx.engine?.threads ? { threads: ctx.engine.threads } : {}),
    });
    const budget = new RetryBudget();
    const { singleWriter } = targetStorageConfig(ctx.storage, job);
    const table = openTable(
      openTarget(job, ctx.storage, ctx.openStorage, budget),
      { session, spool },
      { singleWriter },
    );
    const source = openSource(job, ctx.storage, ctx.openStorage, budget);
    return await fn({
      job,
      ctx,
      spool,
      session,
      source,
      table,
      contention: { commitRetries: 0, replans: 0 },
    });
  } catch (err) {
    throw spoolDiskFull(err, spool) ?? err;
  } finally {
    session?.close();
    await spool.close();
  }
}
