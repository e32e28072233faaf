/**
 * Whether one storage URI lies inside another (or they are the same), so a move target is never
 * a folder discovery lists or the table's own. Compared as written (both relative paths resolve
 * against the same config folder): `s3a://` is `s3://`, `file:///x` is `/x`, trailing slashes and
 * `.`/`..` segments do not count.
 */
import path from 'node:path';

export function urisOverlap(a: string, b: string): boolean {
  const x = normal(a);
  const y = normal(b);
  return x === y || x.startsWith(`${y}/`) || y.startsWith(`${x}/`);
}

function normal(uri: string): string {
  const s3 = /^s3a?:\/\/(.*)$/i.exec(uri);
  if (s3) return `s3://${path.posix.normalize(`/${s3[1]}`).replace(/\/+$/, '')}`;
  let p = uri;
  if (/^file:\/\//i.test(p)) p = decodeURIComponent(new URL(p).pathname);
  else if (/^file:/i.test(p)) p = p.slice('file:'.length);
  return `file:${path.posix.normalize(path.posix.isAbsolute(p) ? p : `/./${p}`).replace(/\/+$/, '')}`;
}
