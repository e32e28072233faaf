/**
 * A string column holds a JSON file's text as the file spells it. DuckDB's JSON reader turns a
 * number into a double (or an int64) and prints it its own way when it lands in a string column
 * (`1e3` becomes `1000.0`, `0.10` `0.1`, `-0` `0`); an object or an array becomes its
 * re-serialization (`{"a":1.5}` for `{"a": 1.50}`); and a field that mixes text with other values
 * is read as JSON, so its texts keep their quotes (`"x"`). Integers alone, booleans alone and
 * texts alone come through as written.
 *
 * So, once the batch is loaded, every top-level string column of a JSON file that holds anything
 * else gets the file's own texts back, record by record (./json-numbers.ts reads them: a number,
 * a boolean, an object or an array as its JSON text, a text as its value). Inside a struct, a list
 * or a map, a value cannot be put back that way, so a string field there that holds such values
 * is refused naming file, line and field.
 */
import { BadFileError } from '../errors.js';
import { parseDuckType, renderDuckType, type DuckType } from './duck-type.js';
import type { DuckSession } from './duckdb.js';
import type { FileColumn } from './load-conform.js';
import { SOURCE_FILE, SOURCE_ROW, type LoadFile } from './file-select.js';
import {
  ELEMENT,
  recordTexts,
  type JsonScan,
  type NumberAt,
  type PathValues,
  type RecordText,
  type ValueKind,
} from './json-numbers.js';
import { ident, jsonRows, str } from './sql.js';

/** A JSON file of the batch, what ./json-numbers.ts found in it, and its columns as DuckDB read them (with its group's files, ./bulk-text.ts). */
export interface ScannedJson {
  file: LoadFile;
  scan: JsonScan;
  read: readonly FileColumn[];
}

/** Rows of record texts per INSERT statement (one string literal each). */
const TEXTS_PER_INSERT = 10_000;

/** Put the files' texts back into the top-level string columns of `table` (see the module comment); refuse what cannot be. */
export async function restoreJsonTexts(
  session: DuckSession,
  table: string,
  files: readonly ScannedJson[],
): Promise<void> {
  if (files.length === 0) return;
  const columns = new Map<string, { name: string; type: DuckType }>();
  for (const r of await session.all(`DESCRIBE ${ident(table)}`)) {
    columns.set(String(r['column_name']).toLowerCase(), {
      name: String(r['column_name']),
      type: parseDuckType(String(r['column_type'])),
    });
  }
  for (const f of files) {
    const bad = nestedMisfit(f, columns);
    if (bad) throw bad;
  }
  // Top-level columns DuckDB reads as JSON are read as text (./load-conform.ts, asReadSql).
  const work: { file: LoadFile; records: number; columns: Set<string> }[] = [];
  for (const f of files) {
    const wanted = new Set<string>();
    const read = readTypes(f);
    for (const v of f.scan.values.values()) {
      const column =
        v.segments.length === 1 ? columns.get(v.segments[0]!.toLowerCase()) : undefined;
      if (!column || textKind(column.type) !== 'VARCHAR') continue;
      // As DuckDB read the file (with its group's files, ./bulk-text.ts), before the cast to the column's type.
      if (!asWritten(v, read.get(v.segments[0]!.toLowerCase()) ?? column.type))
        wanted.add(column.name.toLowerCase());
    }
    if (wanted.size > 0) work.push({ file: f.file, records: f.scan.records, columns: wanted });
  }
  if (work.length === 0) return;
  await session.run(
    'CREATE OR REPLACE TEMP TABLE __tm_json_texts (f VARCHAR, c VARCHAR, r BIGINT, t VARCHAR)',
  );
  try {
    for (const w of work) {
      const { texts, records, spansLines } = await recordTexts(session, w.file, w.columns);
      if (spansLines) throw spanError(w.file, spansLines);
      if (records !== w.records)
        throw alignError(
          w.file,
          `${records} records on a second reading, ${w.records} on the first`,
        );
      for (let i = 0; i < texts.length; i += TEXTS_PER_INSERT)
        await insertTexts(session, w.file, texts.slice(i, i + TEXTS_PER_INSERT));
    }
    for (const name of new Set(work.flatMap((w) => [...w.columns])))
      await restoreColumn(session, table, columns.get(name)!.name, work);
  } finally {
    await session.run('DROP TABLE IF EXISTS __tm_json_texts');
  }
}

/** DuckDB's integer types: an integer read as one prints back as the file spells it. */
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

/**
 * Whether DuckDB's text of the values at `v`, read as `read`, is the text the file spells: texts
 * read as text, integers read as integers, booleans as booleans. Anything else (a number read as
 * a double, any value of a field read as JSON, an object or array) is DuckDB's own text.
 */
function asWritten(v: PathValues, read: DuckType): boolean {
  const kinds = (Object.keys(v.first) as ValueKind[]).filter((k) => v.first[k]);
  if (kinds.length === 0) return true;
  if (kinds.length > 1 || read.kind !== 'primitive') return false;
  const only = kinds[0];
  return (
    (only === 'string' && read.name === 'VARCHAR') ||
    (only === 'integer' && INTEGERS.has(read.name)) ||
    (only === 'boolean' && read.name === 'BOOLEAN')
  );
}

async function insertTexts(
  session: DuckSession,
  file: LoadFile,
  texts: readonly RecordText[],
): Promise<void> {
  if (texts.length === 0) return;
  const rows = jsonRows(
    texts.map((t) => ({ f: file.key, c: t.column.toLowerCase(), r: t.row, t: t.text })),
    { f: 'VARCHAR', c: 'VARCHAR', r: 'BIGINT', t: 'VARCHAR' },
  );
  await session.run(`INSERT INTO __tm_json_texts SELECT u.f, u.c, u.r, u.t FROM ${rows} AS u`);
}

