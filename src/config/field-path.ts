/**
 * How config errors name a field: `jobs[0].source.uri`.
 */

/** `jobs[0].source.uri` from a path of keys and indexes (zod issues, the interpolation walk). */
export function fieldPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? String(part) : `.${String(part)}`;
  }
  return out || '(root)';
}
