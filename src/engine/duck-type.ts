/**
 * DuckDB type names as `DESCRIBE` prints them (`STRUCT(a INTEGER, "b c" VARCHAR[])`,
 * `MAP(VARCHAR, DECIMAL(10,2))`, `INTEGER[3]`, `ENUM('x', 'y')` …) parsed into a small tree,
 * and rendered back in one canonical spelling so two types can be compared as text.
 */
import { ident } from './sql.js';

/** A parsed DuckDB type. Primitive names are canonical upper case (`INTEGER`, not `INT4`). */
export type DuckType =
  | { kind: 'primitive'; name: string }
  | { kind: 'decimal'; precision: number; scale: number }
  | { kind: 'enum'; text: string }
  | { kind: 'union'; text: string }
  | { kind: 'list'; element: DuckType }
  | { kind: 'array'; element: DuckType; size: number }
  | { kind: 'struct'; fields: { name: string; type: DuckType }[] }
  | { kind: 'map'; key: DuckType; value: DuckType };

/** Alternative spellings DuckDB accepts, mapped to the name DESCRIBE prints. */
const ALIASES: Record<string, string> = {
  INT: 'INTEGER',
  INT4: 'INTEGER',
  SIGNED: 'INTEGER',
  INT32: 'INTEGER',
  INT8: 'BIGINT',
  LONG: 'BIGINT',
  INT64: 'BIGINT',
  INT2: 'SMALLINT',
  SHORT: 'SMALLINT',
  INT16: 'SMALLINT',
  INT1: 'TINYINT',
  REAL: 'FLOAT',
  FLOAT4: 'FLOAT',
  FLOAT8: 'DOUBLE',
  BOOL: 'BOOLEAN',
  LOGICAL: 'BOOLEAN',
  STRING: 'VARCHAR',
  TEXT: 'VARCHAR',
  CHAR: 'VARCHAR',
  BPCHAR: 'VARCHAR',
  NVARCHAR: 'VARCHAR',
  BYTEA: 'BLOB',
  BINARY: 'BLOB',
  VARBINARY: 'BLOB',
  TIMESTAMPTZ: 'TIMESTAMP WITH TIME ZONE',
  DATETIME: 'TIMESTAMP',
  TIMESTAMP_US: 'TIMESTAMP',
  TIMETZ: 'TIME WITH TIME ZONE',
  VARINT: 'BIGNUM',
  NUMERIC: 'DECIMAL',
};

/** Thrown for text that is not a DuckDB type name; callers wrap it with the column name. */
export class DuckTypeSyntaxError extends Error {}

/** Parse a DuckDB type name. */
export function parseDuckType(text: string): DuckType {
  const t = text.trim();
  if (t.endsWith(']')) return parseListSuffix(t);
  const m = /^([A-Za-z_][A-Za-z0-9_ ]*?)\s*(?:\(([\s\S]*)\))?$/.exec(t);
  if (!m) {
    if (t === '"NULL"') return { kind: 'primitive', name: 'NULL' };
    throw new DuckTypeSyntaxError(`not a DuckDB type: ${JSON.stringify(text)}`);
  }
  const rawHead = m[1]!.toUpperCase().replace(/\s+/g, ' ');
  const head = ALIASES[rawHead] ?? rawHead;
  const args = m[2];
  switch (head) {
    case 'STRUCT':
      return { kind: 'struct', fields: splitTopLevel(args ?? '').map(parseStructField) };
    case 'MAP': {
      const parts = splitTopLevel(args ?? '');
      if (parts.length !== 2)
        throw new DuckTypeSyntaxError(`MAP needs a key and a value type: ${text}`);
      return { kind: 'map', key: parseDuckType(parts[0]!), value: parseDuckType(parts[1]!) };
    }
    case 'DECIMAL':
      return parseDecimal(args, text);
    case 'ENUM':
      return { kind: 'enum', text: t };
    case 'UNION':
      return { kind: 'union', text: t };
    default:
      // VARCHAR(10) and similar carry a length DuckDB ignores.
      return { kind: 'primitive', name: head };
  }
}

/** `T[]` is a LIST, `T[n]` a fixed-size ARRAY. The suffix never contains `[`, so lastIndexOf is safe. */
function parseListSuffix(t: string): DuckType {
  const open = t.lastIndexOf('[');
  const inner = t.slice(open + 1, -1).trim();
  const element = parseDuckType(t.slice(0, open));
  if (inner === '') return { kind: 'list', element };
  if (!/^\d+$/.test(inner))
    throw new DuckTypeSyntaxError(`bad array size in type ${JSON.stringify(t)}`);
  return { kind: 'array', element, size: Number(inner) };
}

function parseDecimal(args: string | undefined, text: string): DuckType {
  if (args === undefined) return { kind: 'decimal', precision: 18, scale: 3 }; // DuckDB's default
  const parts = args.split(',').map((p) => p.trim());
  const precision = Number(parts[0]);
  const scale = parts.length > 1 ? Number(parts[1]) : 0;
  if (!Number.isInteger(precision) || !Number.isInteger(scale)) {
    throw new DuckTypeSyntaxError(`bad DECIMAL arguments: ${text}`);
  }
  return { kind: 'decimal', precision, scale };
}

/** One `name TYPE` entry of a STRUCT; the name is bare or double-quoted with `""` escapes. */
function parseStructField(entry: string): { name: string; type: DuckType } {
  const e = entry.trim();
  if (e.startsWith('"')) {
    let i = 1;
    let name = '';
    for (;;) {
      const q = e.indexOf('"', i);
      if (q < 0)
        throw new DuckTypeSyntaxError(
          `unterminated field name in STRUCT entry ${JSON.stringify(entry)}`,
        );
      name += e.slice(i, q);
      if (e[q + 1] === '"') {
        name += '"';
        i = q + 2;
        continue;
      }
      return { name, type: parseDuckType(e.slice(q + 1)) };
    }
  }
  const m = /^(\S+)\s+([\s\S]+)$/.exec(e);
  if (!m) throw new DuckTypeSyntaxError(`bad STRUCT entry ${JSON.stringify(entry)}`);
  return { name: m[1]!, type: parseDuckType(m[2]!) };
}

/** Split on commas outside parentheses and outside '…' / "…" quotes. */
function splitTopLevel(s: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quote: string | null = null;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (quote) {
      if (c === quote) quote = null; // a doubled quote re-enters on the next character
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) {
      parts.push(s.slice(start, i));
      start = i + 1;
    }
  }
  if (s.trim() !== '') parts.push(s.slice(start));
  return parts;
}

/** The canonical text of a type: field names always quoted, aliases resolved. */
export function renderDuckType(t: DuckType): string {
  switch (t.kind) {
    case 'primitive':
      return t.name === 'NULL' ? '"NULL"' : t.name;
    case 'decimal':
      return `DECIMAL(${t.precision},${t.scale})`;
    case 'enum':
    case 'union':
      return t.text;
    case 'list':
      return `${renderDuckType(t.element)}[]`;
    case 'array':
      return `${renderDuckType(t.element)}[${t.size}]`;
    case 'struct':
      return `STRUCT(${t.fields.map((f) => `${ident(f.name)} ${renderDuckType(f.type)}`).join(', ')})`;
    case 'map':
      return `MAP(${renderDuckType(t.key)}, ${renderDuckType(t.value)})`;
  }
}
