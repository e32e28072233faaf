/**
 * A JSON file's date and timestamp texts are stored as they spell them, or the batch is refused.
 * DuckDB's JSON reader detects such texts and converts them before tidemark sees them: one with an
 * offset (`12:30:00+02:00`) into its UTC time (a wall clock would be stored shifted), and loosely
 * spelt ones (` 2026-01-05`, `2026-01-05 1:2:3`) as what they resemble. Where DuckDB read a
 * top-level column of a JSON file as a date or a timestamp, that column's texts are read again
 * (./json-numbers.ts) and each must spell a value of the column's type by the rule CSV text
 * follows (./text-cast.ts); the first that does not fails the batch naming file, line and column.
 * A text DuckDB left as text is converted by that rule anyway (./load-conform.ts).
 * Inside a struct, list or map the same holds: for a file whose columns hold such a leaf, one more
 * read_json reads those leaves as text (VARCHAR) and the first that does not spell its value names
 * file, line (or row) and path.
 */
import type { DataType, StructType } from '../delta/schema.js';
import { BadFileError } from '../errors.js';
import { parseDuckType, renderDuckType, type DuckType } from './duck-type.js';
import type { DuckSession } from './duckdb.js';
import type { LoadFile } from './file-select.js';
import { recordTexts, type RecordText } from './json-numbers.js';
import type { FileColumn } from './load-conform.js';
import { compressionOf } from './source-format.js';
import { ident, jsonRows, str } from './sql.js';
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
 * and `2026-01-05 ` as 2026-01-05, and an offset into a wall clock shifted. Also inside structs,
 * lists and maps (`nestedLeaves`). A column or field the schema lacks keeps DuckDB's type: a date
 * or an instant.
 */
