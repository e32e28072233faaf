/**
 * `tidemark validate`: every problem of a config file and of each job's source and target, at once.
 *
 *   the file ──► config problems (loadConfig gathers them all: unknown fields with "did you mean",
 *                layouts, time zones, start values, unset ${VAR}s), each given to its job
 *            ──► per job, the parts of its config that are valid on their own (a job with a bad
 *                time zone still has a source to look at and a target to write), checked by
 *                ./preflight.ts and ./table-settings.ts: source, target (key and orderBy columns,
 *                creation settings), commits, deleteWhen; and the settings against those the
 *                job's state recorded (./config-change.ts: what a run would refuse, what changed)
 *
 * Nothing here throws for a problem: each becomes a Problem in its job's report, so one run lists
 * them all. Only an unknown --job is thrown (a usage error of the command itself).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseDocument } from 'yaml';
import type { z } from 'zod';
import { loadConfig, resolveUri } from '../config/load.js';
import { interpolate } from '../config/interpolate.js';
import {
  configSchema,
  type JobConfig,
  type StorageConfig,
  type TidemarkConfig,
} from '../config/schema.js';
import { sourceStorageConfig, targetStorageConfig } from '../config/storage.js';
import { resolveDiscovery, type NotificationSettings } from '../discovery/config.js';
import { stateMismatch, surveySource } from '../discovery/index.js';
import { assertWritable } from '../delta/features.js';
import { DuckSession } from '../engine/duckdb.js';
import { openTable } from '../engine/table.js';
import { ConfigError, TidemarkError } from '../errors.js';
import { Spool } from '../spool/spool.js';
import { assertSafeCommits } from '../storage/probe.js';
import { queueRegion, SqsQueue } from '../storage/sqs.js';
import { RetryBudget } from '../storage/s3.js';
import type { Storage } from '../storage/storage.js';
import { describeUri, openStorage } from '../storage/uri.js';
import type { Snapshot } from '../delta/snapshot.js';
import { backfillTombstones } from './backfill/state.js';
import { findConfigChanges } from './config-change.js';
import type { RunContext } from './context.js';
import { renamedJobProblem } from './renamed.js';
import { readJobState } from './state.js';
import {
  declaredTypeProblems,
  missingColumnProblems,
  tableSettingFindings,
  type CreationSettings,
  type MatchColumns,
} from './table-settings.js';
import { discoveryConfigOf, s3Options } from './open.js';
import { sampleFirstBatch } from './sample-types.js';
import {
  deleteWhenProblems,
  nearbyName,
  probeWritable,
  problemOf,
  sourceProblem,
  type Check,
  type Problem,
} from './preflight.js';

/** What validate reports per job; `job: null` holds problems of the file as a whole (top-level `storage`, YAML). */
export interface ValidateReport {
  job: string | null;
  status: 'ok' | 'problems';
  problems: Problem[];
  /** Worth knowing, not wrong: an empty source, a check that could not run because of a problem above. */
  warnings: Problem[];
}

/** What a validation reads: the config file and the jobs to check (all when none are named). */
export interface ValidateOptions {
  file: string;
  jobs?: readonly string[];
}

/** The parts of one job's config that are valid on their own. */
interface JobParts {
  index: number;
  name: string;
  source: {
    uri: string;
    storage: StorageConfig | null;
    discover: JobConfig['source']['discover'] | null;
    include?: string[];
    exclude?: string[];
  } | null;
  target: {
    uri: string;
    storage: StorageConfig | null;
    creation: CreationSettings;
    match: MatchColumns;
  } | null;
  deleteWhen: string | null;
  /** The whole job when the config is valid: its settings are compared with those its state recorded. */
  config: JobConfig | null;
  /** `source.columns`: declared types the table must have. */
  declared: Record<string, string>;
}

/** A config problem as loadConfig words it, with its field path. */
interface ConfigProblem {
  field: string | null;
  message: string;
}

/** Validate the config file and every selected job's source and target; see the module comment. */
export async function validateJobs(
  opts: ValidateOptions,
  ctx: Omit<RunContext, 'storage'>,
): Promise<ValidateReport[]> {
  const read = await readConfig(opts.file);
  if ('fatal' in read)
    return [report(null, [{ check: 'config', message: read.fatal.message, kind: 'usage' }])];
  const parts = selected(read.parts, opts.jobs);
  const reports: ValidateReport[] = [];
  const general = read.problems.filter((p) => jobIndexOf(p.field) === null);
  if (general.length > 0)
    reports.push(
      report(
        null,
        general.map((p) => configProblem(p)),
      ),
    );
  const spool = await Spool.create('validate', ctx.spoolRoot);
  let session: DuckSession | null = null;
  try {
    session = await DuckSession.open({ tempDirectory: path.join(spool.dir, 'duckdb') });
    for (const job of parts) {
      const own = read.problems
        .filter((p) => jobIndexOf(p.field) === job.index)
        .map((p) => configProblem(p));
      const checked = await checkJob(job, { session, spool, ctx, budget: new RetryBudget() });
      reports.push(report(job.name, [...own, ...checked.problems], checked.warnings));
    }
  } finally {
    session?.close();
    await spool.close();
  }
  return reports;
}

