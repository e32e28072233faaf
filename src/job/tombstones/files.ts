/**
 * Reading and writing a job's tombstone files (the rules are in ./plan.ts):
 *
 *   open     plan the batch; load the unexpired rows of the live files into a temp table,
 *            which the MERGE uses to bury rows older than a delete
 *   record   (from the MERGE, before its commit) write the batch's deletes as a new file, or
 *            rewrite all live tombstones into one; returns the state field to commit
 *   purge    (after the commit) delete files dropped from the state longer than the grace ago
 *   dispose  drop the temp table
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { DuckSession } from '../../engine/duckdb.js';
import { TOMBSTONE_ORDER, type DeletedKeys } from '../../engine/merge/index.js';
import { localCopies } from '../../engine/local-copies.js';
import { safeReadPath } from '../../engine/safe-alias.js';
import { ident, str } from '../../engine/sql.js';
import { DeltaLogError } from '../../errors.js';
import type { Spool } from '../../spool/spool.js';
import type { Storage } from '../../storage/storage.js';
import {
  DELETED_AT,
  isTombstonePath,
  needsCompaction,
  nextTombstoneState,
  planTombstones,
  tombstonePath,
  type TombstoneFile,
  type TombstonePlan,
  type TombstoneSpec,
  type TombstoneState,
} from './plan.js';

/** The temp table holding a batch's unexpired tombstones. */
const RELATION = 'tidemark_tombstones';

/** What opening needs. */
export interface OpenTombstonesOptions {
  session: DuckSession;
  /** Storage rooted at the table. */
  storage: Storage;
  spec: TombstoneSpec;
  /** The tombstones listed by the state this batch starts from. */
  state: TombstoneState | undefined;
  /** The batch's clock (ms): expiry cut-off and DELETED_AT of new tombstones. */
  now: number;
  /** Scratch space for downloads and files being written. */
  spool: Spool;
  signal?: AbortSignal;
  /** Name of the temp table; default `tidemark_tombstones` (another name lets two owners' tombstones be open at once). */
  relation?: string;
}

/** A batch's view of the job's tombstones; see the module comment. */
export class JobTombstones {
  private constructor(
    private readonly opts: OpenTombstonesOptions,
    private readonly plan: TombstonePlan,
    /** Temp table of the unexpired tombstones, when any file is live. */
    readonly relation: string | undefined,
  ) {}

  /** Plan the batch and load the live tombstones. */
  static async open(opts: OpenTombstonesOptions): Promise<JobTombstones> {
    const plan = planTombstones(opts.state, opts.spec, opts.now);
    if (plan.live.length === 0) return new JobTombstones(opts, plan, undefined);
    const paths = await localCopiesOf(opts, plan.live.map((f) => f.path));
    const relation = opts.relation ?? RELATION;
    await opts.session.run(
      `CREATE OR REPLACE TEMP TABLE ${ident(relation)} AS SELECT * FROM read_parquet([${paths.map(str).join(', ')}], union_by_name = true) ` +
        `WHERE ${ident(DELETED_AT)} >= ${instant(plan.cutoff)}`,
    );
    return new JobTombstones(opts, plan, relation);
  }

  /** Write the batch's deletes (or compact); the state's new `tombstones` field. */
  async record(deletes: DeletedKeys): Promise<TombstoneState | undefined> {
    const { spec } = this.opts;
    const adding = deletes.rows > 0 && spec.retentionMs > 0;
    let files: TombstoneFile[] = this.plan.live;
    let dropped = this.plan.dropped;
    // Re-keyed tombstones (read as they are: a MERGE buries by the new key, a subset of theirs) are
    // written back under the new key at once, so the state lists only files of it.
    if (needsCompaction(files.length, adding) || this.plan.rekey) {
      files = [await this.write(this.compactedSql(deletes, adding))];
      const at = new Date(this.opts.now).toISOString();
      dropped = [...dropped, ...this.plan.live.map((f) => ({ path: f.path, droppedAt: at }))];
    } else if (adding) {
      files = [...files, await this.write(this.stampedSql(deletes))];
    }
    return nextTombstoneState(spec, files, dropped);
  }

  /** Delete the files whose grace period is over; best effort (a leftover is an unlisted orphan). */
  async purge(): Promise<void> {
    const paths = this.plan.purge.filter((p) => isTombstonePath(this.opts.spec.job, p));
    if (paths.length === 0) return;
    await this.opts.storage.delete(paths).catch(() => undefined);
  }

