/**
 * OpenLineage run events (spec 2-0-2, https://openlineage.io/spec/2-0-2/OpenLineage.json) for one
 * job run: START before it, COMPLETE or FAIL after it. Pure: the sinks are in ./lineage-sink.ts.
 *
 * - `run.runId` is a UUID per job run; the CLI invocation that ran it (its `runId`, the one in
 *   every log line and report) is the run's `parent` facet, so several jobs run by one invocation
 *   stay distinct runs and still link to its logs.
 * - `job` is (lineage.namespace, job name).
 * - inputs: the source files the run committed, named per OpenLineage's dataset naming
 *   (`s3://bucket` + key, `file` + absolute path); past MAX_FILE_INPUTS files, the source prefix.
 * - outputs: the target table, with the rows written (outputStatistics facet).
 */
import { randomUUID } from 'node:crypto';
import { describeUri } from '../storage/uri.js';

/** The OpenLineage spec version the events follow. */
export const OPENLINEAGE_SCHEMA_URL =
  'https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent';

const FACETS = {
  parent: 'https://openlineage.io/spec/facets/1-2-0/ParentRunFacet.json#/$defs/ParentRunFacet',
  errorMessage:
    'https://openlineage.io/spec/facets/1-0-1/ErrorMessageRunFacet.json#/$defs/ErrorMessageRunFacet',
  outputStatistics:
    'https://openlineage.io/spec/facets/1-0-2/OutputStatisticsOutputDatasetFacet.json#/$defs/OutputStatisticsOutputDatasetFacet',
  jobType: 'https://openlineage.io/spec/facets/2-0-4/JobTypeJobFacet.json#/$defs/JobTypeJobFacet',
} as const;

/** More input files than this are reported as their source prefix, to keep events small. */
export const MAX_FILE_INPUTS = 1000;

/** A dataset as OpenLineage names it. */
export interface Dataset {
  namespace: string;
  name: string;
  facets?: Record<string, unknown>;
  outputFacets?: Record<string, unknown>;
}

/** An OpenLineage RunEvent (the fields tidemark writes). */
export interface RunEvent {
  eventType: 'START' | 'COMPLETE' | 'FAIL' | 'ABORT';
  eventTime: string;
  producer: string;
  schemaURL: string;
  run: { runId: string; facets?: Record<string, unknown> };
  job: { namespace: string; name: string; facets?: Record<string, unknown> };
  inputs: Dataset[];
  outputs: Dataset[];
}

/** What every event of one job run shares. */
export interface LineageRun {
  /** This job run's id (a UUID). */
  runId: string;
  /** The CLI invocation's id (a UUID): the parent run. */
  invocationId: string;
  namespace: string;
  job: string;
  /** The job's source URI (its prefix) and target table URI. */
  sourceUri: string;
  targetUri: string;
  /** The producer URI (tidemark and its version). */
  producer: string;
}

/** A new job run under `invocationId`. */
export function lineageRun(opts: Omit<LineageRun, 'runId'>): LineageRun {
  return { ...opts, runId: randomUUID() };
}

/** The dataset OpenLineage's naming gives a storage URI: `s3://bucket` + key, `file` + absolute path. */
export function datasetOf(uri: string): Dataset {
  const loc = describeUri(uri);
  if (loc.kind === 's3')
    return { namespace: `s3://${loc.bucket}`, name: loc.prefix.replace(/\/+$/, '') || '/' };
  return { namespace: 'file', name: loc.path };
}

/** The file `key` under the source URI. */
function sourceFileUri(sourceUri: string, key: string): string {
  return sourceUri.endsWith('/') ? sourceUri + key : `${sourceUri}/${key}`;
}

function facet(
  run: LineageRun,
  kind: keyof typeof FACETS,
  fields: Record<string, unknown>,
): Record<string, unknown> {
  return { _producer: run.producer, _schemaURL: FACETS[kind], ...fields };
}

function base(
  run: LineageRun,
  eventType: RunEvent['eventType'],
  time: Date,
): Omit<RunEvent, 'inputs' | 'outputs'> {
  return {
    eventType,
    eventTime: time.toISOString(),
    producer: run.producer,
    schemaURL: OPENLINEAGE_SCHEMA_URL,
    run: {
      runId: run.runId,
      facets: {
        parent: facet(run, 'parent', {
          run: { runId: run.invocationId },
          job: { namespace: run.namespace, name: 'tidemark' },
        }),
      },
    },
    job: {
      namespace: run.namespace,
      name: run.job,
      facets: {
        jobType: facet(run, 'jobType', {
          processingType: 'BATCH',
          integration: 'TIDEMARK',
          jobType: 'JOB',
        }),
      },
    },
  };
}

/** The START event: the table as output; inputs are not known before discovery. */
export function startEvent(run: LineageRun, time = new Date()): RunEvent {
  return { ...base(run, 'START', time), inputs: [], outputs: [datasetOf(run.targetUri)] };
}

/** What a finished run read and wrote. */
export interface RunResult {
  /** Keys (relative to the source URI) of the files committed. */
  files: readonly string[];
  /** Rows inserted, updated or deleted in the table. */
  rowsWritten: number;
  /** Set when the run failed. */
  error?: { message: string; stack?: string };
  /** The run was stopped (SIGINT/SIGTERM): ABORT rather than FAIL. */
  aborted?: boolean;
}

/** The COMPLETE event, or FAIL (`result.error`), or ABORT (`result.aborted`). */
export function endEvent(run: LineageRun, result: RunResult, time = new Date()): RunEvent {
  const event = base(run, result.aborted ? 'ABORT' : result.error ? 'FAIL' : 'COMPLETE', time);
  if (result.error) {
    const { message, stack } = result.error;
    event.run.facets = {
      ...event.run.facets,
      errorMessage: facet(run, 'errorMessage', {
        message,
        programmingLanguage: 'JavaScript',
        ...(stack ? { stackTrace: stack } : {}),
      }),
    };
  }
  const inputs =
    result.files.length > MAX_FILE_INPUTS
      ? [datasetOf(run.sourceUri)]
      : result.files.map((key) => datasetOf(sourceFileUri(run.sourceUri, key)));
  const output: Dataset = {
    ...datasetOf(run.targetUri),
    outputFacets: {
      outputStatistics: facet(run, 'outputStatistics', { rowCount: result.rowsWritten }),
    },
  };
  return { ...event, inputs, outputs: [output] };
}
