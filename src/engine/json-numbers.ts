/**
 * JSON numbers as the file spells them. DuckDB's JSON reader parses every number with a fraction
 * or an exponent, and every integer beyond 64 bits, into a double before tidemark sees it, and
 * infers such a column DOUBLE: `12345678901234567890` and `…891` would become one value,
 * `0.12345678901234567` would lose its last digits, and a later checked cast into the table's
 * DECIMAL could not tell (the double casts back to itself). So the load reads the text of each
 * JSON file once more, number by number, and refuses, naming file, line and column, a number a
 * double does not give back exactly:
 *
 *   - an integer beyond the 64-bit range (DuckDB reads it as a double);
 *   - a number with a fraction or an exponent of more than 15 significant digits (DBL_DIG), or
 *     out of a double's range;
 *   - an integer of more than 15 digits in a column that also holds numbers with a fraction or an
 *     exponent (the column is read as DOUBLE): in one file, or, for a column the table does not
 *     have yet, in the batch's files together (their types are combined).
 *
 * Numbers written as JSON strings are text and convert by the exact rules of ./text-cast.ts (into
 * a column `source.columns` declares, or the table's), which keeps every digit.
 * A JSON lexeme never spans a line (raw line breaks are not allowed inside strings), so files are
 * read line by line: plain and gzip files as a stream, zstd files through DuckDB's decompression.
 */
import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { promisify } from 'node:util';
import { createInterface } from 'node:readline';
import { createGunzip, gunzip } from 'node:zlib';
import { BadFileError } from '../errors.js';
import type { DuckSession } from './duckdb.js';
import type { LoadFile } from './file-select.js';
import { compressionOf } from './source-format.js';
import { str } from './sql.js';

/** A number of a file, where it stands. */
export interface NumberAt {
  line: number;
  value: string;
}

/** What the numbers of one column (a dotted path for nested fields: `obj.x`) hold in one file. */
export interface ColumnNumbers {
  /** The first number no double holds exactly, and why. */
  inexact: (NumberAt & { why: string }) | null;
  /** The first number with a fraction or an exponent (DuckDB reads the column as DOUBLE). */
  fractional: NumberAt | null;
  /** The first integer of more than 15 significant digits (exact only as an integer). */
  longInteger: NumberAt | null;
}

const gunzipAsync = promisify(gunzip);
/** Files up to this size (as stored) are read whole, larger ones as a stream. */
const WHOLE_FILE_BYTES = 4 * 2 ** 20;

/** Significant digits a double gives back exactly (DBL_DIG). */
const DOUBLE_DIGITS = 15;
const INT64_MAX = 9_223_372_036_854_775_807n;
const INT64_MIN = -9_223_372_036_854_775_808n;

/**
 * What one reading of a JSON or NDJSON file's text finds: the numbers of every column, by path,
 * and its records' top-level keys in order of first appearance (./bulk-text.ts groups files by them).
 */
export async function scanJson(session: DuckSession, file: LoadFile): Promise<{ numbers: Map<string, ColumnNumbers>; keys: string[] }> {
  const lexer = new NumberLexer();
  const result = () => ({ numbers: lexer.columns, keys: [...lexer.keys] });
  if (compressionOf(file.localPath) === 'zstd') {
    // Node 20 has no zstd: DuckDB decompresses, one line per row (JSON holds no raw \x01).
    const rows = await session.all(
      `SELECT l FROM read_csv(${str(file.localPath)}, columns = {'l': 'VARCHAR'}, delim = chr(1), quote = '', escape = '', header = false, ` +
        `compression = 'zstd', max_line_size = 1073741824, skip_blank_lines = false)`,
    );
    rows.forEach((r, i) => lexer.line(String(r['l'] ?? ''), i + 1));
    return result();
  }
  if ((await stat(file.localPath)).size <= WHOLE_FILE_BYTES) {
    // A small file in one read: a stream and a line reader per file cost more than its lexing.
    const bytes = await readFile(file.localPath);
    const text = (compressionOf(file.localPath) === 'gzip' ? await gunzipAsync(bytes) : bytes).toString('utf8');
    const lines = text.split(/\r\n|\n|\r/);
    if (lines.at(-1) === '') lines.pop();
    lines.forEach((l, i) => lexer.line(l, i + 1));
    return result();
  }
  const raw = createReadStream(file.localPath);
  const input = compressionOf(file.localPath) === 'gzip' ? raw.pipe(createGunzip()) : raw;
  let n = 0;
  try {
    for await (const text of createInterface({ input, crlfDelay: Infinity })) lexer.line(text, ++n);
  } finally {
    raw.destroy();
  }
  return result();
}

