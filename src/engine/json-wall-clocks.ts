/**
 * A JSON file's date and timestamp texts are stored as they spell them, or the batch is refused.
 * DuckDB's JSON reader detects such texts and converts them before tidemark sees them: one with an
 * offset (`12:30:00+02:00`) into its UTC time (a wall clock would be stored shifted), and loosely
 * spelt ones (` 2026-01-05`, `2026-01-05 1:2:3`) as what they resemble. Where DuckDB read a
 * top-level column of a JSON file as a date or a timestamp, that column's texts are read again
 * (./json-numbers.ts) and each must spell a value of the column's type by the rule CSV text
 * follows (./text-cast.ts); the first that does not fails the batch naming file, line and column.
 * A text DuckDB left as text is converted by that rule anyway (./load-conform.ts).
 */
import type { StructType } from '../delta/schema.js';
import { BadFileError } from '../errors.js';
import { parseDuckType } from './duck-type.js';
import type { DuckSession } from './duckdb.js';
import type { LoadFile } from './file-select.js';
import { recordTexts, type RecordText } from './json-numbers.js';
import type { FileColumn } from './load-conform.js';
import { jsonRows } from './sql.js';
import { textValueSql } from './text-cast.js';

/** DuckDB's types for a timestamp it detected in a JSON text. */
const DETECTED = new Set([
  'TIMESTAMP',
  'TIMESTAMP WITH TIME ZONE',
  'TIMESTAMP_NS',
  'TIMESTAMP_MS',
  'TIMESTAMP_S',
]);
/** Texts checked per statement. */
const TEXTS_PER_CHECK = 10_000;

/** The rule a detected text must follow, by the type of the column it goes into. */
const RULES: Record<string, { duck: string; what: string }> = {
  date: { duck: 'DATE', what: 'a date' },
  timestamp: { duck: 'TIMESTAMP WITH TIME ZONE', what: 'a timestamp' },
  timestamp_ntz: { duck: 'TIMESTAMP', what: 'a wall clock' },
};

/**
 * Refuse (BadFileError) a JSON text that DuckDB read as a date or a timestamp into a column
 * `schema` types `date`, `timestamp` or `timestamp_ntz`, unless the text spells that value by the
 * rule CSV text follows (./text-cast.ts): DuckDB's detection also takes `2026-1-5`, ` 2026-01-05`
 * and `2026-01-05 ` as 2026-01-05, and an offset into a wall clock shifted. Top-level columns
 * only (a struct field's texts are not re-read: docs/concepts.md, Types).
 */
export async function refuseShiftedWallClocks(
  session: DuckSession,
  jsonFiles: Iterable<LoadFile>,
  described: ReadonlyMap<LoadFile, readonly FileColumn[]>,
  schema: StructType | undefined,
): Promise<void> {
  const ruleOf = new Map<string, string>();
  for (const f of schema?.fields ?? [])
    if (typeof f.type === 'string' && f.type in RULES) ruleOf.set(f.name.toLowerCase(), f.type);
  for (const file of jsonFiles) {
    const columns = new Map<string, string>();
    for (const c of described.get(file) ?? []) {
      if (!DETECTED.has(c.type) && c.type !== 'DATE') continue;
      // A column the batch's schema lacks (a new table's) keeps DuckDB's type: a date or an instant.
      const rule = schema
        ? ruleOf.get(c.name.toLowerCase())
        : c.type === 'DATE'
          ? 'date'
          : 'timestamp';
      if (rule) columns.set(c.name.toLowerCase(), rule);
    }
    if (columns.size === 0) continue;
    const { texts } = await recordTexts(session, file, new Set(columns.keys()));
    for (const [column, rule] of columns) {
      const mine = texts.filter((t) => t.column.toLowerCase() === column);
      for (let at = 0; at < mine.length; at += TEXTS_PER_CHECK) {
        const bad = await firstMisspelt(session, mine.slice(at, at + TEXTS_PER_CHECK), rule);
        if (bad) throw misspelt(file, bad, rule);
      }
    }
  }
}

function misspelt(file: LoadFile, bad: RecordText, rule: string): BadFileError {
  const context = {
    key: file.key,
    line: bad.line,
    row: bad.row,
    column: bad.column,
    value: bad.text,
  };
  if (rule === 'timestamp_ntz')
    return new BadFileError(
      `[load] ${file.key}: line ${bad.line}, column ${JSON.stringify(bad.column)}: the timestamp ${JSON.stringify(bad.text)} is not a wall clock ` +
        '(it has a zone or offset, or is not a timestamp), and the column is timestamp_ntz; write the local time without an offset, ' +
        'or make the column a timestamp (an instant)',
      { context },
    );
  return new BadFileError(
    `[load] ${file.key}: line ${bad.line}, column ${JSON.stringify(bad.column)}: the text ${JSON.stringify(bad.text)} does not spell ${RULES[rule]!.what} exactly ` +
      `(the column is ${rule}; DuckDB's reading would store the value it guesses, with blanks dropped or digits added); write it in ISO 8601 (2026-01-05, 2026-01-05T10:30:00Z) without blanks, ` +
      'or declare the column string in source.columns',
    { context },
  );
}

/** The first of `texts` that does not spell a value of the `rule` column's type, or null. */
async function firstMisspelt(
  session: DuckSession,
  texts: readonly RecordText[],
  rule: string,
): Promise<RecordText | null> {
  if (texts.length === 0) return null;
  const rows = jsonRows(
    texts.map((t, i) => ({ i, t: t.text })),
    { i: 'BIGINT', t: 'VARCHAR' },
  );
  const wallClock = textValueSql('u.t', parseDuckType(RULES[rule]!.duck));
  const row = await session.one(
    `SELECT u.i FROM ${rows} AS u WHERE ${wallClock} IS NULL ORDER BY u.i LIMIT 1`,
  );
  return row ? texts[Number(row['i'])]! : null;
}
