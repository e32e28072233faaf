/**
 * `onBadFile: quarantine`: a batch that fails because of one file goes on without it.
 *
 * Per file (quarantinable), because the error names the file (`context.key`, its source URI):
 * a file DuckDB cannot read (corrupt or truncated Parquet, truncated gzip, ragged CSV rows,
 * invalid JSON, an empty Parquet file), a file whose format cannot be told from its name, a
 * value that does not fit its table column, a new column of a type Delta has no equivalent of (a
 * Parquet TIME), a NULL key, a key column missing from a file
 * (BadFileError), a row that breaks one of the table's CHECK constraints, invariants or NOT NULL
 * columns (ConstraintViolationError, a BadFileError: bad data like a value that does not cast),
 * and new columns under `schemaEvolution: 'fail'` (SchemaError naming the file).
 * Batch-level (never quarantined): files that read alone but not together (their types cannot
 * be combined: no single file is to blame), an invalid deleteWhen, a key or orderBy column
 * missing from every file of a batch of several, the MERGE engine's own duplicate/NULL-key
 * checks (MergeInputError: after dedupe these are invariants, not a file's fault), storage
 * errors (including keys the store refuses as unsafe) and commit errors.
 *
 * The file is set aside, recorded in the job state (key, ETag, error, time; the newest
 * MAX_QUARANTINED entries), counted as done by discovery so it is not retried every run (unless
 * it is overwritten with a new ETag and `onOverwrite: reload`), and the rest of the batch is
 * loaded again without it, in the same commit. Nothing is dropped silently: the run logs a
 * warning and its report, and `tidemark status`, list the file.
 */
import type { JobConfig } from '../config/schema.js';
import type { Logger } from '../log/logger.js';
import { redactText } from '../log/redact.js';
import { BadFileError, SchemaError } from '../errors.js';
import type { FetchedFile } from './fetch.js';
import { sourceName } from './load-batch.js';

/** A file set aside, as the job (or backfill) state records it. */
export interface QuarantinedFile {
  key: string;
  etag: string;
  /** The error that set it aside (redacted, bounded). */
  error: string;
  /** When (ISO). */
  at: string;
}

/** A file another owner of the job's states had quarantined, loaded by this owner at `at` (./quarantine-list.ts). */
export interface ClearedFile {
  key: string;
  etag: string;
  at: string;
}

/** Quarantined files a job state keeps (the newest). */
export const MAX_QUARANTINED = 1000;
/** Longest error text kept per quarantined file. */
const MAX_ERROR_TEXT = 2000;

/** A file set aside by this batch. */
export interface Quarantined {
  fetched: FetchedFile;
  entry: QuarantinedFile;
}

/** The batch file a bad-input error names, when setting that file aside can help. */
export function badFileOf(
  err: unknown,
  files: readonly FetchedFile[],
  sourceUri: string,
): FetchedFile | undefined {
  if (!(err instanceof BadFileError || err instanceof SchemaError)) return undefined;
  const key = err.context.key;
  if (typeof key !== 'string') return undefined;
  return files.find((f) => sourceName(sourceUri, f.file.key) === key);
}

/** The state entry of a quarantined file. */
export function quarantineEntry(f: FetchedFile, err: Error, now = new Date()): QuarantinedFile {
  return {
    key: f.file.key,
    etag: f.etag,
    error: redactText(err.message).slice(0, MAX_ERROR_TEXT),
    at: now.toISOString(),
  };
}

/**
 * The quarantine list after a batch: `list` without the batch's files (`done`: a file that was
 * overwritten and now loads leaves the list), plus the files it set aside (`added`, newest
 * last), bounded to the newest MAX_QUARANTINED.
 */
export function withQuarantined(
  list: readonly QuarantinedFile[],
  added: readonly QuarantinedFile[],
  done: readonly { key: string }[] = [],
): QuarantinedFile[] {
  const keys = new Set([...done, ...added].map((q) => q.key));
  return [...list.filter((q) => !keys.has(q.key)), ...added].slice(-MAX_QUARANTINED);
}

/**
 * What the batch loop does when an attempt to load and commit a batch fails: set aside the file the
 * error names and try the rest again (`onBadFile: quarantine`), or let the error fail the batch.
 * The loop (./batch.ts) holds the load, the MERGE and the commit; the policy only decides.
 */
export interface BadFilePolicy {
  /** The file of `kept` to set aside for `err`, with its state entry (logged); undefined: `err` fails the batch. */
  setAside(err: unknown, kept: readonly FetchedFile[]): Quarantined | undefined;
}

/** The job's policy: under `onBadFile: quarantine` a file a bad-input error names is set aside; otherwise none is. */
export function badFilePolicy(
  job: Pick<JobConfig, 'name' | 'onBadFile'>,
  sourceUri: string,
  logger: Logger,
): BadFilePolicy {
  if (job.onBadFile !== 'quarantine') return { setAside: () => undefined };
  return {
    setAside(err, kept) {
      const bad = badFileOf(err, kept, sourceUri);
      if (!bad) return undefined;
      const entry = quarantineEntry(bad, err as Error);
      logger.warn(
        { job: job.name, key: bad.file.key, etag: bad.etag, error: entry.error },
        'file quarantined; loading the rest of the batch without it',
      );
      return { fetched: bad, entry };
    },
  };
}