function report(job: string | null, problems: Problem[], warnings: Problem[] = []): ValidateReport {
  return { job, status: problems.length === 0 ? 'ok' : 'problems', problems, warnings };
}

// --- the config file -----------------------------------------------------------------------

type ReadConfig = { parts: JobParts[]; problems: ConfigProblem[] } | { fatal: ConfigError };

/**
 * The config's jobs as parts, and its problems. A valid config gives whole jobs; an invalid one
 * is read again as a document to salvage what each job has that is valid.
 */
async function readConfig(file: string): Promise<ReadConfig> {
  let config: TidemarkConfig;
  try {
    config = await loadConfig(file);
  } catch (err) {
    const lines = err instanceof ConfigError ? err.context['problems'] : undefined;
    if (!(err instanceof ConfigError)) throw err;
    if (!Array.isArray(lines)) return { fatal: err }; // unreadable file or YAML syntax: nothing to salvage
    const problems = lines.map((l) => splitProblem(String(l)));
    return { parts: await salvage(file, problems), problems };
  }
  return {
    parts: config.jobs.map((job, index) => partsOf(job, index, config.storage)),
    problems: [],
  };
}

/** `jobs[0].tagret: unknown field; did you mean target?` → field and message (loadConfig's line format). */
function splitProblem(line: string): ConfigProblem {
  const m = /^([^\s:]+): ([\s\S]*)$/.exec(line);
  return m ? { field: m[1]!, message: m[2]! } : { field: null, message: line };
}

function jobIndexOf(field: string | null): number | null {
  const m = field === null ? null : /^jobs\[(\d+)\]/.exec(field);
  return m ? Number(m[1]) : null;
}

function configProblem(p: ConfigProblem): Problem {
  const check: Check =
    p.field !== null && /\.source\.discover(\.|$)/.test(p.field) ? 'discovery' : 'config';
  return {
    check,
    ...(p.field === null ? {} : { field: p.field }),
    message: p.field === null ? p.message : `${p.field}: ${p.message}`,
    kind: 'usage',
  };
}

/** Parts of a valid job. */
function partsOf(job: JobConfig, index: number, global: StorageConfig): JobParts {
  const { include, exclude } = job.source;
  return {
    index,
    name: job.name,
    source: {
      uri: job.source.uri,
      storage: sourceStorageConfig(global, job),
      discover: job.source.discover,
      ...(include ? { include } : {}),
      ...(exclude ? { exclude } : {}),
    },
    target: {
      uri: job.target.uri,
      storage: targetStorageConfig(global, job),
      creation: job.target,
      match: job.target,
    },
    deleteWhen: job.target.deleteWhen ?? null,
    config: job,
    declared: job.source.columns ?? {},
  };
}

const jobShape = configSchema.shape.jobs.element.shape;
const sourceShape = jobShape.source.shape;
const targetShape = jobShape.target.shape;

/**
 * Parts of each job of an invalid config: every field parsed on its own with the config's own
 * schema, and left out when it (or anything below it) has a problem. `storage: null` means the
 * storage settings are invalid (S3 checks cannot run; local paths need none).
 */
