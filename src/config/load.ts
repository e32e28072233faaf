/**
 * Read and validate the YAML config; report every problem at once, each naming its field.
 *
 *   text --YAML--> document --${VAR}--> values --zod--> config --relative paths--> absolute URIs
 *
 * Interpolation and schema problems are gathered into one ConfigError; unknown fields get a
 * "did you mean" from the JSON schema (./json-schema.ts).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseDocument } from 'yaml';
import type { z } from 'zod';
import { ConfigError } from '../errors.js';
import { fieldPath } from './field-path.js';
import { interpolate, type Environment } from './interpolate.js';
import { fieldsAt } from './json-schema.js';
import { moveTargetOverlaps } from './uri-overlap.js';
import { configSchema, type TidemarkConfig } from './schema.js';
import { closest } from './suggest.js';

/** Keys that would put credentials in the file; they must come from the AWS default chain. */
const SECRET_KEYS =
  /^(accessKeyId|secretAccessKey|sessionToken|aws_access_key_id|aws_secret_access_key|password|secret)$/i;

/** Options of `parseConfig` and `validateConfig`. */
export interface ParseOptions {
  /** Folder that relative `source.uri` / `target.uri` paths are resolved against; default: left relative. */
  baseDir?: string;
  /** Variables for `${VAR}`; default `process.env`. */
  env?: Environment;
}

/** A problem's line: the field path and what is wrong with it. */
interface Problem {
  field: string;
  message: string;
}

function describeIssue(issue: z.core.$ZodIssue, raw: unknown): Problem[] {
  const field = fieldPath(issue.path);
  if (issue.code === 'unrecognized_keys') {
    const known = fieldsAt(issue.path, raw);
    return issue.keys.map((k) => {
      const where = field === '(root)' ? k : `${field}.${k}`;
      if (SECRET_KEYS.test(k)) {
        return {
          field: where,
          message:
            'credentials are not allowed in the config file; use the AWS default chain (environment, profile, SSO, instance role)',
        };
      }
      if (k === 'singleWriter' && known.includes('endpoint')) {
        return {
          field: where,
          message:
            'unknown field (singleWriter belongs to storage or target.storage: a source is only read)',
        };
      }
      const guess = closest(k, known);
      return {
        field: where,
        message: guess ? `unknown field; did you mean ${guess}?` : 'unknown field',
      };
    });
  }
  const got = valueAt(raw, issue.path);
  // zod's own words for a field left out are "Invalid input: expected object, received undefined".
  if (issue.code === 'invalid_type' && got === undefined)
    return [{ field, message: 'is required' }];
  // A mistyped enum value or discriminator (`by: partiton`): zod lists the options, we pick one.
  const options =
    issue.code === 'invalid_value'
      ? issue.values
      : issue.code === 'invalid_union'
        ? (issue as { options?: unknown[] }).options
        : undefined;
  const guess = typeof got === 'string' && options ? closest(got, options.map(String)) : null;
  if (guess) return [{ field, message: `${issue.message}; did you mean ${guess}?` }];
  return [{ field, message: issue.message }];
}

function valueAt(raw: unknown, at: readonly PropertyKey[]): unknown {
  let v = raw;
  for (const part of at)
    v = v !== null && typeof v === 'object' ? (v as Record<PropertyKey, unknown>)[part] : undefined;
  return v;
}

function fail(source: string, problems: readonly Problem[]): never {
  const lines = problems.map((p) =>
    p.field === '(root)' ? p.message : `${p.field}: ${p.message}`,
  );
  const text =
    lines.length === 1 ? `: ${lines[0]}` : ` (${lines.length} problems):\n  ${lines.join('\n  ')}`;
  throw new ConfigError(`invalid ${source}${text}`, {
    key: source,
    field: problems[0]?.field ?? '(root)',
    problems: lines,
  });
}

