/**
 * Per-file statistics (`add.stats`, a JSON *string*; docs/delta-protocol.md, Statistics).
 * Numbers that a double cannot hold exactly (decimal stats like -9999999999.9999999999) are
 * kept as their JSON text, so callers never skip on a silently rounded bound.
 */
import type { FileStats, LiveFile } from './snapshot.js';

/** A JSON number kept as its exact text; `statsJson` writes the text, JSON.stringify a JS number. */
export class JsonNumber {
  constructor(readonly text: string) {}
  toJSON(): number {
    return Number(this.text);
  }
}

/**
 * The files' live rows from their stats (numRecords counts every stored row; a deletion vector's
 * cardinality says how many of them are deleted); undefined when a file has no row count.
 */
export function totalRecords(
  files: readonly Pick<LiveFile, 'parsedStats' | 'deletionVector'>[],
): number | undefined {
  let rows = 0;
  for (const f of files) {
    const n = f.parsedStats?.numRecords;
    if (n === undefined) return undefined;
    rows += n - (f.deletionVector?.cardinality ?? 0);
  }
  return rows;
}

/** Doubles hold every decimal with at most this many significant digits exactly enough to round-trip. */
const SAFE_DIGITS = 15;

/**
 * Parse `add.stats` text. Returns null when the text is missing or not a JSON object
 * (stats are optional; bad stats only mean the file cannot be skipped).
 */
export function parseStats(text: string | null | undefined): FileStats | null {
  if (text === null || text === undefined || text.trim() === '') return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(quoteImpreciseNumbers(text));
  } catch {
    return null;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return null;
  const raw = parsed as Record<string, unknown>;
  const stats: FileStats = {};
  const numRecords = Number(raw['numRecords']);
  if (raw['numRecords'] !== undefined && Number.isSafeInteger(numRecords))
    stats.numRecords = numRecords;
  for (const key of ['minValues', 'maxValues', 'nullCount'] as const) {
    const value = raw[key];
    if (value !== null && typeof value === 'object' && !Array.isArray(value))
      stats[key] = value as Record<string, unknown>;
  }
  if (typeof raw['tightBounds'] === 'boolean') stats.tightBounds = raw['tightBounds'];
  return stats;
}

const NUMBER = /-?\d+(\.\d+)?([eE][-+]?\d+)?/y;

/**
 * Rewrite JSON text so that every number with more significant digits than a double holds
 * becomes a string holding its exact text. Strings in the input are left untouched.
 */
export function quoteImpreciseNumbers(json: string): string {
  let out = '';
  let i = 0;
  while (i < json.length) {
    const ch = json[i]!;
    if (ch === '"') {
      const end = endOfString(json, i);
      out += json.slice(i, end);
      i = end;
    } else if (ch === '-' || (ch >= '0' && ch <= '9')) {
      NUMBER.lastIndex = i;
      const token = NUMBER.exec(json)?.[0] ?? ch;
      out += significantDigits(token) > SAFE_DIGITS ? `"${token}"` : token;
      i += token.length;
    } else {
      out += ch;
      i++;
    }
  }
  return out;
}

/** Index just past the closing quote of the string starting at `start`. */
function endOfString(json: string, start: number): number {
  let i = start + 1;
  while (i < json.length && json[i] !== '"') i += json[i] === '\\' ? 2 : 1;
  return i + 1;
}

function significantDigits(token: string): number {
  const mantissa = token
    .replace(/^-/, '')
    .replace(/[eE].*$/, '')
    .replace('.', '');
  return mantissa.replace(/^0+/, '').replace(/0+$/, '').length;
}

/** What the stats say about one column of one file. */
export interface ColumnBounds {
  /** Minimum (number, or string for dates, timestamps and imprecise decimals); undefined if not collected. */
  min: unknown;
  max: unknown;
  nullCount: number | undefined;
  numRecords: number | undefined;
  /** False after deletion-vector deletes: min/max are bounds, not values present in the file. */
  tightBounds: boolean;
}

/**
 * The bounds recorded for `column` (a top-level name, or a path into nested structs) in a
 * file's stats, or null when the file has no stats at all (then it cannot be skipped).
 */
export function statsBounds(
  file: Pick<LiveFile, 'parsedStats'>,
  column: string | readonly string[],
): ColumnBounds | null {
  const stats = file.parsedStats;
  if (!stats) return null;
  const path = typeof column === 'string' ? [column] : column;
  const nullCount = statAt(stats.nullCount, path);
  return {
    min: statAt(stats.minValues, path),
    max: statAt(stats.maxValues, path),
    nullCount: typeof nullCount === 'number' ? nullCount : undefined,
    numRecords: stats.numRecords,
    tightBounds: stats.tightBounds ?? true,
  };
}

/** The value at `path` in nested stats (minValues, maxValues, nullCount); undefined for none or null. */
export function statAt(
  values: Record<string, unknown> | undefined,
  path: readonly string[],
): unknown {
  let node: unknown = values;
  for (const part of path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node === null ? undefined : node;
}

/**
 * The `add.stats` JSON text. Keys in Spark's order; JsonNumber values written as their exact
 * text, so decimals keep every digit.
 */
export function statsJson(stats: FileStats): string {
  const ordered: Record<string, unknown> = {};
  for (const key of ['numRecords', 'minValues', 'maxValues', 'nullCount', 'tightBounds'] as const) {
    if (stats[key] !== undefined) ordered[key] = stats[key];
  }
  return toJsonText(ordered);
}

function toJsonText(v: unknown): string {
  if (v instanceof JsonNumber) return v.text;
  if (typeof v === 'bigint') return v.toString();
  if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
    const entries = Object.entries(v).filter(([, x]) => x !== undefined);
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${toJsonText(x)}`).join(',')}}`;
  }
  return JSON.stringify(v);
}
