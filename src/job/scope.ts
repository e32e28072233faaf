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
import { removeStaleSpools, Spool } from '../spool/spool.js';
import type { Storage } from '../storage/storage.js';
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
}

/**
 * Open a scope for `job` (named `label` in its spool folder's name), run `fn` in it, and close it:
 * the session, then the spool with everything in it. Spool folders of killed runs on this host
 * are removed first (see src/spool/spool.ts).
 */
export async function withJobScope<T>(job: JobConfig, ctx: RunContext, label: string, fn: (scope: JobScope) => Promise<T>): Promise<T> {
  const stale = await removeStaleSpools(ctx.spoolRoot);
  if (stale.length > 0) ctx.logger.info({ job: job.name, folders: stale }, 'removed spool folders of killed runs');
  const spool = await Spool.create(label, ctx.spoolRoot);
  let session: DuckSession | null = null;
  try {
    // DuckDB spills big batches to disk inside the spool, which every exit path removes.
    session = await DuckSession.open({ tempDirectory: join(spool.dir, 'duckdb') });
    const { singleWriter } = targetStorageConfig(ctx.storage, job);
    const table = openTable(openTarget(job, ctx.storage, ctx.openStorage), { session, spool }, { singleWriter });
    const source = openSource(job, ctx.storage, ctx.openStorage);
    return await fn({ job, ctx, spool, session, source, table });
  } finally {
    session?.close();
    await spool.close();
  }
}
