/**
 * `tidemark show`: rows of a job's target table through DuckDB. Nothing from the command line
 * reaches SQL unchecked: columns are quoted identifiers that must exist in the table, --where must
 * parse as exactly one expression without subqueries (engine/expression.ts), --limit is an integer.
 */
import type { JobConfig } from '../../config/schema.js';
import { expressionProblem } from '../../engine/expression.js';
import { filesMatchingPartitions } from '../../engine/partition-prune.js';
import { tableRows } from '../../engine/table-queries.js';
import { ConfigError } from '../../errors.js';
import type { RunContext } from '../../job/context.js';
import { timedOutcome, type JobOutcome, type ReportedError } from '../../job/report.js';
import { withJobScope } from '../../job/scope.js';

/** What to show. */
export interface ShowOptions {
  where?: string;
  limit: number;
  /** Only these columns, in this order (default: every column of the table). */
  columns?: string[];
}

/** The rows shown for one job. */
export interface ShowReport {
  job: string;
  table: string;
  status: 'ok' | 'no-table' | 'failed';
  tableVersion: number | null;
  columns: string[];
  /** Data files read, of the table's (fewer when --where names only partition columns). */
  filesRead: number;
  tableFiles: number;
  /** JSON-safe rows: BIGINT and DECIMAL as text, timestamps as ISO text. */
  rows: Record<string, unknown>[];
  limit: number;
  durationMs: number;
  error?: ReportedError;
}

/** Rows of the job's table. Never throws: bad flags are a failed outcome with a ConfigError (exit 2). */
export async function showJob(
  job: JobConfig,
  ctx: RunContext,
  opts: ShowOptions,
): Promise<JobOutcome<ShowReport>> {
  const base: ShowReport = {
    job: job.name,
    table: job.target.uri,
    status: 'failed',
    tableVersion: null,
    columns: [],
    filesRead: 0,
    tableFiles: 0,
    rows: [],
    limit: opts.limit,
    durationMs: 0,
  };
  return timedOutcome(
    () => base,
    () =>
      withJobScope(job, ctx, `${job.name}-show`, async ({ table, session, spool }) => {
        if (opts.where !== undefined) {
          const problem = await expressionProblem(session, opts.where);
          if (problem !== null)
            throw new ConfigError(`--where ${JSON.stringify(opts.where)}: ${problem}`, {
              field: 'where',
            });
        }
        const snapshot = await table.snapshot();
        if (!snapshot) return { ...base, status: 'no-table' };
        const names = snapshot.schema.fields.map((f) => f.name);
        const columns = opts.columns ?? names;
        const unknown = columns.filter((c) => !names.includes(c));
        if (unknown.length > 0) {
          throw new ConfigError(
            `--columns: no column ${unknown.map((c) => JSON.stringify(c)).join(', ')} in ${table.uri} (columns: ${names.join(', ')})`,
            {
              field: 'columns',
            },
          );
        }
        const key = (job.target.key ?? []).filter((k) => names.includes(k));
        // Only the partitions --where can keep are read (downloaded, on S3).
        const files =
          opts.where === undefined
            ? null
            : await filesMatchingPartitions(session, snapshot, opts.where);
        const scanned = files === null ? snapshot : { ...snapshot, files };
        const rows = await tableRows(session, { storage: table.storage, spool }, scanned, {
          columns,
          ...(opts.where !== undefined ? { where: opts.where } : {}),
          orderBy: key,
          limit: opts.limit,
        });
        return {
          ...base,
          status: 'ok',
          tableVersion: snapshot.version,
          columns,
          filesRead: scanned.files.length,
          tableFiles: snapshot.files.length,
          rows,
        };
      }),
  );
}
