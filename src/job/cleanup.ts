/**
 * `tidemark cleanup` (and a run with `source.afterLoad.atEndOfRun`): move or delete the source files
 * whose load committed at least `afterLoad.after` ago (./cleanup-plan.ts says which). A dry run
 * unless `apply`.
 *
 * Each file is checked again just before it is touched (the ETag planned, else it is left alone). A
 * move copies the file below `afterLoad.move` under the same key, reads the copy back and compares
 * its bytes and size with the original's before deleting the original; a copy already there with
 * the same bytes (a cleanup interrupted between copy and delete) is kept and the delete finishes,
 * one with other bytes is never overwritten (the file is reported and left in place). So a rerun
 * either does nothing or finishes the work, and never loses a file.
 *
 * What was done is recorded in the table folder, one JSON file per cleanup that acted
 * (`_tidemark/cleanup/<job>/<time>-<uuid>.json`): beside the job's ledger, in the table the job
 * owns, and not in a Delta commit, which would make cleanup a writer racing the job's runs for
 * no change of data. The record is for people and audits; a rerun needs no record to be a no-op,
 * since a file moved or deleted is no longer listed in the source.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import pLimit from 'p-limit';
import type { JobConfig } from '../config/schema.js';
import { sourceStorageConfig } from '../config/storage.js';
import { moveTargetOverlaps } from '../config/uri-overlap.js';
import { ConfigError, StorageError } from '../errors.js';
import { identifyObjects, type Storage } from '../storage/storage.js';
import { openStorage } from '../storage/uri.js';
import {
  planCleanup,
  type CleanupSkipReason,
  type EligibleFile,
  type SkippedCleanupFile,
} from './cleanup-plan.js';
import type { RunContext } from './context.js';
import { s3Options } from './open.js';
import { timedOutcome, type JobOutcome, type ReportedError, type RunReport } from './report.js';
import { withJobScope, type JobScope } from './scope.js';

/** Folder of the cleanup records, relative to the table root. */
const RECORD_FOLDER = '_tidemark/cleanup';

/** One file moved or deleted. */
export interface CleanedFile extends EligibleFile {
  action: 'moved' | 'deleted';
  /** Where a moved file is now (URI). */
  to?: string;
}

/** A file planned for cleanup and left in place when its turn came. */
export interface LeftFile {
  key: string;
  reason: 'changed since the plan' | 'gone since the plan' | 'move target holds another file';
}

/** What cleanup reports per job. */
export interface CleanupReport {
  job: string;
  command: 'cleanup';
  /** The target table's URI, and the source's. */
  table: string;
  source: string;
  status: 'dry-run' | 'cleaned' | 'nothing-to-do' | 'not-configured' | 'failed';
  dryRun: boolean;
  action: 'move' | 'delete' | null;
  /** The move target's URI (move only). */
  moveTo: string | null;
  /** `afterLoad.after` in ms. */
  afterMs: number | null;
  /** The files to move or delete (dry run), or that were (with `apply`). */
  files: Array<EligibleFile | CleanedFile>;
  bytes: number;
  skipped: SkippedCleanupFile[];
  skippedByReason: Partial<Record<CleanupSkipReason, number>>;
  left: LeftFile[];
  /** The record written in the table folder (null: nothing done). */
  record: string | null;
  durationMs: number;
  error?: ReportedError;
}

export interface CleanupOptions {
  apply: boolean;
  /** The clock (epoch ms; tests). */
  now?: number;
}

/** Plan, and with `apply` do, the job's `afterLoad` cleanup. Never throws. */
export async function cleanupJob(
  job: JobConfig,
  ctx: RunContext,
  opts: CleanupOptions,
): Promise<JobOutcome<CleanupReport>> {
  const afterLoad = job.source.afterLoad;
  const report: CleanupReport = {
    job: job.name,
    command: 'cleanup',
    table: job.target.uri,
    source: job.source.uri,
    status: 'failed',
    dryRun: !opts.apply,
    action: afterLoad ? (afterLoad.move !== undefined ? 'move' : 'delete') : null,
    moveTo: afterLoad?.move ?? null,
    afterMs: afterLoad?.after ?? null,
    files: [],
    bytes: 0,
    skipped: [],
    skippedByReason: {},
    left: [],
    record: null,
    durationMs: 0,
  };
  return timedOutcome(
    () => report,
    async () => {
      if (!afterLoad) return { ...report, status: 'not-configured' };
      // A job not loaded from a config file (the API) meets the rule here, before anything moves.
      const [overlap] = moveTargetOverlaps(job);
      if (overlap !== undefined) {
        throw new ConfigError(`[cleanup] job ${job.name}: source.afterLoad.move ${overlap}`, {
          field: 'source.afterLoad.move',
        });
      }
      return withJobScope(job, ctx, `${job.name}-cleanup`, async (scope) => {
        const snapshot = await scope.table.snapshot();
        const plan = await planCleanup(scope, snapshot, afterLoad.after, opts.now ?? Date.now());
        report.skipped = plan.skipped;
        for (const s of plan.skipped)
          report.skippedByReason[s.reason] = (report.skippedByReason[s.reason] ?? 0) + 1;
        if (!opts.apply) {
          report.files = plan.eligible;
          report.bytes = plan.eligible.reduce((n, f) => n + f.size, 0);
          return { ...report, status: 'dry-run' };
        }
        if (plan.eligible.length === 0) return { ...report, status: 'nothing-to-do' };
        const move = afterLoad.move;
        const archive = move === undefined ? null : openArchive(job, ctx, move);
        // Written before anything is touched (what it set out to do), and again when done: an
        // interrupted cleanup leaves its plan on record.
        const record = recordKey(job.name, opts.now ?? Date.now());
        await writeRecord(scope, record, report, plan.eligible, false);
        report.record = record;
        try {
          await act(scope, archive, plan.eligible, report);
        } finally {
          await writeRecord(scope, record, report, plan.eligible, true);
        }
        return { ...report, status: report.files.length > 0 ? 'cleaned' : 'nothing-to-do' };
      });
    },
  );
}