/** The first number of `numbers` (one file's) that would not be stored as the file spells it, as a BadFileError. */
export function inexactNumber(file: LoadFile, numbers: ReadonlyMap<string, ColumnNumbers>): BadFileError | null {
  for (const [column, c] of numbers) {
    if (c.inexact) return numberError(file.key, column, c.inexact, c.inexact.why);
    if (c.fractional && c.longInteger) return numberError(file.key, column, c.longInteger, mixedWhy(c.fractional, 'on'));
  }
  return null;
}

/**
 * Across the batch's files, for top-level columns the table lacks (their types are combined): an
 * integer of more than 15 digits in one file and a fractional number in another, as a BadFileError.
 */
export function inexactAcrossFiles(files: readonly { file: LoadFile; numbers: ReadonlyMap<string, ColumnNumbers> }[], known: ReadonlySet<string>): BadFileError | null {
  const fractional = new Map<string, { key: string; at: NumberAt }>();
  for (const f of files) {
    for (const [column, c] of f.numbers) if (c.fractional && !fractional.has(column.toLowerCase())) fractional.set(column.toLowerCase(), { key: f.file.key, at: c.fractional });
  }
  for (const f of files) {
    for (const [column, c] of f.numbers) {
      const other = fractional.get(column.toLowerCase());
      if (column.includes('.') || known.has(column.toLowerCase()) || !c.longInteger || !other) continue;
      return numberError(f.file.key, column, c.longInteger, mixedWhy(other.at, `in ${other.key} on`));
    }
  }
  return null;
}

function mixedWhy(fractional: NumberAt, where: string): string {
  return `the column also holds ${fractional.value} (${where} line ${fractional.line}), so it is read as DOUBLE, which holds about 15 digits`;
}

function numberError(key: string, column: string, at: NumberAt, why: string): BadFileError {
  return new BadFileError(
    `[load] ${key}: line ${at.line}, column ${JSON.stringify(column)}: the JSON number ${at.value} would not be stored as written: ${why}; ` +
      'write it as a JSON string (and declare the column, e.g. decimal(38,0), in source.columns) to keep every digit',
    { context: { key, line: at.line, column, value: at.value } },
  );
}

/** Why a double does not hold `lexeme` exactly, or null when it does. */
export function doubleLoss(lexeme: string): string | null {
  const [mantissa = '', exponent] = lexeme.toLowerCase().split('e');
  const digits = mantissa.replace('-', '').replace('.', '').replace(/^0+/, '');
  if (exponent === undefined && !mantissa.includes('.')) {
    const v = BigInt(lexeme);
    return v > INT64_MAX || v < INT64_MIN ? 'it is beyond the 64-bit integer range, so DuckDB reads it as a double' : null;
  }
  const significant = digits.replace(/0+$/, '');
  if (significant.length > DOUBLE_DIGITS) return `DuckDB reads numbers with a fraction or an exponent as doubles, which hold ${DOUBLE_DIGITS} significant digits, not its ${significant.length}`;
  const value = Number(lexeme);
  if (!Number.isFinite(value) || (value === 0 && significant !== '') || (value !== 0 && Math.abs(value) < 2.2250738585072014e-308)) {
    return "it is outside a double's range, as which DuckDB reads it";
  }
  return null;
}

