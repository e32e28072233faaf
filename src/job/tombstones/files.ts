/**
 * Reading and writing a job's tombstone files (the rules are in ./plan.ts, the SQL in
 * ../../engine/tombstone-files.ts):
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
import type { DeletedKeys } from '../../engine/merge/index.js';
import { localCopies } from '../../engine/local-copies.js';
import type { Relation } from '../../engine/relation.js';
import {
  loadTombstones,
  writeBatchTombstones,
  writeCompactedTombstones,
  type WrittenTombstones,
} from '../../engine/tombstone-files.js';
import { DeltaLogError } from '../../errors.js';
import type { Spool } from '../../spool/spool.js';
import type { Storage } from '../../storage/storage.js';
import {
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
}

/** A batch's view of the job's tombstones; see the module comment. */
export class JobTombstones {
  private constructor(
    private readonly opts: OpenTombstonesOptions,
    private readonly plan: TombstonePlan,
    /** Temp table of the unexpired tombstones, when any file is live. */
    readonly relation: Relation | undefined,
  ) {}

  /** Plan the batch and load the live tombstones. */
  static async open(opts: OpenTombstonesOptions): Promise<JobTombstones> {
    const plan = planTombstones(opts.state, opts.spec, opts.now);
    if (plan.live.length === 0) return new JobTombstones(opts, plan, undefined);
    const paths = await localCopiesOf(
      opts,
      plan.live.map((f) => f.path),
    );
    return new JobTombstones(opts, plan, await loadTombstones(opts.session, paths, plan.cutoff));
  }

  /** Write the batch's deletes (or compact); the state's new `tombstones` field. */
  async record(deletes: DeletedKeys): Promise<TombstoneState | undefined> {
    const { spec, session, now } = this.opts;
    const adding = deletes.rows > 0 && spec.retentionMs > 0;
    let files: TombstoneFile[] = this.plan.live;
    let dropped = this.plan.dropped;
    // Re-keyed tombstones (read as they are: a MERGE buries by the new key, a subset of theirs) are
    // written back under the new key at once, so the state lists only files of it.
    if (needsCompaction(files.length, adding) || this.plan.rekey) {
      files = [
        await this.write((local) =>
          writeCompactedTombstones(session, local, { deletes, now, adding, held: this.relation }),
        ),
      ];
      const at = new Date(now).toISOString();
      dropped = [...dropped, ...this.plan.live.map((f) => ({ path: f.path, droppedAt: at }))];
    } else if (adding) {
      files = [
        ...files,
        await this.write((local) => writeBatchTombstones(session, local, deletes, now)),
      ];
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
    await this.relation?.dispose();
  }

  /** Write a new tombstone file (`writeTo` a local file) and upload it into the table folder; its state entry. */
  private async write(
    writeTo: (local: string) => Promise<WrittenTombstones>,
  ): Promise<TombstoneFile> {
    const { storage, spool, spec } = this.opts;
    const id = randomUUID();
    const local = join(await spool.folder('tombstones-out'), `${id}.parquet`);
    const written = await writeTo(local);
    const path = tombstonePath(spec.job, id);
    this.opts.signal?.throwIfAborted();
    await storage.upload(path, local, this.opts.signal ? { signal: this.opts.signal } : {});
    return { path, ...written };
  }
}

/**
 * Local, glob-safe paths of live tombstone files: in place, or downloaded once per command into
 * the spool (they never change once written, so later batches read the same copies).
 */
async function localCopiesOf(
  opts: OpenTombstonesOptions,
  paths: readonly string[],
): Promise<string[]> {
  const { storage, spec } = opts;
  const listed = paths.find((path) => !isTombstonePath(spec.job, path));
  if (listed !== undefined) {
    throw new DeltaLogError(
      `[job] job state of ${spec.job} in ${storage.uri} lists ${JSON.stringify(listed)} as a tombstone file`,
      {
        context: { uri: storage.uri, key: listed, job: spec.job },
      },
    );
  }
  const copies = await localCopies(storage, paths, opts.spool, {
    cache: 'tombstones-in',
    ...(opts.signal ? { signal: opts.signal } : {}),
    missing: (path, cause) =>
      new DeltaLogError(
        `[job] tombstone file ${path} of job ${spec.job}, listed in the job state of ${storage.uri}, is missing or unreadable`,
        {
          context: { uri: storage.uri, key: path, job: spec.job },
          cause,
        },
      ),
  });
  return paths.map((path) => copies.pathOf(path));
}
