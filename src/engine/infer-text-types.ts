/**
 * The types of CSV columns a table does not have yet, inferred once per batch from the text of
 * all its files together (never per file, never by DuckDB's sniffer), by rules that lose nothing
 * the file spells:
 *
 *   boolean        every value is true or false (any case)
 *   long           every value is a plain integer (`-12`, `0`; no sign `+`, no leading zeros,
 *                  no `-0`, which a number would drop: `007` stays text) within 64 bits
 *   decimal(38,0)  plain integers beyond 64 bits, up to 38 digits (never a double, which would
 *                  fold `12345678901234567890` and `…891` into one value)
 *   double         plain decimals (`12.50`, `-0.5`) of at most 15 significant digits, which a
 *                  double gives back exactly (`-0` too: a double keeps the sign of zero);
 *                  decimal(38,s) beyond that, when it fits and holds no `-0`, `-0.0`; else text
 *   date           every value a date under the job's rules (ISO, `source.csv.dateFormat`, or a
 *                  candidate form that reads one way only)
 *   timestamp      likewise for timestamps (`source.csv.timestampFormat`)
 *   string         anything else: exponents (`1e5`), separators (`1_000`), blanks around
 *                  values, a column with no values at all
 *
 * A key column is never inferred floating: its decimals become decimal(38,s), or text. A column
 * `source.columns` declares takes its declared type. A date text that reads two ways
 * (`01/02/2026` without a dateFormat) still makes a date column, and loading it is refused naming
 * both readings, as it is for an existing table's date column.
 */
import type { DataType, StructField } from '../delta/schema.js';
import { parseDuckType, type DuckType } from './duck-type.js';
import type { DuckSession } from './duckdb.js';
import { temporalFormats, type CsvOptions } from './file-select.js';
import { ident, str } from './sql.js';
import { ambiguitySql, textValueSql, type TemporalFormats } from './text-cast.js';

/** What to infer: the columns of a batch's CSV files, already read as text into tables (./bulk-text.ts), that `known` (lower-cased names) lacks. */
export interface InferRequest {
  tables: readonly { table: string; columns: readonly string[] }[];
  known: ReadonlySet<string>;
  csv?: CsvOptions;
  /** Key columns of the job (never inferred floating). */
  keyColumns?: readonly string[];
}

/** Significant digits a double gives back exactly (DBL_DIG). */
const DOUBLE_DIGITS = 15;
/** No `-0`: an integer (and a decimal) has no negative zero, so `0` and `-0` would be one key. */
const PLAIN_INTEGER = '0|-?[1-9][0-9]*';
/** A double keeps the sign of zero: `-0` and `-0.0` are doubles, never integers or decimals. */
const PLAIN_NUMBER = '-?(0|[1-9][0-9]*)(\\.[0-9]+)?';
const NEGATIVE_ZERO = '-0(\\.0+)?';

/** The inferred field of every new column (in the order the files first name them). */
export async function inferTextColumns(
  session: DuckSession,
  req: InferRequest,
): Promise<StructField[]> {
  const names = new Map<string, string>();
  for (const f of req.tables)
    for (const c of f.columns)
      if (!req.known.has(c.toLowerCase()) && !names.has(c.toLowerCase()))
        names.set(c.toLowerCase(), c);
  if (names.size === 0) return [];
  const columns = [...names.values()];
  const formats = temporalFormats(req.csv);
  // The cheap checks per column; the date and timestamp checks only for the columns they can
  // decide (not boolean, integer or number: decide() reads them last), in one expression over
  // those columns stacked by UNPIVOT. Written per column, their text ran to 9 KB each and planning
  // it took about 25 ms a column, whatever the rows.
  const aggregates = columns.flatMap((c, i) => {
    const v = ident(c);
    const fraction = `length(split_part(${v}, '.', 2))`;
    const whole = `length(ltrim(split_part(${v}, '.', 1), '-'))`;
    return [
      `count(${v}) AS n${i}`,
      `${allOf(`lower(${v}) IN ('true', 'false')`, v)} AS b${i}`,
      `${allOf(`regexp_full_match(${v}, ${str(PLAIN_INTEGER)})`, v)} AS i${i}`,
      `${allOf(`regexp_full_match(${v}, ${str(PLAIN_NUMBER)})`, v)} AS d${i}`,
      `coalesce(bool_or(regexp_full_match(${v}, ${str(NEGATIVE_ZERO)})), false) AS m${i}`,
      `max(${whole}) AS w${i}`,
      `max(CASE WHEN contains(${v}, '.') THEN ${fraction} ELSE 0 END) AS s${i}`,
      `max(length(ltrim(replace(ltrim(${v}, '-'), '.', ''), '0'))) AS g${i}`,
      `${allOf(`regexp_matches(${v}, '^[0-9]')`, v)} AS a${i}`,
    ];
  });
  // The texts first, into one table (a bounded number of files per statement, as the load does:
  // each CSV scan holds its own buffers); then the checks over them all.
  const table = ident(INFER_TABLE);
  let row: Record<string, unknown>;
  try {
    const selects = req.tables.map((t) => tableSelect(t, columns));
    for (let at = 0; at < selects.length; at += FILES_PER_STATEMENT) {
      const union = selects.slice(at, at + FILES_PER_STATEMENT).join('\nUNION ALL\n');
      await session.run(
        at === 0
          ? `CREATE OR REPLACE TEMP TABLE ${table} AS ${union}`
          : `INSERT INTO ${table} ${union}`,
      );
    }
    row = (await session.one(`SELECT ${aggregates.join(', ')} FROM ${table}`)) ?? {};
    // Without a configured format every date and timestamp text starts with a digit (each form's
    // pattern does: ISO, the candidate date forms, and a timestamp's date part), so a column with
    // a value that does not (`r1`, `placed`) is neither.
    const configured = formats.date !== undefined || formats.timestamp !== undefined;
    const temporal = columns.flatMap((_, i) =>
      undecided(row, i) && (configured || row[`a${i}`] === true) ? [i] : [],
    );
    if (temporal.length > 0)
      Object.assign(row, await temporalChecks(session, columns, temporal, formats));
  } finally {
    await session.run(`DROP TABLE IF EXISTS ${table}`);
  }
  const keys = new Set((req.keyColumns ?? []).map((k) => k.toLowerCase()));
  const fields: StructField[] = [];
  for (const [i, name] of columns.entries()) {
    fields.push({
      name,
      type: decide(row, i, keys.has(name.toLowerCase())),
      nullable: true,
      metadata: {},
    });
  }
  return fields;
}

