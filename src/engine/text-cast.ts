/**
 * Exact conversions of text (a CSV field, a JSON string) into a column's type, as SQL.
 *
 * DuckDB's own casts are forgiving: `' 42 '`, `1_000`, `1e3` and `0x10` all cast to integers,
 * `'1.505'` rounds into DECIMAL(10,2), `strptime` skips blanks and reads `26` as the year 26, and
 * a date text is read under whichever format its sniffer guessed for that file. Here a text
 * converts only when it spells a value of the type exactly:
 *
 *   integers   an optional sign and digits, in range
 *   decimal    an exact decimal literal (`-12.50`, `.5`) that fits precision and scale
 *              (digits past the scale must be zeros)
 *   float      a decimal literal, optionally with an exponent (the nearest binary value is
 *              stored: that is what a float column holds); never inf or nan, and never a
 *              nonzero text below the smallest normal value (it would lose digits, or be 0)
 *   boolean    true or false, in any case
 *   date       ISO `2026-01-31`, or with `dateFormat` that format, or else one of the
 *              candidate forms (month/day/year, day/month/year with `/`, `-` or `.`), read
 *              only when exactly one reading exists: `01/02/2026` reads two ways and is
 *              refused as ambiguous (see `dateReadings`)
 *   timestamp  ISO 8601 (`T` or a space, up to microseconds, optionally `Z` or an offset,
 *              which `timestamp_ntz` refuses), or with `timestampFormat` that format, or a
 *              candidate date form followed by `H:MM[:SS[.ffffff]]`
 *   string     anything; binary: the text's UTF-8 bytes
 *
 * No conversion trims blanks. Two-digit years are never read without a format (which century
 * would be a guess).
 */
import { renderDuckType, type DuckType } from './duck-type.js';
import { str } from './sql.js';

/** The job's formats for date and timestamp texts (`source.csv.dateFormat`, `timestampFormat`). */
export interface TemporalFormats {
  date?: string;
  timestamp?: string;
}

const INTEGERS = new Set([
  'TINYINT',
  'SMALLINT',
  'INTEGER',
  'BIGINT',
  'HUGEINT',
  'UTINYINT',
  'USMALLINT',
  'UINTEGER',
  'UBIGINT',
  'UHUGEINT',
]);
const FLOATS = new Set(['FLOAT', 'DOUBLE']);
/** Below this many characters, a text without an exponent cannot be below the smallest normal value (0. and 37 or 307 zeros). */
const PLAIN_NORMAL_CHARS: Record<string, number> = { FLOAT: 38, DOUBLE: 300 };
/** The smallest positive normal value of each (FLT_MIN, DBL_MIN). */
const MIN_NORMAL: Record<string, string> = {
  FLOAT: '1.1754943508222875e-38::FLOAT',
  DOUBLE: '2.2250738585072014e-308::DOUBLE',
};

const INTEGER_TEXT = '[+-]?[0-9]+';
const DECIMAL_TEXT = '[+-]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)';
const FLOAT_TEXT = `${DECIMAL_TEXT}([eE][+-]?[0-9]+)?`;
const TIME_TEXT = '[0-9]{1,2}:[0-9]{2}(:[0-9]{2}(\\.[0-9]{1,6})?)?';
const ISO_DATE_TEXT = '[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}';
const ZONE_TEXT = '(Z|[+-][0-9]{2}(:?[0-9]{2})?)';

function matches(col: string, pattern: string): string {
  return `regexp_full_match(${col}, ${str(pattern)})`;
}

/** True when the text type converts into `target` only through the checks here. */
export function isTextType(t: DuckType): boolean {
  return t.kind === 'primitive' && (t.name === 'VARCHAR' || t.name === 'JSON');
}

/**
 * SQL predicate, true for a non-NULL text `col` that does not convert exactly into `target`
 * (ambiguous dates included: `ambiguitySql` tells those apart for the message).
 */
export function textMisfitSql(
  col: string,
  target: DuckType,
  formats: TemporalFormats = {},
): string | null {
  if (
    target.kind === 'primitive' &&
    (target.name === 'VARCHAR' || target.name === 'BLOB' || target.name === 'JSON')
  )
    return null;
  return `(${col} IS NOT NULL AND ${textValueSql(col, target, formats)} IS NULL)`;
}

/**
 * SQL of the value of text `col` in `target`'s type, NULL when it does not convert exactly
 * (callers check with `textMisfitSql` first and raise).
 */