export async function refuseShiftedWallClocks(
  session: DuckSession,
  jsonFiles: Iterable<LoadFile>,
  described: ReadonlyMap<LoadFile, readonly FileColumn[]>,
  schema: StructType | undefined,
): Promise<void> {
  const fieldOf = new Map<string, DataType>();
  for (const f of schema?.fields ?? []) fieldOf.set(f.name.toLowerCase(), f.type);
  for (const file of jsonFiles) {
    const columns = new Map<string, string>();
    const nested: NestedColumn[] = [];
    for (const c of described.get(file) ?? []) {
      const type = parseDuckType(c.type);
      const field = fieldOf.get(c.name.toLowerCase());
      if (type.kind === 'primitive') {
        const rule = ruleFor(type, field);
        if (rule) columns.set(c.name.toLowerCase(), rule);
        continue;
      }
      const walked = nestedLeaves(type, field, c.name, 0);
      if (walked) nested.push({ name: c.name, ...walked });
    }
    if (nested.length > 0) {
      const bad = await firstMisspeltLeaf(session, file, nested);
      if (bad) throw misspelt(file, await lineOf(session, file, bad), bad.rule);
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

/**
 * The rule a leaf DuckDB typed `type` follows, by `field`, its type in the batch's schema
 * (undefined: the schema lacks it, DuckDB's type stands); null when its texts are not checked here.
 */
function ruleFor(type: DuckType, field: DataType | undefined): string | null {
  if (type.kind !== 'primitive' || (!DETECTED.has(type.name) && type.name !== 'DATE')) return null;
  if (field === undefined) return type.name === 'DATE' ? 'date' : 'timestamp';
  return typeof field === 'string' && field in RULES ? field : null;
}

/** A date or timestamp leaf inside a column, and the rule its texts follow. */
interface NestedLeaf {
  /** The path as errors name it (./json-numbers.ts): fields dotted, elements and map values under their parent. */
  column: string;
  rule: string;
  /** SQL of the list of the leaf's texts in the value `expr` (of the read type). */
  texts: (expr: string) => string;
}

/** A column with such leaves, and the type it is read in: the leaves' paths only, the leaves VARCHAR. */
interface NestedColumn {
  name: string;
  read: DuckType;
  leaves: NestedLeaf[];
}

/**
 * The date and timestamp leaves of a struct, list or map DuckDB typed `type` whose texts are
 * checked (`field`: its type in the batch's schema, undefined when the schema lacks it), or null.
 * A value the schema holds as another kind (a string column keeps the file's text) is not checked here.
 */
function nestedLeaves(
  type: DuckType,
  field: DataType | undefined,
  column: string,
  depth: number,
): { read: DuckType; leaves: NestedLeaf[] } | null {
  const v = `__tm_v${depth}`;
  const kindOf = (want: 'struct' | 'array' | 'map') =>
    field === undefined || (typeof field !== 'string' && field.type === want);
  switch (type.kind) {
    case 'primitive': {
      const rule = ruleFor(type, field);
      if (!rule) return null;
      return {
        read: { kind: 'primitive', name: 'VARCHAR' },
        leaves: [{ column, rule, texts: (e) => `[${e}]` }],
      };
    }
    case 'struct': {
      if (!kindOf('struct')) return null;
      const fields: { name: string; type: DuckType }[] = [];
      const leaves: NestedLeaf[] = [];
      for (const f of type.fields) {
        const sub =
          field !== undefined && typeof field !== 'string' && field.type === 'struct'
            ? field.fields.find((g) => g.name.toLowerCase() === f.name.toLowerCase())
            : undefined;
        const walked = nestedLeaves(f.type, sub?.type, `${column}.${f.name}`, depth + 1);
        if (!walked) continue;
        fields.push({ name: f.name, type: walked.read });
        for (const l of walked.leaves)
          leaves.push({ ...l, texts: (e) => l.texts(`struct_extract(${e}, ${str(f.name)})`) });
      }
      return fields.length === 0 ? null : { read: { kind: 'struct', fields }, leaves };
    }
    case 'list':
    case 'array': {
      if (!kindOf('array')) return null;
      const element =
        field !== undefined && typeof field !== 'string' && field.type === 'array'
          ? field.elementType
          : undefined;
      const walked = nestedLeaves(type.element, element, column, depth + 1);
      if (!walked) return null;
      return {
        read: { ...type, element: walked.read },
        leaves: walked.leaves.map((l) => ({
          ...l,
          texts: (e) => `flatten(list_transform(${e}, lambda ${v}: ${l.texts(v)}))`,
        })),
      };
    }
    case 'map': {
      // JSON keys are text; the values are checked.
      if (!kindOf('map')) return null;
      const value =
        field !== undefined && typeof field !== 'string' && field.type === 'map'
          ? field.valueType
          : undefined;
      const walked = nestedLeaves(type.value, value, column, depth + 1);
      if (!walked) return null;
      return {
        read: { ...type, value: walked.read },
        leaves: walked.leaves.map((l) => ({
          ...l,
          texts: (e) => `flatten(list_transform(map_values(${e}), lambda ${v}: ${l.texts(v)}))`,
        })),
      };
    }
    default:
      return null;
  }
}

/** A misspelt leaf text and the row it is in (the file's records counted from 1). */
interface LeafText {
  row: number;
  column: string;
  top: string;
  text: string;
  rule: string;
}

/**
 * The first text of `columns`' leaves in `file` (by row, then leaf, then element) that does not
 * spell a value by its leaf's rule, or null: one read_json of those columns, the leaves as text.
 */
async function firstMisspeltLeaf(
  session: DuckSession,
  file: LoadFile,
  columns: readonly NestedColumn[],
): Promise<LeafText | null> {
  const compression = compressionOf(file.localPath);
  const spec = columns.map((c) => `${str(c.name)}: ${str(renderDuckType(c.read))}`).join(', ');
  const read =
    `read_json(${str(file.localPath)}, format = ${file.format === 'ndjson' ? "'newline_delimited'" : "'auto'"}, ` +
    `columns = {${spec}}, hive_partitioning = false${compression === 'none' ? '' : `, compression = ${str(compression)}`})`;
  const leaves = columns.flatMap((c) => c.leaves.map((l) => ({ top: c.name, ...l })));
  const branches = leaves.map((l, k) => {
    const texts = `SELECT __tm_row, ${l.texts(`__tm_f.${ident(l.top)}`)} AS __tm_vs FROM __tm_f`;
    const each = `SELECT ${k} AS __tm_k, __tm_row, unnest(__tm_vs) AS __tm_t, unnest(range(len(__tm_vs))) AS __tm_i FROM (${texts})`;
    const rule = textValueSql('__tm_t', parseDuckType(RULES[l.rule]!.duck));
    return `SELECT * FROM (${each}) WHERE __tm_t IS NOT NULL AND ${rule} IS NULL`;
  });
  const row = await session.one(
    `WITH __tm_f AS MATERIALIZED (SELECT row_number() OVER () AS __tm_row, * FROM ${read}) ` +
      `SELECT __tm_k, __tm_row, __tm_t FROM (${branches.join(' UNION ALL ')}) ORDER BY __tm_row, __tm_k, __tm_i LIMIT 1`,
  );
  if (!row) return null;
  const leaf = leaves[Number(row['__tm_k'])]!;
  return {
    row: Number(row['__tm_row']),
    column: leaf.column,
    top: leaf.top,
    text: String(row['__tm_t']),
    rule: leaf.rule,
  };
}

/** `bad` with the line its column's value starts on (0 when that value spans lines: the row names it). */
async function lineOf(session: DuckSession, file: LoadFile, bad: LeafText): Promise<RecordText> {
  const { texts } = await recordTexts(session, file, new Set([bad.top.toLowerCase()]));
  const at = texts.find((t) => t.row === bad.row);
  return { row: bad.row, line: at?.line ?? 0, column: bad.column, text: bad.text };
}

function misspelt(file: LoadFile, bad: RecordText, rule: string): BadFileError {
  const where = bad.line > 0 ? `line ${bad.line}` : `row ${bad.row}`;
  const context = {
    key: file.key,
    ...(bad.line > 0 ? { line: bad.line } : {}),
    row: bad.row,
    column: bad.column,
    value: bad.text,
  };
  if (rule === 'timestamp_ntz')
    return new BadFileError(
      `[load] ${file.key}: ${where}, column ${JSON.stringify(bad.column)}: the timestamp ${JSON.stringify(bad.text)} is not a wall clock ` +
        '(it has a zone or offset, or is not a timestamp), and the column is timestamp_ntz; write the local time without an offset, ' +
        'or make the column a timestamp (an instant)',
      { context },
    );
  return new BadFileError(
    `[load] ${file.key}: ${where}, column ${JSON.stringify(bad.column)}: the text ${JSON.stringify(bad.text)} does not spell ${RULES[rule]!.what} exactly ` +
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
