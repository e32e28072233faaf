/**
 * Partition ids: the wall-clock date (and hour) a partition folder names, as a string that
 * sorts in time order: `2026-03-05` for day partitions, `2026-03-05T07` for hour partitions.
 *
 * An id carries no time zone; it is read in the job's `timezone` (see ./zone.ts). Truncating
 * an id gives the coarser units: `2026-03-05T07` -> `2026-03-05` -> `2026-03` -> `2026`.
 */

/** The finest unit of a layout. */
export type Granularity = 'day' | 'hour';

/** Calendar units in the order a layout must name them. */
export const UNITS = ['yyyy', 'mm', 'dd', 'HH'] as const;
/** One of the layout placeholders. */
export type Unit = (typeof UNITS)[number];

/** Wall-clock fields of a partition; `hour` is present for hour partitions. */
export interface WallTime {
  year: number;
  month: number;
  day: number;
  hour?: number;
}

/** Length of an id truncated to the first `unitCount` units (0..4). */
export const ID_LENGTH_BY_UNITS = [0, 4, 7, 10, 13] as const;

const ID_PATTERN = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}))?$/;

/** Format wall-clock fields as an id (with the hour when `hour` is set). */
export function formatId(t: WallTime): string {
  const day = `${pad(t.year, 4)}-${pad(t.month, 2)}-${pad(t.day, 2)}`;
  return t.hour === undefined ? day : `${day}T${pad(t.hour, 2)}`;
}

/** Parse an id; null when it is malformed or names an impossible date. */
export function parseId(id: string): WallTime | null {
  const m = ID_PATTERN.exec(id);
  if (!m) return null;
  const t: WallTime = { year: Number(m[1]), month: Number(m[2]), day: Number(m[3]) };
  if (m[4] !== undefined) t.hour = Number(m[4]);
  return impossibleDate(t) === null ? t : null;
}

/** Granularity of an id (`day` without an hour, `hour` with one). */
export function granularityOfId(id: string): Granularity {
  return id.length > ID_LENGTH_BY_UNITS[3] ? 'hour' : 'day';
}

/** Number of days in a month (1-based month) of the proleptic Gregorian calendar. */
export function daysInMonth(year: number, month: number): number {
  return new Date(utcMs({ year, month: month + 1, day: 0 })).getUTCDate();
}

/**
 * Why these fields cannot be a date, or null when they can. Only the fields present are
 * checked, so partial dates (a year and month folder) are validated level by level.
 */
export function impossibleDate(t: Partial<WallTime>): string | null {
  if (t.year !== undefined && t.year < 1) return `year ${pad(t.year, 4)} does not exist`;
  if (t.month !== undefined && (t.month < 1 || t.month > 12))
    return `month ${pad(t.month, 2)} does not exist`;
  if (t.day !== undefined) {
    const max = t.year !== undefined && t.month !== undefined ? daysInMonth(t.year, t.month) : 31;
    if (t.day < 1 || t.day > max) {
      return t.year !== undefined && t.month !== undefined
        ? `${pad(t.year, 4)}-${pad(t.month, 2)}-${pad(t.day, 2)} does not exist`
        : `day ${pad(t.day, 2)} does not exist`;
    }
  }
  if (t.hour !== undefined && (t.hour < 0 || t.hour > 23))
    return `hour ${pad(t.hour, 2)} does not exist`;
  return null;
}

/**
 * Milliseconds of the wall-clock fields read as UTC. Unlike Date.UTC, years 0..99 are not
 * shifted to 1900..1999; out-of-range fields roll over (day 0 is the last day of the month before).
 */
export function utcMs(t: {
  year: number;
  month: number;
  day: number;
  hour?: number;
  minute?: number;
  second?: number;
}): number {
  const d = new Date(0);
  d.setUTCFullYear(t.year, t.month - 1, t.day);
  d.setUTCHours(t.hour ?? 0, t.minute ?? 0, t.second ?? 0, 0);
  return d.getTime();
}

/** Wall-clock fields of a UTC millisecond value, truncated to `granularity`. */
export function wallOfUtcMs(ms: number, granularity: Granularity): WallTime {
  const d = new Date(ms);
  const t: WallTime = { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate() };
  if (granularity === 'hour') t.hour = d.getUTCHours();
  return t;
}

/** The calendar neighbour of `t`, one unit (day or hour) later (`step` 1) or earlier (-1). */
export function stepWall(t: WallTime, step: 1 | -1): WallTime {
  const granularity: Granularity = t.hour === undefined ? 'day' : 'hour';
  const ms = utcMs(t) + step * (granularity === 'hour' ? 3_600_000 : 86_400_000);
  return wallOfUtcMs(ms, granularity);
}

function pad(n: number, width: number): string {
  return String(n).padStart(width, '0');
}