export function textValueSql(col: string, target: DuckType, formats: TemporalFormats = {}): string {
  const type = renderDuckType(target);
  if (target.kind === 'decimal') {
    const whole = target.precision - target.scale;
    const fits = `[+-]?0*[0-9]{0,${whole}}(\\.[0-9]{0,${target.scale}}0*)?`;
    return `CASE WHEN ${matches(col, DECIMAL_TEXT)} AND ${matches(col, fits)} THEN CAST(${col} AS ${type}) END`;
  }
  if (target.kind !== 'primitive') return `CAST(NULL AS ${type})`; // a scalar where a struct, list or map is expected
  const name = target.name;
  if (name === 'VARCHAR' || name === 'JSON') return col;
  if (name === 'BLOB') return `encode(${col})`;
  if (INTEGERS.has(name))
    return `CASE WHEN ${matches(col, INTEGER_TEXT)} THEN TRY_CAST(${col} AS ${type}) END`;
  if (FLOATS.has(name)) {
    const value = `TRY_CAST(${col} AS ${type})`;
    // Past the range (inf), or below the smallest normal value (fewer digits, or 0) of a
    // nonzero text: a value the column cannot hold, as JSON numbers (./json-numbers.ts). Only a
    // text with an exponent, or long enough for that many zeros after the point, can be that
    // small: the others skip the value test (a third of the time on a column of plain numbers).
    const plain = `length(${col}) < ${PLAIN_NORMAL_CHARS[name]} AND NOT contains(${col}, 'e') AND NOT contains(${col}, 'E')`;
    const zeroText = matches(col, `[+-]?(0+\\.?0*|\\.0+)([eE][+-]?[0-9]+)?`);
    const normal = `CASE WHEN ${plain} THEN true WHEN abs(${value}) >= ${MIN_NORMAL[name]} THEN true ELSE ${zeroText} END`;
    return `CASE WHEN ${matches(col, FLOAT_TEXT)} AND NOT isinf(${value}) AND ${normal} THEN ${value} END`;
  }
  if (name === 'BOOLEAN')
    return `CASE lower(${col}) WHEN 'true' THEN true WHEN 'false' THEN false END`;
  if (name === 'DATE') return dateValueSql(col, formats);
  if (name === 'TIMESTAMP WITH TIME ZONE') return timestampValueSql(col, formats, true);
  if (name === 'TIMESTAMP') return timestampValueSql(col, formats, false);
  return `CAST(NULL AS ${type})`; // TIME, INTERVAL, UUID …: no text converts without a rule
}

// --- dates and timestamps --------------------------------------------------------------------

/** The readings of a date text under the candidate forms: up to two, compared for ambiguity. */
interface DateReadings {
  /** Read month first (or year first for `YYYY/MM/DD`), NULL when that form does not fit. */
  first: string;
  /** Read day first, NULL when that form does not fit. */
  second: string;
}

/**
 * A candidate date text's two readings: `01/02/2026` month-first (2026-01-02) and day-first
 * (2026-02-01); `13/02/2026` has only the day-first one, `2026/02/13` only the year-first one.
 * Separators `/`, `-` and `.`, used consistently; four-digit years only.
 */
function dateReadings(col: string): DateReadings {
  const dmy = ['/', '-', '\\.'].map((s) => `[0-9]{1,2}${s}[0-9]{1,2}${s}[0-9]{4}`).join('|');
  const ymd = ['/', '\\.'].map((s) => `[0-9]{4}${s}[0-9]{1,2}${s}[0-9]{1,2}`).join('|');
  const dashed = `translate(${col}, '/.', '--')`;
  const read = (format: string) => `CAST(try_strptime(${dashed}, '${format}') AS DATE)`;
  return {
    first: `CASE WHEN ${matches(col, dmy)} THEN ${read('%m-%d-%Y')} WHEN ${matches(col, ymd)} THEN ${read('%Y-%m-%d')} END`,
    second: `CASE WHEN ${matches(col, dmy)} THEN ${read('%d-%m-%Y')} END`,
  };
}

/**
 * SQL predicate, true for a text that `target` (a date or timestamp type) would read two ways
 * under the candidate forms; null when no format is left to guess (a format is configured, or
 * the type is not temporal). `first` and `second` are the two readings, for the message.
 */
export function ambiguitySql(
  col: string,
  target: DuckType,
  formats: TemporalFormats = {},
): { predicate: string; first: string; second: string } | null {
  if (target.kind !== 'primitive') return null;
  const datePart = (text: string) => {
    const r = dateReadings(text);
    return {
      predicate: `(${r.first} IS NOT NULL AND ${r.second} IS NOT NULL AND ${r.first} <> ${r.second})`,
      first: r.first,
      second: r.second,
    };
  };
  if (target.name === 'DATE') return formats.date === undefined ? datePart(col) : null;
  if (target.name !== 'TIMESTAMP' && target.name !== 'TIMESTAMP WITH TIME ZONE') return null;
  if (formats.timestamp !== undefined) return null;
  const split = splitDateTime(col);
  const inner = datePart(split.date);
  return {
    predicate: `(${split.matches} AND ${inner.predicate})`,
    first: `CAST(${inner.first} AS VARCHAR) || ' ' || ${split.time}`,
    second: `CAST(${inner.second} AS VARCHAR) || ' ' || ${split.time}`,
  };
}