type Frame = { kind: 'object'; path: string; key: string | null } | { kind: 'array'; path: string };

/** A JSON lexer fed line by line: it keeps the path of every number and records the facts above. */
class NumberLexer {
  readonly columns = new Map<string, ColumnNumbers>();
  /** The records' top-level keys, in order of first appearance. */
  readonly keys = new Set<string>();
  private readonly stack: Frame[] = [];
  /** A top-level array holds the records (JSON's array format); else the top-level values are. */
  private arrayOfRecords: boolean | null = null;

  line(text: string, lineNo: number): void {
    let i = 0;
    while (i < text.length) {
      const ch = text[i]!;
      if (ch === ' ' || ch === '\t' || ch === '\r' || ch === ',' || ch === ':') {
        i++;
      } else if (ch === '{' || ch === '[') {
        if (this.arrayOfRecords === null && this.stack.length === 0) this.arrayOfRecords = ch === '[';
        const path = this.valuePath();
        this.stack.push(ch === '{' ? { kind: 'object', path, key: null } : { kind: 'array', path });
        i++;
      } else if (ch === '}' || ch === ']') {
        this.stack.pop();
        this.valueDone();
        i++;
      } else if (ch === '"') {
        const end = stringEnd(text, i);
        const top = this.stack.at(-1);
        if (top?.kind === 'object' && top.key === null) {
          top.key = keyText(text.slice(i, end));
          if (this.stack.length === (this.arrayOfRecords ? 2 : 1)) this.keys.add(top.key);
        } else this.valueDone();
        i = end;
      } else if (ch === '-' || (ch >= '0' && ch <= '9')) {
        const m = NUMBER.exec(text.slice(i));
        const lexeme = m ? m[0] : ch;
        this.number(lexeme, lineNo);
        this.valueDone();
        i += lexeme.length;
      } else {
        // true, false, null (or bytes DuckDB's reader will refuse)
        while (i < text.length && /[a-zA-Z]/.test(text[i]!)) i++;
        if (!/[a-zA-Z]/.test(ch)) i++;
        this.valueDone();
      }
    }
  }

  /** The path of the value that starts now: the record's columns, dotted for nested fields. */
  private valuePath(): string {
    const top = this.stack.at(-1);
    if (!top) return '';
    const recordLevel = this.arrayOfRecords ? 1 : 0;
    if (this.stack.length <= recordLevel) return '';
    if (top.kind === 'array') return top.path;
    const key = top.key ?? '';
    return top.path === '' ? key : `${top.path}.${key}`;
  }

  /** A value of the current object ended: its next string is a key again. */
  private valueDone(): void {
    const top = this.stack.at(-1);
    if (top?.kind === 'object') top.key = null;
  }

  private number(lexeme: string, line: number): void {
    const column = this.valuePath();
    if (column === '') return;
    let c = this.columns.get(column);
    if (!c) this.columns.set(column, (c = { inexact: null, fractional: null, longInteger: null }));
    const fractional = /[.eE]/.test(lexeme);
    if (c.inexact === null) {
      const why = doubleLoss(lexeme);
      if (why !== null) c.inexact = { line, value: lexeme, why };
    }
    if (fractional) c.fractional ??= { line, value: lexeme };
    else if (lexeme.replace('-', '').replace(/^0+/, '').length > DOUBLE_DIGITS) c.longInteger ??= { line, value: lexeme };
  }
}

/** A key's text (a malformed one as written: DuckDB's reader refuses the file anyway). */
function keyText(quoted: string): string {
  try {
    return JSON.parse(quoted) as string;
  } catch {
    return quoted.slice(1, -1);
  }
}

const NUMBER = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/;

/** The index after the closing quote of the string starting at `start` (or the line's end). */
function stringEnd(text: string, start: number): number {
  let i = start + 1;
  while (i < text.length) {
    const ch = text[i]!;
    if (ch === '\\') i += 2;
    else if (ch === '"') return i + 1;
    else i++;
  }
  return text.length;
}
