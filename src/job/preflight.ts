/**
 * Pre-flight checks: what a job needs of its source and target, checked before anything loads, so
 * a wrong setup fails at once and loudly, saying what was expected and what was found.
 *
 *   source      exists: a local folder that is missing, or is a file, is a config error (exit 2);
 *               by partition, the layout fits its folders (discovery's survey, ../discovery/survey.ts)
 *   target      can be written: a probe object under `_tidemark/` is written and deleted, so a
 *               read-only target fails now with the OS's reason, not after loading
 *   commits     the target honours conditional writes, unless `singleWriter`         (validate)
 *   deleteWhen  parses as one SQL expression and names columns the table has
 *   settings    key and orderBy are columns of the existing table; columnMapping, partitionBy and
 *               changeDataFeed fit it (./table-settings.ts, which a run and a backfill call with
 *               the deleteWhen check once they read the table)
 *
 * `run`, `backfill` and `reset` run the cheap ones at the start of each job (`preflightJob`; a run
 * leaves the layout to its own discovery, see `sourceProblem`); `tidemark validate` runs them all
 * (./validate.ts) and reports every problem at once.
 *
 * An empty S3 prefix is not an error: S3 has no folders, so a landing zone that exists but has
 * received nothing yet is an empty prefix, exactly like a wrong one. A run logs a warning and
 * `validate` reports it as a warning, with the nearest existing prefix when one is close.
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { closest } from '../config/suggest.js';
import {
  describeMismatch,
  surveySource,
  type DiscoveryPlan,
  type LayoutMismatch,
  type SourceSurvey,
} from '../discovery/index.js';
import { resolveDiscovery } from '../discovery/config.js';
import type { DuckSession } from '../engine/duckdb.js';
import { columnRefs } from '../engine/expression.js';
import { checkDeleteExpression } from '../engine/merge/validate.js';
import {
  ConfigError,
  isTransient,
  StorageError,
  TidemarkError,
  type ErrorKind,
} from '../errors.js';
import { PROBE_PREFIX } from '../storage/probe.js';
import type { RootKind, Storage } from '../storage/storage.js';
import { describeUri, openStorage } from '../storage/uri.js';
import { discoveryConfigOf } from './open.js';
import type { JobScope } from './scope.js';

/** Which check found a problem. */
export type Check = 'config' | 'discovery' | 'source' | 'target' | 'commits' | 'deleteWhen';

/** One problem (or warning) found by a check. */
export interface Problem {
  check: Check;
  /** The config field it concerns (`jobs[0].source.uri`), where one does. */
  field?: string;
  message: string;
  /** usage: the config must change (exit 2); transient: the store did not answer (exit 4); else exit 1. */
  kind: ErrorKind;
}

/** Which pre-flight checks a command runs at the start of a job. */
export interface PreflightOptions {
  /** Survey the source's folders against the layout (a few LISTs); a run's discovery does that itself. */
  survey: boolean;
  /** Write and delete a probe object in the target; off for dry runs, which change nothing. */
  probeTarget: boolean;
}

/**
 * The start of a job: its source exists (and, with `survey`, fits the layout), its target can be
 * written and takes commits (put-if-absent, unless `singleWriter`). Throws the first problem:
 * ConfigError for the source, StorageError or ConditionalWriteUnsupportedError for the target.
 */
export async function preflightJob(scope: JobScope, opts: PreflightOptions): Promise<void> {
  const { job, source, table, ctx } = scope;
  const signal = ctx.signal;
  if (opts.survey) {
    const settings = resolveDiscovery(discoveryConfigOf(job));
    const layout = settings.mode === 'partition' ? settings.layout : null;
    const survey = await surveySource(source, layout, {
      selects: settings.selects,
      ...(signal ? { signal } : {}),
    });
    const problem = await sourceProblem(source, survey, job.name);
    if (problem) throw problem;
  } else {
    const root = (await source.inspectRoot?.()) ?? 'unknown';
    if (root === 'missing' || root === 'file') throw await rootError(source.uri, root, job.name);
  }
  if (opts.probeTarget) {
    await probeWritable(table.storage, job.name);
    await table.checkCommitsSafe();
  }
}

/**
 * After a run's discovery: a plan that found nothing because the source is missing or the layout
 * fits none of its folders is an error, not "nothing new" (a scheduler would read exit 0 as
 * success for weeks). An empty source is only logged.
 */
export async function checkPlannedSource(scope: JobScope, plan: DiscoveryPlan): Promise<void> {
  if (!plan.survey) return;
  const problem = await sourceProblem(scope.source, plan.survey, scope.job.name);
  if (problem) throw problem;
  if (plan.survey.empty) {
    scope.ctx.logger.warn(
      { job: scope.job.name, source: scope.source.uri },
      'the source holds nothing yet: a new landing zone, or is source.uri wrong?',
    );
  }
}

/** The ConfigError a survey calls for: the root is missing or a file, or the layout fits nothing; null when fine. */
export async function sourceProblem(
  source: Storage,
  survey: SourceSurvey,
  job: string,
): Promise<ConfigError | null> {
  if (survey.root === 'missing' || survey.root === 'file')
    return rootError(source.uri, survey.root, job);
  return survey.mismatch ? mismatchError(source.uri, survey.mismatch, job) : null;
}

/** A source root that is not a folder, naming what was found, and a folder next to it with a close name. */
async function rootError(
  uri: string,
  root: Exclude<RootKind, 'folder'>,
  job: string,
): Promise<ConfigError> {
  const where = localPathOf(uri);
  const found = root === 'file' ? `a file at ${where}` : `no such folder ${where}`;
  const near = root === 'missing' ? await nearbyName(uri) : null;
  return new ConfigError(
    `[preflight] job ${job}: source ${uri} ${root === 'file' ? 'is not a folder' : 'does not exist'}: ` +
      `expected a folder of landed files, found ${found}${near ? ` (did you mean ${near}?)` : ''}`,
    { field: 'source.uri', uri, found: root === 'file' ? 'file' : 'nothing' },
  );
}