async function salvage(file: string, problems: readonly ConfigProblem[]): Promise<JobParts[]> {
  const absolute = path.resolve(file);
  const doc = parseDocument(await readFile(absolute, 'utf8')).toJS() as unknown;
  const raw = record(interpolate(doc, process.env).value);
  const baseDir = path.dirname(absolute);
  const bad = (field: string) =>
    problems.some(
      (p) =>
        p.field !== null &&
        (p.field === field || p.field.startsWith(`${field}.`) || p.field.startsWith(`${field}[`)),
    );
  const valid = <S extends z.ZodType>(
    schema: S,
    value: unknown,
    field: string,
  ): { value: z.output<S> } | null => {
    if (bad(field)) return null;
    const parsed = schema.safeParse(value);
    return parsed.success ? { value: parsed.data } : null;
  };
  const global = valid(configSchema.shape.storage, raw['storage'], 'storage')?.value ?? null;
  const jobs = Array.isArray(raw['jobs']) ? (raw['jobs'] as unknown[]) : [];
  return jobs.map((rawJob, index) => {
    const at = `jobs[${index}]`;
    const job = record(rawJob);
    const src = record(job['source']);
    const tgt = record(job['target']);
    const storageOf = (
      own: { value: Partial<StorageConfig> | undefined } | null,
    ): StorageConfig | null =>
      global === null || own === null ? null : { ...global, ...definedOnly(own.value ?? {}) };
    const sourceUri = valid(sourceShape.uri, src['uri'], `${at}.source.uri`);
    const targetUri = valid(targetShape.uri, tgt['uri'], `${at}.target.uri`);
    const include = valid(sourceShape.include, src['include'], `${at}.source.include`)?.value;
    const exclude = valid(sourceShape.exclude, src['exclude'], `${at}.source.exclude`)?.value;
    return {
      index,
      name: valid(jobShape.name, job['name'], `${at}.name`)?.value ?? at,
      source: sourceUri && {
        uri: resolveUri(sourceUri.value, baseDir),
        storage: storageOf(valid(sourceShape.storage, src['storage'], `${at}.source.storage`)),
        discover:
          valid(sourceShape.discover, src['discover'], `${at}.source.discover`)?.value ?? null,
        ...(include ? { include } : {}),
        ...(exclude ? { exclude } : {}),
      },
      target: targetUri && {
        uri: resolveUri(targetUri.value, baseDir),
        storage: storageOf(valid(targetShape.storage, tgt['storage'], `${at}.target.storage`)),
        creation: {
          columnMapping: valid(
            targetShape.columnMapping,
            tgt['columnMapping'],
            `${at}.target.columnMapping`,
          )?.value,
          partitionBy: valid(
            targetShape.partitionBy,
            tgt['partitionBy'],
            `${at}.target.partitionBy`,
          )?.value,
          changeDataFeed: valid(
            targetShape.changeDataFeed,
            tgt['changeDataFeed'],
            `${at}.target.changeDataFeed`,
          )?.value,
        },
        match: {
          mode: valid(targetShape.mode, tgt['mode'], `${at}.target.mode`)?.value,
          key: valid(targetShape.key, tgt['key'], `${at}.target.key`)?.value,
          orderBy: valid(targetShape.orderBy, tgt['orderBy'], `${at}.target.orderBy`)?.value,
        },
      },
      deleteWhen:
        valid(targetShape.deleteWhen, tgt['deleteWhen'], `${at}.target.deleteWhen`)?.value ?? null,
      config: null,
      declared: valid(sourceShape.columns, src['columns'], `${at}.source.columns`)?.value ?? {},
    };
  });
}

function selected(parts: JobParts[], names: readonly string[] | undefined): JobParts[] {
  if (!names || names.length === 0) return parts;
  return names.map((name) => {
    const job = parts.find((p) => p.name === name);
    if (!job)
      throw new ConfigError(
        `no job named ${JSON.stringify(name)} in the config (jobs: ${parts.map((p) => p.name).join(', ')})`,
        { field: 'job' },
      );
    return job;
  });
}