/**
 * Put the texts into `column`. First a check that the records line up with the rows DuckDB read:
 * in every file the rows with a value there are exactly the records with a text.
 */
async function restoreColumn(
  session: DuckSession,
  table: string,
  column: string,
  work: readonly { file: LoadFile; columns: Set<string> }[],
): Promise<void> {
  const files = work.filter((w) => w.columns.has(column.toLowerCase()));
  const keys = files.map((w) => str(w.file.key)).join(', ');
  const texts = `(SELECT * FROM __tm_json_texts WHERE c = ${str(column.toLowerCase())})`;
  const off = await session.one(
    `SELECT d.${ident(SOURCE_FILE)} AS f FROM ${ident(table)} d FULL JOIN ${texts} x ON x.f = d.${ident(SOURCE_FILE)} AND x.r = d.${ident(SOURCE_ROW)} ` +
      `WHERE coalesce(d.${ident(SOURCE_FILE)}, x.f) IN (${keys}) AND (d.${ident(column)} IS NULL) <> (x.t IS NULL) LIMIT 1`,
  );
  if (off)
    throw alignError(
      files.find((w) => w.file.key === off['f'])?.file ?? files[0]!.file,
      `the rows with a value in column ${JSON.stringify(column)} are not the records that hold one`,
    );
  await session.run(
    `UPDATE ${ident(table)} AS d SET ${ident(column)} = x.t FROM ${texts} x WHERE x.f = d.${ident(SOURCE_FILE)} AND x.r = d.${ident(SOURCE_ROW)}`,
  );
}

/** The file's columns as read, by lower-case name. */
function readTypes(f: ScannedJson): Map<string, DuckType> {
  return new Map(f.read.map((c) => [c.name.toLowerCase(), parseDuckType(c.type)]));
}

/** 'VARCHAR' or 'JSON' for DuckDB's text types, else null. */
function textKind(t: DuckType): 'VARCHAR' | 'JSON' | null {
  return t.kind === 'primitive' && (t.name === 'VARCHAR' || t.name === 'JSON') ? t.name : null;
}

/** The type at `segments` below a column's type (keys of structs and maps, ELEMENT of lists), or null. */
function typeAt(t: DuckType, segments: readonly string[]): DuckType | null {
  let at: DuckType = t;
  for (const s of segments) {
    if (s === ELEMENT) {
      if (at.kind !== 'list' && at.kind !== 'array') return null;
      at = at.element;
    } else if (at.kind === 'struct') {
      const field =
        at.fields.find((f) => f.name === s) ??
        at.fields.find((f) => f.name.toLowerCase() === s.toLowerCase());
      if (!field) return null;
      at = field.type;
    } else if (at.kind === 'map') at = at.value;
    else return null;
  }
  return at;
}

/** The first string field inside a struct, list or map of a file that would not hold the file's text, as a BadFileError. */
function nestedMisfit(
  f: ScannedJson,
  columns: ReadonlyMap<string, { type: DuckType }>,
): BadFileError | null {
  const read = readTypes(f);
  for (const v of f.scan.values.values()) {
    if (v.segments.length < 2) continue;
    const top = v.segments[0]!.toLowerCase();
    const column = columns.get(top);
    const leaf = column ? typeAt(column.type, v.segments.slice(1)) : null;
    if (!leaf || !textKind(leaf)) continue;
    // As DuckDB read the file (with its group's files), before the cast to the column's type.
    const readLeaf = (read.has(top) ? typeAt(read.get(top)!, v.segments.slice(1)) : null) ?? leaf;
    if (asWritten(v, readLeaf)) continue;
    const { at, why } = nestedWhy(v, readLeaf);
    return new BadFileError(
      `[load] ${f.file.key}: line ${at.line}, column ${JSON.stringify(v.column)}: the JSON value ${at.value} would not be stored as written in this string field: ${why}; ` +
        'write the values of a string field as JSON strings',
      { context: { key: f.file.key, line: at.line, column: v.column, value: at.value } },
    );
  }
  return null;
}

function nestedWhy(v: PathValues, read: DuckType): { at: NumberAt; why: string } {
  const { number, object, array, string, integer, boolean } = v.first;
  if (number)
    return {
      at: number,
      why: 'DuckDB reads the number as a double and would store its own text of it (1e3 as 1000.0)',
    };
  if (object ?? array)
    return { at: (object ?? array)!, why: 'DuckDB would store its own text of it' };
  const other = integer ?? boolean;
  if (string) {
    const reason = other
      ? `the field also holds ${other.value} (line ${other.line}), so DuckDB reads it as JSON`
      : 'DuckDB reads the field as JSON';
    return { at: string, why: `${reason}, and would store the text with its quotes` };
  }
  return {
    at: other!,
    why: `DuckDB reads the field as ${renderDuckType(read)} (with the batch's other files) and would store its own text of it`,
  };
}

function spanError(file: LoadFile, at: NumberAt & { column: string }): BadFileError {
  return new BadFileError(
    `[load] ${file.key}: line ${at.line}, column ${JSON.stringify(at.column)}: a JSON object or array that spans lines would not be stored in this string column as written ` +
      '(DuckDB would store its own text of it); write it on one line, or as a JSON string',
    { context: { key: file.key, line: at.line, column: at.column, value: at.value } },
  );
}

function alignError(file: LoadFile, why: string): BadFileError {
  return new BadFileError(
    `[load] ${file.key}: its records could not be matched with the rows DuckDB read (${why}), so its texts could not be kept as written`,
    {
      context: { key: file.key },
    },
  );
}
