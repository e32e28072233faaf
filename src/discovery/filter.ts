/**
 * `source.include` / `source.exclude`: which listed keys a job considers at all. Patterns are
 * globs matched against the key relative to the source root (`2026/11/30/orders.csv`); a
 * pattern without `/` matches the file name at any depth, as in .gitignore (`*.csv`).
 *
 * A key is selected when it matches some include pattern (or there are none) and no exclude
 * pattern. Files left out are reported in the plan as `excluded`, never as errors.
 */
import picomatch from 'picomatch/posix.js';
import { ConfigError } from '../errors.js';

/** Glob lists of a job's source. */
export interface KeyFilterConfig {
  /** Only keys matching one of these are data; default: every key. */
  include?: readonly string[];
  /** Keys matching one of these are never data. */
  exclude?: readonly string[];
}

/** True when a key (relative to the source root) is selected by include/exclude. */
export type KeyFilter = (key: string) => boolean;

/** The filter of a job without include/exclude. */
export const SELECT_ALL: KeyFilter = () => true;

// `dot`: Spark's hidden files are refused earlier, by the not-data rule, not by a glob quirk.
// picomatch's own `basename` option also applies to patterns with a `/`, so that rule is ours.
const GLOB_OPTIONS = { dot: true } as const;

/** Why `pattern` cannot be used, or null when it can. Shared with config validation. */
export function globProblem(pattern: string): string | null {
  if (pattern.trim() === '') return 'is empty';
  // Keys have no leading `/` or `./`: such a pattern would silently match nothing.
  if (pattern.startsWith('/') || pattern.startsWith('./')) {
    return `${JSON.stringify(pattern)} never matches: patterns are relative to source.uri, without a leading / or ./`;
  }
  try {
    picomatch.makeRe(pattern, GLOB_OPTIONS);
    return null;
  } catch (err) {
    return `${JSON.stringify(pattern)} is not a valid glob: ${(err as Error).message}`;
  }
}

/** Compile include/exclude; throws ConfigError naming the first bad pattern's field. */
export function compileKeyFilter(config: KeyFilterConfig): KeyFilter {
  const include = compile(config.include ?? [], 'include');
  const exclude = compile(config.exclude ?? [], 'exclude');
  if (include.length === 0 && exclude.length === 0) return SELECT_ALL;
  return (key) =>
    (include.length === 0 || include.some((m) => m(key))) && !exclude.some((m) => m(key));
}

function compile(
  patterns: readonly string[],
  list: 'include' | 'exclude',
): Array<(key: string) => boolean> {
  return patterns.map((pattern, i) => {
    const problem = globProblem(pattern);
    if (problem)
      throw new ConfigError(`[discovery] source.${list}[${i}] ${problem}`, {
        field: `source.${list}[${i}]`,
      });
    const matches = picomatch(pattern, GLOB_OPTIONS);
    return pattern.includes('/')
      ? matches
      : (key: string) => matches(key.slice(key.lastIndexOf('/') + 1));
  });
}
