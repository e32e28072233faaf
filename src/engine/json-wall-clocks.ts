/**
 * A `timestamp_ntz` column (a wall clock) holds a JSON file's timestamp text as written, or the
 * batch is refused. DuckDB's JSON reader detects ISO timestamp texts and turns one with an offset
 * (`12:30:00+02:00`) into its UTC time before tidemark sees the text, so the wall clock would be
 * stored shifted (`10:30:00`). Where DuckDB read a column of a JSON file as a timestamp and the
 * table's column is `timestamp_ntz`, that column's texts are read again (./json-numbers.ts) and
 * each must spell a timestamp without a zone by the rule CSV text follows (./text-cast.ts); the
 * first that does not fails the batch naming file, line and column. A text DuckDB left as text
 * is converted by that rule anyway (./load-conform.ts).
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

/** Refuse (BadFileError) a JSON timestamp text with a zone that DuckDB read into a column `schema` types `timestamp_ntz`. */
export async function refuseShiftedWallClocks(
  session: DuckSession,
  jsonFiles: Iterable<LoadFile>,
  described: ReadonlyMap<LoadFile, readonly FileColumn[]>,
  schema: StructType | undefined,
): Promise<void> {
  const wallClock = new Set(
    (schema?.fields ?? [])
      .filter((f) => f.type === 'timestamp_ntz')
      .map((f) => f.name.toLowerCase()),
  );
  if (wallClock.size === 0) return;
  for (const file of jsonFiles) {
    const columns = new Set(
      (described.get(file) ?? [])
        .filter((c) => DETECTED.has(c.type) && wallClock.has(c.name.toLowerCase()))
        .map((c) => c.name.toLowerCase()),
    );
    if (columns.size === 0) continue;
    const { texts } = await recordTexts(session, file, columns);
    for (let at = 0; at < texts.length; at += TEXTS_PER_CHECK) {
      const bad = await firstZoned(session, texts.slice(at, at + TEXTS_PER_CHECK));
      if (bad) {
        throw new BadFileError(
          `[load] ${file.key}: line ${bad.line}, column ${JSON.stringify(bad.column)}: the timestamp ${JSON.stringify(bad.text)} is not a wall clock ` +
            '(it has a zone or offset, or is not a timestamp), and the column is timestamp_ntz; write the local time without an offset, ' +
            'or make the column a timestamp (an instant)',
          {
            context: {
              key: file.key,
              line: bad.line,
              row: bad.row,
              column: bad.column,
              value: bad.text,
            },
          },
        );
      }
    }
  }
}

/** The first of `texts` that does not spell a timestamp without a zone, or null. */
async function firstZoned(
  session: DuckSession,
  texts: readonly RecordText[],
): Promise<RecordText | null> {
  if (texts.length === 0) return null;
  const rows = jsonRows(
    texts.map((t, i) => ({ i, t: t.text })),
    { i: 'BIGINT', t: 'VARCHAR' },
  );
  const wallClock = textValueSql('u.t', parseDuckType('TIMESTAMP'));
  const row = await session.one(
    `SELECT u.i FROM ${rows} AS u WHERE ${wallClock} IS NULL ORDER BY u.i LIMIT 1`,
  );
  return row ? texts[Number(row['i'])]! : null;
}
