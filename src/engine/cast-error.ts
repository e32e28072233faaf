/**
 * The error for a source value that does not fit its table column's type: it names the value,
 * the column, the file and the row (and a CSV file's line), and says that tidemark does not
 * change column types; and the error for a date text that reads two ways.
 */
import { BadFileError } from '../errors.js';

/** Where a value that does not fit was found. */
export interface Misfit {
  /** Table column name. */
  column: string;
  /** The DuckDB type written for the column. */
  type: string;
  /** The source column's DuckDB type. */
  sourceType: string;
  value: unknown;
  /** Source file (its full URI), when known. */
  file?: unknown;
  /** 1-based row in the file, when known. */
  row?: unknown;
  /** 1-based line of a CSV file (the header counted), when known. */
  line?: unknown;
  /**
   * Whose type `type` is: the table's (a MERGE's batch), or the one the file is read in (the
   * table's, or where no table column exists, the one `source.columns` declares).
   */
  typeOf?: 'table' | 'read';
}

/** Where in a file: `file s3://…/a.csv, line 3 (data row 2)`, or `file …, row 2`. */
function place(m: Pick<Misfit, 'file' | 'row' | 'line'>): string {
  const file = m.file != null ? `file ${String(m.file)}` : '';
  const at =
    m.line != null
      ? `line ${Number(m.line)}${m.row != null ? ` (data row ${Number(m.row)})` : ''}`
      : m.row != null
        ? `row ${Number(m.row)}`
        : '';
  return [file, at].filter(Boolean).join(', ');
}

function placeContext(m: Pick<Misfit, 'file' | 'row' | 'line'>): {
  key?: string;
  row?: number;
  line?: number;
} {
  return {
    ...(m.file != null ? { key: String(m.file) } : {}),
    ...(m.row != null ? { row: Number(m.row) } : {}),
    ...(m.line != null ? { line: Number(m.line) } : {}),
  };
}

/** A BadFileError naming the value, column, file and row; `prefix` is the subsystem (`[load]`). */
export function castError(m: Misfit, prefix: string, cause?: unknown): BadFileError {
  const where = place(m);
  const source =
    m.sourceType === 'VARCHAR'
      ? 'the source has text that does not spell a value of that type exactly'
      : `the source has ${m.sourceType}`;
  const target =
    m.typeOf === 'read'
      ? `its type ${m.type} (the table column's, as source.columns declares it, or as the batch's Parquet files combine theirs)`
      : `the table's type ${m.type}`;
  const why = nanoseconds(m)
    ? `; the source has ${m.sourceType}, and a Delta timestamp holds microseconds, so its last digits would be lost: write microseconds upstream, or declare the column string in source.columns to keep the text`
    : `; ${source}, and tidemark does not change a column's type (a table column's needs Delta's typeWidening feature)`;
  return new BadFileError(
    `${prefix} value ${JSON.stringify(String(m.value))} of column ${JSON.stringify(m.column)} cannot be cast to ${target}` +
      (where ? ` (${where})` : '') +
      why,
    {
      context: { column: m.column, ...placeContext(m) },
      ...(cause === undefined ? {} : { cause }),
    },
  );
}

/** A Parquet TIMESTAMP(NANOS) value into a (microsecond) timestamp column. */
function nanoseconds(m: Misfit): boolean {
  return (
    m.sourceType === 'TIMESTAMP_NS' &&
    (m.type === 'TIMESTAMP' || m.type === 'TIMESTAMP WITH TIME ZONE')
  );
}

/**
 * A Parquet timestamp value below a microsecond that DuckDB reads in microseconds
 * (./parquet-utc-nanos.ts): a UTC-adjusted TIMESTAMP(NANOS), or an INT96 one. Declaring another
 * type would not keep it either.
 */
export function cutNanosecondsError(
  m: Pick<Misfit, 'column' | 'value' | 'file' | 'row'>,
  encoding: 'utc-nanos' | 'int96' = 'utc-nanos',
): BadFileError {
  const where = place(m);
  const holds =
    encoding === 'int96'
      ? `an INT96 Parquet timestamp (nanoseconds; Impala's and Hive's legacy encoding)`
      : `a UTC-adjusted Parquet TIMESTAMP(NANOS)`;
  const upstream =
    encoding === 'int96'
      ? `write microseconds upstream (a TIMESTAMP(MICROS) column rather than INT96)`
      : `write microseconds upstream (pyarrow: coerce_timestamps='us')`;
  return new BadFileError(
    `[load] value ${JSON.stringify(String(m.value))} of column ${JSON.stringify(m.column)} has nanoseconds` +
      (where ? ` (${where})` : '') +
      `; the file holds it as ${holds}, and a Delta timestamp holds microseconds, so its last digits would be lost: ${upstream}, or keep the nanoseconds in an integer column`,
    { context: { column: m.column, ...placeContext(m) } },
  );
}

/** A date or timestamp text that reads two ways under the candidate formats. */
export interface AmbiguousText {
  column: string;
  value: unknown;
  /** The month-first (or year-first) reading, and the day-first one. */
  readings: [unknown, unknown];
  /** The setting that would decide: `dateFormat` or `timestampFormat`. */
  setting: 'dateFormat' | 'timestampFormat';
  file?: unknown;
  row?: unknown;
  line?: unknown;
}

/** The BadFileError of an ambiguous date text: both readings, and the format setting that decides. */
export function ambiguityError(a: AmbiguousText, prefix: string): BadFileError {
  const where = place(a);
  const [first, second] = a.readings.map((r) => String(r));
  return new BadFileError(
    `${prefix} value ${JSON.stringify(String(a.value))} of column ${JSON.stringify(a.column)} reads two ways: ${first} (month first) or ${second} (day first)` +
      (where ? ` (${where})` : '') +
      `; set source.csv.${a.setting} (e.g. '${a.setting === 'dateFormat' ? '%d/%m/%Y' : '%d/%m/%Y %H:%M:%S'}') so every file is read the same way`,
    { context: { column: a.column, ...placeContext(a), readings: [first, second] } },
  );
}