function record(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

// --- the checks ----------------------------------------------------------------------------

interface Resources {
  session: DuckSession;
  spool: Spool;
  ctx: Omit<RunContext, 'storage'>;
  /** Shared by the job's source and target, as in a run: a store that is down fails the checks fast. */
  budget: RetryBudget;
}

interface Found {
  problems: Problem[];
  warnings: Problem[];
  /** The target was read and holds no table yet: the first run creates it. */
  noTableYet?: boolean;
}

/** Every pre-flight check a job's valid parts allow. */
async function checkJob(job: JobParts, res: Resources): Promise<Found> {
  const found: Found = { problems: [], warnings: [] };
  const at = `jobs[${job.index}]`;
  if (job.source) await checkSource(job, job.source, res, found);
  let columns: string[] | null = null;
  if (job.target) columns = await checkTarget(job, job.target, res, found);
  if (job.deleteWhen !== null)
    found.problems.push(
      ...(await deleteWhenProblems(
        res.session,
        job.deleteWhen,
        columns,
        `${at}.target.deleteWhen`,
      )),
    );
  if (job.config && job.source && found.noTableYet && found.problems.length === 0)
    await checkFirstBatch(job.config, job.source, res, found, at);
  return found;
}

/**
 * Before the first run: read a sample of its first batch as the run would (./sample-types.ts), so
 * a key inferred as text or floating is a warning and an orderBy compared as text a problem now.
 */
async function checkFirstBatch(
  job: JobConfig,
  parts: NonNullable<JobParts['source']>,
  res: Resources,
  found: Found,
  at: string,
): Promise<void> {
  if (job.target.mode !== 'merge') return;
  try {
    const source = openWith(parts.uri, parts.storage, res);
    const sampled = await sampleFirstBatch(job, source, res.session, res.spool);
    if (!sampled) return;
    const of = `(read ${sampled.sampled} of the ${sampled.batchFiles} files the first run loads first)`;
    for (const w of sampled.warnings)
      found.warnings.push({
        check: 'source',
        field: `${at}.source.columns`,
        message: `the first run would warn: ${w} ${of}`,
        kind: 'usage',
      });
    const r = sampled.refusal;
    if (r) {
      const column = typeof r.context.column === 'string' ? r.context.column : null;
      const field =
        column !== null && column === job.target.orderBy
          ? `${at}.target.orderBy`
          : `${at}.source.uri`;
      // An orderBy compared as text is fixed in the config (source.columns): a usage problem, exit 2.
      const entry = {
        check: 'source' as const,
        field,
        message: `the first run would fail: ${r.message} ${of}`,
        kind: field.endsWith('.target.orderBy') ? ('usage' as const) : r.kind,
      };
      // A refusal naming a file: under onBadFile: quarantine the run sets that file aside instead.
      if (job.onBadFile === 'quarantine' && typeof r.context.key === 'string')
        found.warnings.push(entry);
      else found.problems.push(entry);
    }
  } catch (err) {
    found.warnings.push({
      check: 'source',
      field: `${at}.source.uri`,
      message: `the first batch's types were not checked: ${err instanceof Error ? err.message : String(err)}`,
      kind: 'terminal',
    });
  }
}

async function checkSource(
  job: JobParts,
  source: NonNullable<JobParts['source']>,
  res: Resources,
  found: Found,
): Promise<void> {
  const field = `jobs[${job.index}].source.uri`;
  const storage = open(source.uri, source.storage, res, found, { check: 'source', field });
  if (!storage) return;
  try {
    // discoveryConfigOf reads only source.discover, include and exclude: all of them salvaged.
    const partial = { source: { ...source, discover: source.discover } } as unknown as JobConfig;
    const settings = source.discover ? resolveDiscovery(discoveryConfigOf(partial)) : null;
    const layout = settings?.mode === 'partition' ? settings.layout : null;
    const survey = await surveySource(
      storage,
      layout,
      settings ? { selects: settings.selects } : {},
    );
    const problem = await sourceProblem(storage, survey, job.name);
    if (problem) {
      const onLayout = problem.context.field === 'source.discover.layout';
      found.problems.push(
        problemOf(
          'source',
          onLayout ? `jobs[${job.index}].source.discover.layout` : field,
          problem,
        ),
      );
    } else if (survey.empty) {
      const near = await nearbyName(storage.uri, (uri) => openWith(uri, source.storage, res));
      found.warnings.push({
        check: 'source',
        field,
        message: `source ${storage.uri} holds nothing yet: a new landing zone, or the wrong place${near ? ` (did you mean ${near}?)` : ''}`,
        kind: 'terminal',
      });
    }
    if (!source.discover)
      found.warnings.push(notChecked('source', field, 'the layout', 'source.discover'));
    if (settings?.mode === 'notifications')
      await checkQueue(settings, job.index, source.storage?.region, found);
  } catch (err) {
    found.problems.push(problemOf('source', field, err));
  }
}

/** The queue of notification discovery answers (GetQueueAttributes), and has a dead-letter queue for what tidemark cannot read. */
async function checkQueue(
  settings: NotificationSettings,
  index: number,
  storageRegion: string | undefined,
  found: Found,
): Promise<void> {
  const field = `jobs[${index}].source.discover.queue`;
  const queue = new SqsQueue({
    url: settings.queueUrl,
    region: settings.region ?? queueRegion(settings.queueUrl) ?? storageRegion ?? 'us-east-1',
    maxAttempts: 2,
  });
  try {
    const { redrive } = await queue.describe();
    if (!redrive) {
      found.warnings.push({
        check: 'source',
        field,
        message: `queue ${settings.queueUrl} has no redrive policy: a message tidemark cannot read stays on it and is received by every run; give it a dead-letter queue (examples/notifications)`,
        kind: 'usage',
      });
    }
  } catch (err) {
    found.problems.push(problemOf('source', field, err));
  } finally {
    queue.close();
  }
}

/** Writable, conditional writes, a readable table tidemark may write; the table's columns (null: no table yet). */
async function checkTarget(
  job: JobParts,
  target: NonNullable<JobParts['target']>,
  res: Resources,
  found: Found,
): Promise<string[] | null> {
  const at = `jobs[${job.index}]`;
  const storage = open(target.uri, target.storage, res, found, {
    check: 'target',
    field: `${at}.target.uri`,
  });
  if (!storage) return null;
  // Without valid storage settings only a local target is opened, where singleWriter does not matter.
  const { singleWriter } = target.storage ?? { singleWriter: false };
  try {
    await probeWritable(storage, job.name);
  } catch (err) {
    found.problems.push(problemOf('target', `${at}.target.uri`, err));
    return null;
  }
  // Local disk always honours put-if-absent (link(2)); the table does not ask it either.
  if (!storage.uri.startsWith('file:')) {
    try {
      await assertSafeCommits(storage, { singleWriter });
    } catch (err) {
      found.problems.push(problemOf('commits', `${at}.target.storage.singleWriter`, err));
    }
  }
  try {
    const snapshot = await openTable(
      storage,
      { session: res.session, spool: res.spool },
      { singleWriter },
    ).snapshot();
    if (!snapshot) {
      found.noTableYet = true;
      return null;
    }
    assertWritable(snapshot.protocol, snapshot.metadata, storage.uri);
    const settings = tableSettingFindings(target.creation, snapshot, `${at}.target`);
    const missing = missingColumnProblems(target.match, snapshot, `${at}.target`);
    found.problems.push(
      ...missing,
      ...settings.problems,
      ...declaredTypeProblems(job.declared, snapshot, `${at}.source`),
    );
    found.warnings.push(...settings.warnings);
    if (job.config && missing.length === 0)
      await checkConfigChanges(job.config, snapshot, storage, res, found, at);
    return snapshot.schema.fields.map((f) => f.name);
  } catch (err) {
    found.problems.push(problemOf('target', `${at}.target.uri`, err));
    return null;
  }
}

/**
 * The job's settings against those its state recorded (./config-change.ts): what a run would
 * refuse is a problem, every other change a warning saying what the run will do.
 */
async function checkConfigChanges(
  job: JobConfig,
  snapshot: Snapshot,
  storage: Storage,
  res: Resources,
  found: Found,
  at: string,
): Promise<void> {
  const renamed = renamedJobProblem(snapshot, job);
  if (renamed) found.problems.push(problemOf('target', `${at}.name`, renamed));
  const state = readJobState(snapshot, job.name);
  const mismatch = stateMismatch(discoveryConfigOf(job), state.discovery);
  if (mismatch)
    found.problems.push(
      problemOf(
        'discovery',
        `${at}.source.${String(mismatch.context.field ?? 'discover')}`,
        mismatch,
      ),
    );
  const findings = await findConfigChanges(
    job,
    state,
    snapshot,
    { session: res.session, storage, spool: res.spool },
    {
      tombstones: [
        { folder: job.name, state: state.tombstones },
        ...backfillTombstones(snapshot, job.name),
      ],
      accept: false,
    },
  );
  for (const r of findings.refusals)
    found.problems.push(problemOf('target', `${at}.${String(r.context.field ?? 'target')}`, r));
  for (const c of findings.changes) {
    if (mismatch && c.field === 'source.discover.by') continue;
    found.warnings.push({
      check: 'config',
      field: `${at}.${c.field}`,
      message: `${c.field} changed from ${c.from} to ${c.to}: ${c.effect}`,
      kind: 'usage',
    });
  }
}

/**
 * The storage at `uri`, or null when it cannot be opened (a malformed URI: a problem) or its S3
 * settings are invalid (a warning: the config problem above says why).
 */
function open(
  uri: string,
  storage: StorageConfig | null,
  res: Resources,
  found: Found,
  where: { check: Check; field: string },
): Storage | null {
  try {
    if (storage === null && describeUri(uri).kind === 's3') {
      found.warnings.push(notChecked(where.check, where.field, uri, 'the storage settings'));
      return null;
    }
    return openWith(uri, storage, res);
  } catch (err) {
    found.problems.push(
      problemOf(where.check, where.field, err, err instanceof TidemarkError ? err.kind : 'usage'),
    );
    return null;
  }
}

/** Opened as a run opens it (./open.ts): the same timeouts, attempts, and one retry budget per job. */
function openWith(uri: string, storage: StorageConfig | null, res: Resources): Storage {
  return (res.ctx.openStorage ?? openStorage)(uri, storage ? s3Options(storage, res.budget) : {});
}

function notChecked(check: Check, field: string, what: string, until: string): Problem {
  return { check, field, message: `${what} was not checked: fix ${until} first`, kind: 'terminal' };
}
