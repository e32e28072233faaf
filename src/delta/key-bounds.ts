/**
 * Key bounds of a read: a MERGE reads only rows whose key columns lie within the batch's
 * [min, max] per key column. A file whose min/max statistics put every row outside those bounds
 * holds nothing the MERGE read, so a concurrent commit that added only such files cannot have
 * changed what it saw (the conflict check, ./conflicts.ts, lets it pass).
 *
 * Statistics prove that only when their order is the column's order, so only these types are
 * compared (others never exclude a file):
 *   byte, short, integer, long    exact integers (BigInt; stats may hold them as exact text)
 *   string                        UTF-8 byte order; a max of 32+ characters may be truncated, so
 *                                 it is not trusted
 *   date                          `yyyy-MM-dd` text
 *   timestamp, timestamp_ntz      milliseconds since the epoch; stats are truncated to ms, so the
 *                                 file's max is widened by 1 ms; the batch's bounds are given in
 *                                 whole ms already widened outwards
 * Missing, null or unreadable statistics mean "may hold the keys". Pure.
 */
import type { AddFile } from './actions.js';
import { parseStats, statAt } from './stats.js';

/** The bounds of one key column as read. */
export interface KeyBound {
  /** The column's path in `add.stats` (physical names under column mapping). */
  path: string[];
  /** Its Delta primitive type. */
  type: string;
  /** Inclusive bounds: integer text, the string, `yyyy-MM-dd`, or epoch ms (timestamps). */
  min: string | number;
  max: string | number;
}

/** Key column types whose statistics can exclude a file. */
export const BOUNDABLE_TYPES: ReadonlySet<string> = new Set([
  'byte',
  'short',
  'integer',
  'long',
  'string',
  'date',
  'timestamp',
  'timestamp_ntz',
]);

/** Characters Delta writers keep of a string statistic; a longer max may have been cut and padded. */
const STRING_STATS_PREFIX = 32;

/** False only when the file's statistics prove it holds no row inside every bound. */
export function mayHoldKeys(
  add: Pick<AddFile, 'stats'>,
  bounds: readonly KeyBound[] | undefined,
): boolean {
  if (!bounds || bounds.length === 0) return true;
  const stats = parseStats(add.stats);
  if (!stats) return true;
  return bounds.every((b) => {
    const fileMin = statAt(stats.minValues, b.path);
    const fileMax = statAt(stats.maxValues, b.path);
    return !(below(b, fileMax) || above(b, fileMin));
  });
}

/** The read's min is above the file's max: every file row is below the bounds. */
function below(b: KeyBound, fileMax: unknown): boolean {
  if (fileMax === undefined) return false;
  if (b.type === 'string') {
    if (typeof fileMax !== 'string' || [...fileMax].length >= STRING_STATS_PREFIX) return false;
    return Buffer.compare(Buffer.from(String(b.min)), Buffer.from(fileMax)) > 0;
  }
  const ours = ordinal(b.type, b.min, 0);
  const theirs = ordinal(b.type, fileMax, isTimestamp(b.type) ? 1 : 0);
  return ours !== null && theirs !== null && ours > theirs;
}

/** The read's max is below the file's min: every file row is above the bounds. */
function above(b: KeyBound, fileMin: unknown): boolean {
  if (fileMin === undefined) return false;
  if (b.type === 'string') {
    // A cut min is a prefix of the true min, so never greater than it: always safe to compare.
    return (
      typeof fileMin === 'string' &&
      Buffer.compare(Buffer.from(String(b.max)), Buffer.from(fileMin)) < 0
    );
  }
  const ours = ordinal(b.type, b.max, 0);
  const theirs = ordinal(b.type, fileMin, 0);
  return ours !== null && theirs !== null && ours < theirs;
}

function isTimestamp(type: string): boolean {
  return type === 'timestamp' || type === 'timestamp_ntz';
}

/** A comparable value of a bound or statistic (`widenMs` added to timestamps), or null when unreadable. */
function ordinal(type: string, value: unknown, widenMs: number): bigint | string | null {
  if (typeof value !== 'number' && typeof value !== 'string') return null;
  if (type === 'date')
    return typeof value === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(value) ? value : null;
  if (isTimestamp(type)) {
    const ms = typeof value === 'number' ? value : timestampMs(value);
    return Number.isFinite(ms) ? BigInt(Math.trunc(ms) + widenMs) : null;
  }
  const text = String(value);
  return /^-?\d+$/.test(text) ? BigInt(text) : null;
}

/** A statistic's timestamp text in ms; a time without a zone (timestamp_ntz) is read as UTC. */
function timestampMs(text: string): number {
  const zoned = /(Z|[+-]\d{2}:?\d{2})$/.test(text) ? text : `${text}Z`;
  return Date.parse(zoned.replace(' ', 'T'));
}