/** The layout fits none of the source's folders (see describeMismatch). */
function mismatchError(uri: string, m: LayoutMismatch, job: string): ConfigError {
  return new ConfigError(`[preflight] job ${job}: source ${uri}: ${describeMismatch(m)}`, {
    field: 'source.discover.layout',
    uri,
    layout: m.layout,
    found: [...m.folders, ...m.files],
  });
}

/**
 * Write and delete a small object under `_tidemark/` (Delta readers skip `_` folders): a target
 * that cannot be written fails before anything is loaded, with the store's own reason.
 */
export async function probeWritable(storage: Storage, job: string): Promise<void> {
  const key = `${PROBE_PREFIX}write-probe-${randomUUID()}`;
  try {
    await storage.write(key, 'tidemark write probe');
  } catch (err) {
    // A store that does not answer is unavailable, not read-only: its own error says so (exit 4).
    if (isTransient(err)) throw err;
    const inner = err instanceof Error ? err.message : String(err);
    throw new StorageError(
      `[preflight] job ${job}: target ${storage.uri} is not writable: ${inner}`,
      {
        context: { ...(err instanceof TidemarkError ? err.context : {}), uri: storage.uri },
        cause: err,
      },
    );
  }
  // A leftover probe object is harmless; a failed cleanup must not fail the job.
  await storage.delete([key]).catch(() => undefined);
}

/**
 * Problems of a `deleteWhen` condition: it must parse as one SQL expression (DuckDB's parser), and,
 * when the table's columns are known, name only columns it has (with "did you mean").
 */
export async function deleteWhenProblems(
  session: DuckSession,
  expr: string,
  columns: readonly string[] | null,
  field: string,
): Promise<Problem[]> {
  try {
    await checkDeleteExpression(session, expr);
  } catch (err) {
    return [problemOf('deleteWhen', field, err, 'usage')];
  }
  return columns === null ? [] : deleteWhenColumnProblems(session, expr, columns, field);
}

/** The columns a `deleteWhen` that parses names and the table lacks, each a problem naming the table's columns. */
export async function deleteWhenColumnProblems(
  session: DuckSession,
  expr: string,
  columns: readonly string[],
  field: string,
): Promise<Problem[]> {
  return unknownColumns(await columnRefs(session, expr), columns).map(({ name, guess }) => ({
    check: 'deleteWhen' as const,
    field,
    message: `deleteWhen ${JSON.stringify(expr)} names column ${JSON.stringify(name)}, which the target table does not have${guess ? `; did you mean ${guess}?` : ''} (its columns: ${columns.join(', ')})`,
    kind: 'usage' as const,
  }));
}

/**
 * The column references of an expression that name none of `columns` (case-insensitive, as in
 * DuckDB), each with the closest column (pure). A qualified reference (`t.x`, `s.field`) counts
 * as known when any of its parts is a column.
 */
export function unknownColumns(
  refs: readonly (readonly string[])[],
  columns: readonly string[],
): Array<{ name: string; guess: string | null }> {
  const known = new Set(columns.map((c) => c.toLowerCase()));
  const seen = new Set<string>();
  const out: Array<{ name: string; guess: string | null }> = [];
  for (const parts of refs) {
    const name = parts.join('.');
    if (parts.some((p) => known.has(p.toLowerCase())) || seen.has(name)) continue;
    seen.add(name);
    out.push({ name, guess: closest(parts.at(-1) ?? name, columns) });
  }
  return out;
}

/** A problem from an error: its message, and its kind unless the check knows better (`kind`). */
export function problemOf(
  check: Check,
  field: string | undefined,
  err: unknown,
  kind?: ErrorKind,
): Problem {
  const message = err instanceof Error ? err.message : String(err);
  return {
    check,
    ...(field ? { field } : {}),
    message,
    kind: kind ?? (err instanceof TidemarkError ? err.kind : 'terminal'),
  };
}

/**
 * A sibling folder (or S3 prefix) whose name is close to the missing or empty one's
 * (`/data/landing/ordres` → `/data/landing/orders`), or null. One listing of the parent; errors
 * are swallowed: this only decorates a message. `open` opens the parent (S3 settings included).
 */
export async function nearbyName(
  uri: string,
  open: (uri: string) => Storage = openStorage,
): Promise<string | null> {
  try {
    const loc = describeUri(uri);
    const own = (loc.kind === 'file' ? loc.path : loc.prefix).replace(/\/+$/, '');
    const name = own.slice(own.lastIndexOf('/') + 1);
    if (name === '') return null;
    const parentUri =
      loc.kind === 'file'
        ? path.dirname(own)
        : `s3://${loc.bucket}/${own.slice(0, own.length - name.length)}`;
    for await (const page of open(parentUri).list({ delimiter: '/' })) {
      const guess = closest(
        name,
        page.commonPrefixes.map((p) => p.slice(0, -1)),
      );
      if (!guess) return null;
      return loc.kind === 'file' ? path.join(path.dirname(own), guess) : `${parentUri}${guess}/`;
    }
    return null;
  } catch {
    return null;
  }
}

function localPathOf(uri: string): string {
  try {
    const loc = describeUri(uri);
    return loc.kind === 'file' ? loc.path.replace(/(.)\/+$/, '$1') : uri;
  } catch {
    return uri;
  }
}