  /** Drop the temp table. */
  async dispose(): Promise<void> {
    await this.opts.session.run(`DROP TABLE IF EXISTS ${ident(this.opts.relation ?? RELATION)}`);
  }

  /** The batch's deletes (key, tie columns, order) with DELETED_AT = the batch clock. */
  private stampedSql(deletes: DeletedKeys): string {
    const cols = [...deletes.keyColumns, ...deletes.tieColumns, TOMBSTONE_ORDER].map(ident).join(', ');
    return `SELECT ${cols}, ${instant(this.opts.now)} AS ${ident(DELETED_AT)} FROM (${deletes.sql})`;
  }

  /**
   * Every unexpired tombstone plus the batch's, one row per key: the latest delete (by order, then
   * the tie columns, NULL the oldest), with the latest time. The batch's part is always there, if
   * empty, so tombstones written without tie columns read them as NULL.
   */
  private compactedSql(deletes: DeletedKeys, adding: boolean): string {
    const keys = deletes.keyColumns.map(ident).join(', ');
    const batch = `SELECT * FROM (${this.stampedSql(deletes)}) WHERE ${adding ? 'TRUE' : 'FALSE'}`;
    const union = this.relation ? `SELECT * FROM ${ident(this.relation)} UNION ALL BY NAME ${batch}` : batch;
    const latest = [TOMBSTONE_ORDER, ...deletes.tieColumns].map((c) => `${ident(c)} DESC NULLS LAST`).join(', ');
    const cols = [...deletes.keyColumns, ...deletes.tieColumns, TOMBSTONE_ORDER].map(ident).join(', ');
    return (
      `SELECT ${cols}, max(${ident(DELETED_AT)}) OVER (PARTITION BY ${keys}) AS ${ident(DELETED_AT)} FROM (${union}) ` +
      `QUALIFY row_number() OVER (PARTITION BY ${keys} ORDER BY ${latest}) = 1 ORDER BY ${keys}`
    );
  }

  /** Write `sql`'s rows as a new tombstone file in the table folder; its state entry. */
  private async write(sql: string): Promise<TombstoneFile> {
    const { session, storage, spool, spec } = this.opts;
    const id = randomUUID();
    const local = join(await spool.folder('tombstones-out'), `${id}.parquet`);
    await session.run(`COPY (${sql}) TO ${str(local)} (FORMAT parquet)`);
    const stats = await session.one(
      `SELECT count(*) AS n, min(${ident(DELETED_AT)}) AS lo, max(${ident(DELETED_AT)}) AS hi FROM read_parquet(${str(safeReadPath(local))})`,
    );
    const path = tombstonePath(spec.job, id);
    this.opts.signal?.throwIfAborted();
    await storage.upload(path, local, this.opts.signal ? { signal: this.opts.signal } : {});
    const iso = (v: unknown) => new Date(v instanceof Date ? v.getTime() : String(v)).toISOString();
    return { path, rows: Number(stats?.['n'] ?? 0), minDeletedAt: iso(stats?.['lo']), maxDeletedAt: iso(stats?.['hi']) };
  }
}

/** A TIMESTAMPTZ literal of an instant (ms). */
function instant(ms: number): string {
  return `${str(new Date(ms).toISOString())}::TIMESTAMPTZ`;
}

/**
 * Local, glob-safe paths of live tombstone files: in place, or downloaded once per command into
 * the spool (they never change once written, so later batches read the same copies).
 */
async function localCopiesOf(opts: OpenTombstonesOptions, paths: readonly string[]): Promise<string[]> {
  const { storage, spec } = opts;
  const listed = paths.find((path) => !isTombstonePath(spec.job, path));
  if (listed !== undefined) {
    throw new DeltaLogError(`[job] job state of ${spec.job} in ${storage.uri} lists ${JSON.stringify(listed)} as a tombstone file`, {
      context: { uri: storage.uri, key: listed, job: spec.job },
    });
  }
  const copies = await localCopies(storage, paths, opts.spool, {
    cache: 'tombstones-in',
    ...(opts.signal ? { signal: opts.signal } : {}),
    missing: (path, cause) =>
      new DeltaLogError(`[job] tombstone file ${path} of job ${spec.job}, listed in the job state of ${storage.uri}, is missing or unreadable`, {
        context: { uri: storage.uri, key: path, job: spec.job },
        cause,
      }),
  });
  return paths.map((path) => copies.pathOf(path));
}
