/**
 * `${VAR}` and `${VAR:-default}` in the config's string values, from the environment.
 *
 * Only string scalars are expanded (keys, numbers and booleans are left alone), at any depth.
 * A `${` is never taken literally: a variable that is unset and has no default, or a `${` that
 * is not a well-formed reference, is a problem naming the field. `$${` writes a literal `${`.
 * `:-` takes the default when the variable is unset or empty, as in the shell; braces in a default
 * must balance (`${LAYOUT:-{yyyy}/{mm}/{dd}}`).
 */

/** Variables to expand from (normally `process.env`). */
export type Environment = Readonly<Record<string, string | undefined>>;

/** A problem found while expanding; `path` is the value's place in the config. */
export interface InterpolationProblem {
  path: PropertyKey[];
  message: string;
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Expand one string; problems carry no path. */
export function expandString(
  text: string,
  env: Environment,
): { value: string; problems: string[] } {
  let value = '';
  const problems: string[] = [];
  let i = 0;
  while (i < text.length) {
    const at = text.indexOf('$', i);
    if (at < 0) break;
    value += text.slice(i, at);
    if (text.startsWith('$${', at)) {
      value += '${';
      i = at + 3;
      continue;
    }
    if (text[at + 1] !== '{') {
      value += '$';
      i = at + 1;
      continue;
    }
    const close = closingBrace(text, at + 2);
    const body = close < 0 ? null : text.slice(at + 2, close);
    const ref = body === null ? null : parseReference(body);
    if (ref === null) {
      const shown = close < 0 ? text.slice(at) : text.slice(at, close + 1);
      problems.push(
        `${JSON.stringify(shown)} is not a variable reference: write \${NAME} or \${NAME:-default} (or $\${ for a literal \${)`,
      );
      value += shown;
      i = close < 0 ? text.length : close + 1;
      continue;
    }
    const set = env[ref.name];
    if (ref.fallback !== undefined) value += set === undefined || set === '' ? ref.fallback : set;
    else if (set !== undefined) value += set;
    else {
      problems.push(
        `environment variable ${ref.name} is not set (write \${${ref.name}:-default} to give a default)`,
      );
      value += text.slice(at, close + 1);
    }
    i = close + 1;
  }
  return { value: value + text.slice(i), problems };
}

/** Index of the `}` that closes a `${` whose body starts at `from`; braces nest (`${L:-{yyyy}/{mm}}`). */
function closingBrace(text: string, from: number): number {
  let depth = 1;
  for (let i = from; i < text.length; i++) {
    if (text[i] === '{') depth++;
    else if (text[i] === '}' && --depth === 0) return i;
  }
  return -1;
}

function parseReference(body: string): { name: string; fallback?: string } | null {
  const sep = body.indexOf(':-');
  const name = sep < 0 ? body : body.slice(0, sep);
  if (!NAME.test(name)) return null;
  return sep < 0 ? { name } : { name, fallback: body.slice(sep + 2) };
}

/** Expand every string scalar of a parsed YAML document (a new tree; the input is not changed). */
export function interpolate(
  value: unknown,
  env: Environment,
): { value: unknown; problems: InterpolationProblem[] } {
  const problems: InterpolationProblem[] = [];
  const walk = (v: unknown, path: PropertyKey[]): unknown => {
    if (typeof v === 'string') {
      const r = expandString(v, env);
      for (const message of r.problems) problems.push({ path, message });
      return r.value;
    }
    if (Array.isArray(v)) return v.map((item, i) => walk(item, [...path, i]));
    if (v !== null && typeof v === 'object') {
      return Object.fromEntries(
        Object.entries(v).map(([k, item]) => [k, walk(item, [...path, k])]),
      );
    }
    return v;
  };
  return { value: walk(value, []), problems };
}