/** `predicate` holds for every non-NULL value of `v` (false when there is none). */
function allOf(predicate: string, v: string): string {
  return `coalesce(bool_and(${predicate}) FILTER (WHERE ${v} IS NOT NULL), false)`;
}

/** Whether decide() reads the date and timestamp checks of column i: it has values, none of the earlier types fits. */
function undecided(row: Record<string, unknown>, i: number): boolean {
  return (
    Number(row[`n${i}`] ?? 0) > 0 &&
    row[`b${i}`] !== true &&
    row[`i${i}`] !== true &&
    row[`d${i}`] !== true
  );
}

/**
 * The date (t) and timestamp (z) checks of the columns at `indexes`, keyed as decide() reads them.
 * UNPIVOT leaves out NULL values, so each check covers a column's values, as allOf does.
 */
async function temporalChecks(
  session: DuckSession,
  columns: readonly string[],
  indexes: readonly number[],
  formats: TemporalFormats,
): Promise<Record<string, unknown>> {
  const date = parseDuckType('DATE');
  const timestamp = parseDuckType('TIMESTAMP WITH TIME ZONE');
  // A date text that reads two ways still makes a date column: reading the files in it then
  // refuses the text naming both readings and its line (./load-conform.ts).
  const readable = (v: string, t: DuckType) => {
    const ambiguity = ambiguitySql(v, t, formats);
    return `(${textValueSql(v, t, formats)} IS NOT NULL${ambiguity ? ` OR ${ambiguity.predicate}` : ''})`;
  };
  const stacked = indexes.map((i) => `${ident(columns[i]!)} AS ${ident(`c${i}`)}`).join(', ');
  const value = ident('__tm_value');
  const rows = await session.all(
    `SELECT ${ident('__tm_column')} AS name, coalesce(bool_and(${readable(value, date)}), false) AS t, ` +
      `coalesce(bool_and(${readable(value, timestamp)}), false) AS z ` +
      `FROM (UNPIVOT (SELECT ${stacked} FROM ${ident(INFER_TABLE)}) ON COLUMNS(*) INTO NAME ${ident('__tm_column')} VALUE ${value}) ` +
      'GROUP BY 1',
  );
  const checks: Record<string, unknown> = {};
  for (const i of indexes) {
    checks[`t${i}`] = false;
    checks[`z${i}`] = false;
  }
  for (const r of rows) {
    const i = String(r['name']).slice(1);
    checks[`t${i}`] = r['t'] === true;
    checks[`z${i}`] = r['z'] === true;
  }
  return checks;
}

const FILES_PER_STATEMENT = 64;
const INFER_TABLE = '__tm_infer';

/** A staged table's `columns` as text (NULL where it lacks one). */
function tableSelect(
  { table, columns: own }: { table: string; columns: readonly string[] },
  columns: readonly string[],
): string {
  return `SELECT ${columnsAs(own, columns)} FROM ${ident(table)}`;
}

function columnsAs(own: readonly string[], columns: readonly string[]): string {
  return columns
    .map((c) => {
      const mine = own.find((m) => m.toLowerCase() === c.toLowerCase());
      return mine ? `${ident(mine)} AS ${ident(c)}` : `NULL::VARCHAR AS ${ident(c)}`;
    })
    .join(', ');
}

function decide(row: Record<string, unknown>, i: number, isKey: boolean): DataType {
  const num = (k: string) => Number(row[`${k}${i}`] ?? 0);
  if (num('n') === 0) return 'string';
  if (row[`b${i}`] === true) return 'boolean';
  if (row[`i${i}`] === true) {
    if (num('w') <= 18) return 'long';
    return num('w') <= 38 ? 'decimal(38,0)' : 'string';
  }
  if (row[`d${i}`] === true) {
    const scale = num('s');
    if (!isKey && num('g') <= DOUBLE_DIGITS) return 'double';
    if (row[`m${i}`] === true) return 'string';
    return num('w') + scale <= 38 ? `decimal(38,${scale})` : 'string';
  }
  if (row[`t${i}`] === true) return 'date';
  if (row[`z${i}`] === true) return 'timestamp';
  return 'string';
}