/** The move target, with the source's storage settings (an archive prefix is usually the source's bucket). */
function openArchive(job: JobConfig, ctx: RunContext, uri: string): Storage {
  return (ctx.openStorage ?? openStorage)(
    uri,
    s3Options(sourceStorageConfig(ctx.storage, job), undefined),
  );
}

/** Move or delete each file, `job.concurrency` at a time; `report` gets each one done or left. */
async function act(
  scope: JobScope,
  archive: Storage | null,
  files: readonly EligibleFile[],
  report: CleanupReport,
): Promise<void> {
  const limit = pLimit(Math.min(scope.job.concurrency, 8));
  const spool = await scope.spool.folder('cleanup');
  // Every move under way ends before the failure is raised (allSettled, not all): the record
  // written after this must name each file that has left the source, not only those done first.
  let failedOne = false;
  const settled = await Promise.allSettled(
    files.map((file, i) =>
      limit(async () => {
        scope.ctx.signal?.throwIfAborted();
        if (failedOne) return; // after a failure, no further file is touched
        try {
          await moveOrDelete(file, i);
        } catch (err) {
          failedOne = true;
          throw err;
        }
      }),
    ),
  );
  report.files.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  report.left.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;

  async function moveOrDelete(file: EligibleFile, i: number): Promise<void> {
    const now = await currentEtag(scope.source, file.key);
    if (now !== file.etag) {
      report.left.push({
        key: file.key,
        reason: now === null ? 'gone since the plan' : 'changed since the plan',
      });
      return;
    }
    if (archive === null) {
      await scope.source.delete([file.key]);
      done(report, { ...file, action: 'deleted' });
      return;
    }
    const local = join(spool, `${i}.src`);
    await scope.source.download(file.key, local);
    // The bytes downloaded are the version planned only if the file is still that version now.
    if ((await currentEtag(scope.source, file.key)) !== file.etag) {
      report.left.push({ key: file.key, reason: 'changed since the plan' });
      return;
    }
    const digest = await sha256(local);
    const copy = join(spool, `${i}.copy`);
    const existing = await archive.head(file.key);
    if (existing === null) await archive.upload(file.key, local);
    const copied = await archive.head(file.key);
    const same =
      copied !== null &&
      copied.size === file.size &&
      (await archive.download(file.key, copy), (await sha256(copy)) === digest);
    if (!same && existing !== null) {
      report.left.push({ key: file.key, reason: 'move target holds another file' });
      return;
    }
    if (!same) {
      throw new StorageError(
        `[cleanup] the copy of ${file.key} at ${archive.uri} does not hold the bytes of the original (size or SHA-256 differ); the original is kept`,
        {
          context: { uri: archive.uri, key: file.key },
        },
      );
    }
    await scope.source.delete([file.key]);
    done(report, { ...file, action: 'moved', to: `${archive.uri}${file.key}` });
  }
}

function done(report: CleanupReport, file: CleanedFile): void {
  report.files.push(file);
  report.bytes += file.size;
}

/** The file's ETag as a plain listing gives it now (a local source's small files: their content digest), or null when gone. */
async function currentEtag(source: Storage, key: string): Promise<string | null> {
  const info = await source.head(key);
  if (info === null) return null;
  const [identified] = await identifyObjects(source, [info]);
  return (identified ?? info).etag;
}

async function sha256(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Where this cleanup's record goes (the time first, so records list in order). */
function recordKey(job: string, now: number): string {
  return `${RECORD_FOLDER}/${job}/${new Date(now).toISOString().replace(/[:.]/g, '-')}-${randomUUID()}.json`;
}

/** Write (or rewrite) the record of this cleanup into the table folder: what it planned, and what it did. */
async function writeRecord(
  scope: JobScope,
  key: string,
  report: CleanupReport,
  planned: readonly EligibleFile[],
  finished: boolean,
): Promise<void> {
  const body = {
    job: report.job,
    at: new Date().toISOString(),
    finished,
    source: report.source,
    action: report.action,
    moveTo: report.moveTo,
    afterMs: report.afterMs,
    planned: planned.map((f) => f.key),
    done: report.files,
    left: report.left,
  };
  await scope.table.storage.write(key, JSON.stringify(body, null, 2) + '\n', {
    contentType: 'application/json',
  });
}

/**
 * After a run (`source.afterLoad.atEndOfRun`): a run that succeeded, and was no dry run, is followed
 * by an acting cleanup, summed up in its report. A cleanup that fails fails the outcome (the exit
 * code says so) while the run's commits stay, as the report shows.
 */
export async function cleanupAfterRun(
  job: JobConfig,
  ctx: RunContext,
  outcome: JobOutcome<RunReport>,
): Promise<JobOutcome<RunReport>> {
  if (!outcome.ok || ctx.dryRun || job.source.afterLoad?.atEndOfRun !== true) return outcome;
  const done = await cleanupJob(job, ctx, { apply: true });
  const r = done.report;
  const report: RunReport = {
    ...outcome.report,
    cleanup: {
      status: r.status,
      action: r.action,
      files: r.files.length,
      bytes: r.bytes,
      left: r.left,
      record: r.record,
    },
  };
  return done.ok ? { ok: true, report } : { ok: false, report, error: done.error };
}