/** A text's date under the job's rules (see the module comment); NULL when it has none or two. */
function dateValueSql(col: string, formats: TemporalFormats): string {
  const iso = `CASE WHEN ${matches(col, ISO_DATE_TEXT)} THEN TRY_CAST(${col} AS DATE) END`;
  // A naive ISO timestamp at midnight is a date too: nothing of it is lost.
  const ts = `TRY_CAST(${col} AS TIMESTAMP)`;
  const midnight = `CASE WHEN ${matches(col, `${ISO_DATE_TEXT}[T ]${TIME_TEXT}`)} AND ${ts} = CAST(${ts} AS DATE) THEN CAST(${ts} AS DATE) END`;
  if (formats.date !== undefined) {
    const configured = `CASE WHEN ${matches(col, formatPattern(formats.date))} THEN CAST(try_strptime(${col}, ${str(formats.date)}) AS DATE) END`;
    return `coalesce(${iso}, ${configured}, ${midnight})`;
  }
  const r = dateReadings(col);
  const candidate = `CASE WHEN ${r.second} IS NULL THEN ${r.first} WHEN ${r.first} IS NULL OR ${r.first} = ${r.second} THEN ${r.second} END`;
  return `coalesce(${iso}, ${candidate}, ${midnight})`;
}

/** A candidate-form date text, one space, and a time: its two parts. */
function splitDateTime(col: string): { matches: string; date: string; time: string } {
  return {
    matches: matches(col, `[0-9./-]+ ${TIME_TEXT}`),
    date: `split_part(${col}, ' ', 1)`,
    time: `split_part(${col}, ' ', 2)`,
  };
}

/** A text's instant (`zoned`: TIMESTAMPTZ, naive texts taken as UTC) or wall clock (TIMESTAMP); NULL when it has none. */
function timestampValueSql(col: string, formats: TemporalFormats, zoned: boolean): string {
  const type = zoned ? 'TIMESTAMPTZ' : 'TIMESTAMP';
  const isoText = `${ISO_DATE_TEXT}([T ]${TIME_TEXT})?${zoned ? `${ZONE_TEXT}?` : ''}`;
  // The session's time zone is UTC, so a naive text casts to the UTC instant.
  const iso = `CASE WHEN ${matches(col, isoText)} THEN TRY_CAST(${col} AS ${type}) END`;
  if (formats.timestamp !== undefined) {
    const parsed = `try_strptime(${col}, ${str(formats.timestamp)})`;
    // A format with %z parses to TIMESTAMPTZ: an instant a wall-clock column cannot take.
    const zonedFormat = /%z/.test(formats.timestamp);
    const configured =
      zoned || !zonedFormat
        ? `CASE WHEN ${matches(col, formatPattern(formats.timestamp))} THEN CAST(${parsed} AS ${type}) END`
        : 'NULL';
    return `coalesce(${iso}, ${configured})`;
  }
  const split = splitDateTime(col);
  const date = dateValueSql(split.date, {});
  const time = `TRY_CAST(${split.time} AS TIME)`;
  const candidate = `CASE WHEN ${split.matches} THEN CAST(${date} + ${time} AS ${type}) END`;
  return `coalesce(${iso}, ${candidate})`;
}

/** What each strftime directive may match; others match any run of characters. */
const DIRECTIVES: Record<string, string> = {
  Y: '[0-9]{4}',
  y: '[0-9]{2}',
  m: '[0-9]{1,2}',
  d: '[0-9]{1,2}',
  e: ' ?[0-9]{1,2}',
  H: '[0-9]{1,2}',
  I: '[0-9]{1,2}',
  M: '[0-9]{2}',
  S: '[0-9]{2}',
  f: '[0-9]{1,6}',
  g: '[0-9]{1,3}',
  j: '[0-9]{1,3}',
  p: '(AM|PM|am|pm)',
  z: '(Z|[+-][0-9]{2}(:?[0-9]{2})?)',
  b: '[A-Za-z]{3}',
  h: '[A-Za-z]{3}',
  B: '[A-Za-z]+',
  a: '[A-Za-z]{3}',
  A: '[A-Za-z]+',
  '%': '%',
};

/**
 * The whole-text pattern a strptime format accepts, stricter than strptime itself: `%Y` is
 * four digits (strptime reads `26` as the year 26), and nothing before or after the value
 * (strptime skips blanks). `%-d`-style flags are the same directive.
 */
export function formatPattern(format: string): string {
  let out = '';
  for (let i = 0; i < format.length; i++) {
    const c = format[i]!;
    if (c !== '%') {
      out += /[A-Za-z0-9 :]/.test(c) ? c : `\\${c}`;
      continue;
    }
    let d = format[i + 1] ?? '';
    if (d === '-') d = format[++i + 1] ?? '';
    i++;
    out += DIRECTIVES[d] ?? '.+?';
  }
  return out;
}
