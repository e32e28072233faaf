/**
 * CSV records by physical line, under the job's one dialect, as DuckDB's reader counts them: a
 * record starts on a line that does not continue a quoted field, and a blank line there is no
 * record, except in a file of one column read without a nonempty `nullstr` (there it is a record of one
 * unquoted empty field: NULL). DuckDB numbers only the records it keeps (`_source_row`), so the
 * line of a data row is found by walking the file's text (only to name it in an error), and a
 * one-column file read with a nonempty `nullstr`, whose blank lines DuckDB would drop with their empty
 * strings, is refused naming the first.
 */
import { BadFileError } from '../errors.js';
import type { DuckSession } from './duckdb.js';
import { forEachLine } from './file-lines.js';
import type { CsvDialect, LoadFile } from './file-select.js';

/**
 * Whether a blank line of a one-column file is kept as a NULL row: nullstr unset, or set to
 * DuckDB's own default, the empty text (it then drops no blank line).
 */
function blankIsNull(dialect: CsvDialect): boolean {
  return dialect.nullstr === undefined || dialect.nullstr === '';
}

/** Where a quoted field stands after `text`: still open (`quoted`), and the fields counted. */
interface LineScan {
  quoted: boolean;
  fields: number;
}

/**
 * Scan one line under `dialect` (a quote opens a quoted field only at the field's start),
 * from inside a quoted field when `quoted`: a line that continues one of the line before.
 */
function scanLine(line: string, dialect: CsvDialect, quoted: boolean): LineScan {
  const { delimiter, quote, escape } = dialect;
  const text = line.endsWith('\r') ? line.slice(0, -1) : line;
  let fields = 1;
  let atFieldStart = !quoted;
  for (let i = 0; i < text.length;) {
    if (quoted) {
      if (
        escape !== '' &&
        text.startsWith(escape, i) &&
        (escape !== quote || text.startsWith(quote, i + 1))
      )
        i += 2;
      else if (text.startsWith(quote, i)) {
        quoted = false;
        i += quote.length;
      } else i++;
      continue;
    }
    if (atFieldStart && quote !== '' && text.startsWith(quote, i)) {
      quoted = true;
      atFieldStart = false;
      i += quote.length;
    } else if (text.startsWith(delimiter, i)) {
      fields++;
      atFieldStart = true;
      i += delimiter.length;
    } else {
      atFieldStart = false;
      i++;
    }
  }
  return { quoted, fields };
}

/** Fields in one line under `dialect`, or null when a quoted field runs past the end of the line. */
export function countCsvFields(line: string, dialect: CsvDialect): number | null {
  const scan = scanLine(line, dialect, false);
  return scan.quoted ? null : scan.fields;
}

/** Each line a record could start on: not inside a quoted field; `blank` when it is empty. */
async function walkRecordLines(
  session: DuckSession,
  file: LoadFile,
  dialect: CsvDialect,
  visit: (line: number, blank: boolean) => boolean | void,
): Promise<void> {
  let quoted = false;
  await forEachLine(session, file, (text, line) => {
    if (!quoted && visit(line, text === '' || text === '\r') === false) return false;
    quoted = scanLine(text, dialect, quoted).quoted;
  });
}

/** The line of the `n`-th line a record could start on that `counts` (1-based), or undefined. */
async function nthRecordLine(
  session: DuckSession,
  file: LoadFile,
  dialect: CsvDialect,
  n: number,
  counts: (blank: boolean) => boolean,
): Promise<number | undefined> {
  let seen = 0;
  let found: number | undefined;
  await walkRecordLines(session, file, dialect, (line, blank) => {
    if (!counts(blank) || ++seen < n) return true;
    found = line;
    return false;
  });
  return found;
}

/**
 * The line the `record`-th record (1-based, a header row counted) of a file of `columns` columns
 * starts on, or undefined when the file holds fewer records.
 */
export function csvRecordLine(
  session: DuckSession,
  file: LoadFile,
  dialect: CsvDialect,
  columns: number,
  record: number,
): Promise<number | undefined> {
  const blankIsRecord = columns === 1 && blankIsNull(dialect);
  return nthRecordLine(session, file, dialect, record, (blank) => !blank || blankIsRecord);
}

/**
 * The file's line that DuckDB's reader calls line `counted` in an error: it counts the lines a
 * record could start on, blank ones too, but not the lines a quoted field continues on.
 */
export function csvPhysicalLine(
  session: DuckSession,
  file: LoadFile,
  dialect: CsvDialect,
  counted: number,
): Promise<number | undefined> {
  return nthRecordLine(session, file, dialect, counted, () => true);
}

/**
 * Refuse a one-column file read with a nonempty `nullstr` that has a blank line (outside a quoted field):
 * the line holds one empty field, an empty string under this dialect, but DuckDB skips it.
 */
export async function refuseSkippedBlankLines(
  session: DuckSession,
  file: LoadFile,
  dialect: CsvDialect,
  column: string,
): Promise<void> {
  if (blankIsNull(dialect)) return;
  const blankAt = await nthRecordLine(session, file, dialect, 1, (blank) => blank);
  if (blankAt === undefined) return;
  throw new BadFileError(
    `[load] cannot load ${file.key}: line ${blankAt} is blank, in a file of one column (${JSON.stringify(column)}) read with source.csv.nullstr set: ` +
      "the line holds one empty field, an empty string under that setting, but DuckDB's reader skips blank lines, so the row would be lost; " +
      'quote the empty value ("") in the source, or leave nullstr unset (a blank line is then a NULL)',
    { context: { key: file.key, line: blankAt, column } },
  );
}
