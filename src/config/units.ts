/**
 * Durations (`30s`, `15m`, `2h`, `7d`) and sizes (`64MiB`, `1GiB`) as written in the config.
 */

const DURATION_UNITS: Record<string, number> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};
const SIZE_UNITS: Record<string, number> = {
  B: 1,
  KB: 1000,
  MB: 1000 ** 2,
  GB: 1000 ** 3,
  TB: 1000 ** 4,
  KiB: 1024,
  MiB: 1024 ** 2,
  GiB: 1024 ** 3,
  TiB: 1024 ** 4,
};

/** Milliseconds for a duration such as `15m`; null when the text is not a duration. */
export function parseDuration(text: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/.exec(text);
  if (!m) return null;
  return Math.round(Number(m[1]) * DURATION_UNITS[m[2]!]!);
}

/**
 * Milliseconds for a duration (`7d`, `168h`, `90m`), where a plain number counts in `plainUnitMs`
 * (flags that used to take a bare number of hours keep working); null when neither.
 */
export function parseDurationOr(text: string, plainUnitMs: number): number | null {
  if (/^\s*\d+(?:\.\d+)?\s*$/.test(text)) return Math.round(Number(text) * plainUnitMs);
  return parseDuration(text);
}

/** Bytes for a size such as `64MiB` or a plain number of bytes; null when not a size. */
export function parseSize(text: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)?\s*$/.exec(text);
  if (!m) return null;
  return Math.round(Number(m[1]) * SIZE_UNITS[m[2] ?? 'B']!);
}

/** A duration in ms as the config writes it, in the largest unit that divides it (`90s`, `15m`, `2h`, `7d`). */
export function durationText(ms: number): string {
  for (const unit of ['d', 'h', 'm', 's'] as const) {
    const size = DURATION_UNITS[unit]!;
    if (ms !== 0 && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}
