/**
 * What a job's first run would say about the types of the table it creates, told by `validate`
 * before that run: the files the first run would load first are read the way it reads them
 * (./load-batch.ts: one schema inferred from the batch's files together), so a key column
 * inferred as text or floating is a warning, and an `orderBy` column that would be compared as
 * text (or a file the load refuses) a problem, exactly as the run would warn or refuse.
 *
 * Only a sample: the first `SAMPLE_FILES` files of the first batch (all of them when the batch is
 * smaller), downloaded into the validation's spool, nothing written anywhere.
 */
import type { JobConfig } from '../config/schema.js';
import { discover } from '../discovery/index.js';
import type { DuckSession } from '../engine/duckdb.js';
import { BadFileError, SchemaError } from '../errors.js';
import type { Spool } from '../spool/spool.js';
import type { Storage } from '../storage/storage.js';
import { splitBatches } from './batches.js';
import { fetchFiles } from './fetch.js';
import { loadBatch } from './load-batch.js';
import { discoveryConfigOf } from './open.js';

/** Files of the first batch a validation reads at most. */
export const SAMPLE_FILES = 16;

/** What reading the sample found: the run's warnings, and the refusal it would meet (null: none). */
export interface SampledTypes {
  /** Files read, of the first batch's. */
  sampled: number;
  batchFiles: number;
  warnings: string[];
  refusal: SchemaError | BadFileError | null;
}

/** Read a sample of the first batch of a job whose table does not exist yet; null when there is nothing to read. */
export async function sampleFirstBatch(
  job: JobConfig,
  source: Storage,
  session: DuckSession,
  spool: Spool,
): Promise<SampledTypes | null> {
  const plan = await discover(source, discoveryConfigOf(job), null, {
    concurrency: Math.min(job.concurrency, 16),
  });
  const first = splitBatches(plan.files, job.maxFilesPerBatch, job.maxBytesPerBatch)[0] ?? [];
  if (first.length === 0) return null;
  const sample = first.slice(0, SAMPLE_FILES);
  const fetched = await fetchFiles(source, sample, {
    spool,
    concurrency: Math.min(job.concurrency, 8),
  });
  const found: SampledTypes = {
    sampled: sample.length,
    batchFiles: first.length,
    warnings: [],
    refusal: null,
  };
  try {
    const loaded = await loadBatch(session, job, source.uri, fetched);
    found.warnings = loaded.warnings;
    await loaded.dispose();
  } catch (err) {
    if (!(err instanceof SchemaError || err instanceof BadFileError)) throw err;
    found.refusal = err;
  }
  return found;
}