/** What the top level of the document is, for the message when it is not a mapping. */
function kindOf(value: unknown): string {
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'string')
    return `the text ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  return `the ${typeof value} ${String(value)}`;
}

/**
 * Validate an already-parsed config document: expand `${VAR}`, check the schema, resolve
 * relative paths (with `opts.baseDir`). Every problem is in one ConfigError
 * (`context.problems`, `context.field` the first one's field).
 */
export function validateConfig(
  raw: unknown,
  source = 'config',
  opts: ParseOptions = {},
): TidemarkConfig {
  if (raw === null || raw === undefined) {
    fail(source, [
      { field: '(root)', message: 'the config file is empty; it needs a `jobs:` list' },
    ]);
  }
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    fail(source, [
      {
        field: '(root)',
        message: `expected a mapping with a \`jobs:\` list (and optionally \`storage:\`), got ${kindOf(raw)}`,
      },
    ]);
  }
  const expanded = interpolate(raw, opts.env ?? process.env);
  const problems: Problem[] = expanded.problems.map((p) => ({
    field: fieldPath(p.path),
    message: p.message,
  }));
  const result = configSchema.safeParse(expanded.value);
  if (!result.success) {
    // A value with an unexpanded `${` fails its own type too; the interpolation problem says why.
    const named = new Set(problems.map((p) => p.field));
    problems.push(
      ...result.error.issues
        .flatMap((issue) => describeIssue(issue, expanded.value))
        .filter((p) => !named.has(p.field)),
    );
  }
  if (problems.length > 0 || !result.success) fail(source, problems);
  if (opts.baseDir === undefined) return result.data;
  const resolved = resolvePaths(result.data, opts.baseDir);
  // The schema compared the URIs as written; resolved, a relative move target may overlap an absolute source.
  const overlaps = resolved.jobs.flatMap((job, i) =>
    moveTargetOverlaps(job).map((message) => ({
      field: fieldPath(['jobs', i, 'source', 'afterLoad', 'move']),
      message,
    })),
  );
  if (overlaps.length > 0) fail(source, overlaps);
  return resolved;
}

/** Parse YAML text (errors carry line numbers) and validate it. */
export function parseConfig(
  text: string,
  source = 'config',
  opts: ParseOptions = {},
): TidemarkConfig {
  const doc = parseDocument(text, { prettyErrors: true });
  if (doc.errors.length > 0) {
    throw new ConfigError(
      `invalid YAML in ${source}: ${doc.errors.map((e) => e.message).join('; ')}`,
      { key: source },
    );
  }
  return validateConfig(doc.toJS(), source, opts);
}

/**
 * Load `path` (default ./tidemark.yaml). Relative source and target paths in it are relative to
 * the file's folder, not to the current one.
 */
export async function loadConfig(
  file = 'tidemark.yaml',
  opts: Omit<ParseOptions, 'baseDir'> = {},
): Promise<TidemarkConfig> {
  const absolute = path.resolve(file);
  let text: string;
  try {
    text = await readFile(absolute, 'utf8');
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT'
        ? 'no such file'
        : code === 'EISDIR'
          ? 'it is a folder'
          : code === 'EACCES'
            ? 'permission denied'
            : String(code ?? cause);
    throw new ConfigError(
      `cannot read config file ${absolute}: ${why}; pass the config file with -c FILE (--config FILE)`,
      { key: absolute },
      cause,
    );
  }
  return parseConfig(text, file, { ...opts, baseDir: path.dirname(absolute) });
}

/** `./landing`, `landing`, `file:landing` against `baseDir`; absolute paths and URIs stay as they are. */
export function resolveUri(uri: string, baseDir: string): string {
  if (/^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//.test(uri)) return uri; // s3://, file:///abs, …
  if (/^file:/i.test(uri)) {
    // `file:landing` / `file:./landing` (no `//`): a relative file URL, percent escapes and all.
    return new URL(
      uri.slice('file:'.length),
      pathToFileURL(baseDir.endsWith(path.sep) ? baseDir : baseDir + path.sep),
    ).href;
  }
  if (/^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(uri) && !path.isAbsolute(uri)) return uri; // `s3:b/x`: a malformed URI, reported when opened
  return path.resolve(baseDir, uri);
}

function resolvePaths(config: TidemarkConfig, baseDir: string): TidemarkConfig {
  return {
    ...config,
    jobs: config.jobs.map((job) => ({
      ...job,
      source: {
        ...job.source,
        uri: resolveUri(job.source.uri, baseDir),
        ...(job.source.afterLoad?.move !== undefined
          ? {
              afterLoad: {
                ...job.source.afterLoad,
                move: resolveUri(job.source.afterLoad.move, baseDir),
              },
            }
          : {}),
      },
      target: { ...job.target, uri: resolveUri(job.target.uri, baseDir) },
    })),
  };
}
