/**
 * The range of a backfill, from `--from` and `--to` (both ends included), in the job's
 * discovery mode:
 * - partition mode: partition ids of the layout's granularity. On an hourly layout a bare date
 *   means the whole day: `--from 2026-11-01` is `2026-11-01T00`, `--to 2026-11-03` is `2026-11-03T23`.
 * - modification-time mode: instants. An ISO timestamp with an offset, or a date: `--from` a date
 *   is its UTC midnight, `--to` a date is its last millisecond (the whole day is included).
 */
import type { JobConfig } from '../../config/schema.js';
import { parsePartitionStart, parseTimestampStart } from '../../discovery/config.js';
import { Layout } from '../../discovery/index.js';
import { ConfigError, TidemarkError } from '../../errors.js';

/** A validated backfill range. */
export type BackfillRange =
  { mode: 'partition'; from: string; to: string } | { mode: 'modified'; from: number; to: number };

const DAY_MS = 86_400_000;
const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;

/** Parse `--from`/`--to` for `job`; ConfigError (field `from` or `to`) naming the problem. */
export function parseBackfillRange(job: JobConfig, from: string, to: string): BackfillRange {
  const d = job.source.discover;
  if (d.by === 'partition') {
    const granularity = Layout.parse(d.layout).granularity;
    const first = asFlag('from', () => parsePartitionStart(from, granularity));
    let last = asFlag('to', () => parsePartitionStart(to, granularity));
    if (granularity === 'hour' && DATE_ONLY.test(to.trim())) last = `${last.slice(0, 10)}T23`;
    checkOrder(first, last, from, to);
    return { mode: 'partition', from: first, to: last };
  }
  const first = asFlag('from', () => parseTimestampStart(from));
  let last = asFlag('to', () => parseTimestampStart(to));
  if (DATE_ONLY.test(to.trim())) last += DAY_MS - 1;
  checkOrder(first, last, from, to);
  return { mode: 'modified', from: first, to: last };
}

/** The range as stored and printed: partition ids, or ISO timestamps. */
export function describeRange(range: BackfillRange): { from: string; to: string } {
  return range.mode === 'partition'
    ? { from: range.from, to: range.to }
    : { from: new Date(range.from).toISOString(), to: new Date(range.to).toISOString() };
}

/** The range a stored description names: the inverse of `describeRange`. */
export function rangeOfDescription(
  mode: BackfillRange['mode'],
  described: { from: string; to: string },
): BackfillRange {
  return mode === 'partition'
    ? { mode: 'partition', from: described.from, to: described.to }
    : { mode: 'modified', from: Date.parse(described.from), to: Date.parse(described.to) };
}

/** Run a discovery parser, re-labelling its error as one about the `--<flag>` value. */
function asFlag<T>(flag: 'from' | 'to', parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    if (!(err instanceof TidemarkError)) throw err;
    throw new ConfigError(
      `--${flag}: ${err.message.replace(/^\[discovery\] start /, '')}`,
      { field: flag },
      err,
    );
  }
}

function checkOrder<T extends string | number>(first: T, last: T, from: string, to: string): void {
  if (first > last)
    throw new ConfigError(`--to ${JSON.stringify(to)} is before --from ${JSON.stringify(from)}`, {
      field: 'to',
    });
}
