/**
 * Read and validate the YAML config; report every problem at once, each naming its field.
 */
import { readFile } from 'node:fs/promises';
import { parseDocument } from 'yaml';
import type { z } from 'zod';
import { ConfigError } from '../errors.js';
import { configSchema, type TidemarkConfig } from './schema.js';

/** Keys that would put credentials in the file; they must come from the AWS default chain. */
const SECRET_KEYS = /^(accessKeyId|secretAccessKey|sessionToken|aws_access_key_id|aws_secret_access_key|password|secret)$/i;

/** `jobs[0].source.uri` from a zod issue path. */
export function fieldPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? String(part) : `.${String(part)}`;
  }
  return out || '(root)';
}

function describeIssues(issues: readonly z.core.$ZodIssue[]): string[] {
  return issues.map((issue) => {
    const field = fieldPath(issue.path);
    if (issue.code === 'unrecognized_keys') {
      return issue.keys
        .map((k) => {
          const where = field === '(root)' ? k : `${field}.${k}`;
          return SECRET_KEYS.test(k)
            ? `${where}: credentials are not allowed in the config file; use the AWS default chain (environment, profile, SSO, instance role)`
            : `${where}: unknown field`;
        })
        .join('\n');
    }
    return `${field}: ${issue.message}`;
  });
}

/** Validate an already-parsed config object. */
export function validateConfig(raw: unknown, source = 'config'): TidemarkConfig {
  const result = configSchema.safeParse(raw);
  if (result.success) return result.data;
  const problems = describeIssues(result.error.issues);
  throw new ConfigError(`invalid ${source}:\n  ${problems.join('\n  ')}`, {
    key: source,
    field: fieldPath(result.error.issues[0]?.path ?? []),
    problems,
  });
}

/** Parse YAML text (errors carry line numbers) and validate it. */
export function parseConfig(text: string, source = 'config'): TidemarkConfig {
  const doc = parseDocument(text, { prettyErrors: true });
  if (doc.errors.length > 0) {
    throw new ConfigError(`invalid YAML in ${source}: ${doc.errors.map((e) => e.message).join('; ')}`, { key: source });
  }
  return validateConfig(doc.toJS(), source);
}

/** Load `path` (default ./tidemark.yaml). */
export async function loadConfig(path = 'tidemark.yaml'): Promise<TidemarkConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (cause) {
    throw new ConfigError(`cannot read config file ${path}: ${(cause as NodeJS.ErrnoException).code ?? cause}`, { key: path }, cause);
  }
  return parseConfig(text, path);
}
