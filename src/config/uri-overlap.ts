/**
 * The rule that `source.afterLoad.move` lies outside the job's source and table, in one place: a
 * moved file must leave what discovery lists (it would come back as a new file) and the table's
 * folder. The schema checks it as written, the loaded config once relative paths are resolved
 * against the config's folder (../config/load.ts), and cleanup before it moves anything.
 */
import path from 'node:path';

/** What the rule reads of a job. */
export interface MoveTargetJob {
  source: { uri: string; afterLoad?: { move?: string | undefined } | undefined };
  target: { uri: string };
}

/** Each way the job's move target breaks the rule (empty: none), as the config's problem message. */
export function moveTargetOverlaps(job: MoveTargetJob): string[] {
  const move = job.source.afterLoad?.move;
  if (move === undefined) return [];
  return (
    [
      ['source.uri', job.source.uri],
      ['target.uri', job.target.uri],
    ] as const
  )
    .filter(([, uri]) => urisOverlap(move, uri))
    .map(
      ([what, uri]) =>
        `must not be inside ${what} ${JSON.stringify(uri)} or contain it, got ${JSON.stringify(move)}`,
    );
}

/**
 * Whether one storage URI lies inside another (or they are the same). Compared as written (both
 * relative paths resolve against the same config folder): `s3a://` is `s3://`, `file:///x` is
 * `/x`, trailing slashes and `.`/`..` segments do not count.
 */
function urisOverlap(a: string, b: string): boolean {
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
