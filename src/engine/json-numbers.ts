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
 * Into string columns every number is kept as its text instead (./json-texts.ts, from what this
 * lexer records of every path: the kinds of values it holds, and each record's texts).
 * Numbers written as JSON strings are text and convert by the exact rules of ./text-cast.ts (into
 * a column `source.columns` declares, or the table's), which keeps every digit.
 * A JSON lexeme never spans a line (raw line breaks are not allowed inside strings), so files are
 * read line by line (./file-lines.ts).
 */
import { BadFileError } from '../errors.js';
import type { DuckSession } from './duckdb.js';
import type { LoadFile } from './file-select.js';
import { forEachLine } from './file-lines.js';

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

/** Significant digits a double gives back exactly (DBL_DIG). */
const DOUBLE_DIGITS = 15;
/** The smallest positive normal double (DBL_MIN). */
const MIN_NORMAL = 2.2250738585072014e-308;
const INT64_MAX = 9_223_372_036_854_775_807n;
const INT64_MIN = -9_223_372_036_854_775_808n;

/**
 * The first number of `numbers` (one file's) that would not be stored as the file spells it, as a
 * BadFileError. Top-level columns of `text` (lower case: string columns of the table or declared)
 * store the file's text of every number, also inside their objects and arrays (./json-texts.ts), so
 * none of theirs is refused.
 */
export function inexactNumber(
  file: LoadFile,
  numbers: ReadonlyMap<string, ColumnNumbers>,
  text: ReadonlySet<string> = new Set(),
): BadFileError | null {
  for (const [column, c] of numbers) {
    if (text.has(column.toLowerCase()) || text.has(column.split('.')[0]!.toLowerCase())) continue;
    if (c.inexact) return numberError(file.key, column, c.inexact, c.inexact.why);
    if (c.fractional && c.longInteger)
      return numberError(file.key, column, c.longInteger, mixedWhy(c.fractional, 'on'));
  }
  return null;
}

/**
 * Across the batch's files, for top-level columns the table lacks (their types are combined): an
 * integer of more than 15 digits in one file and a fractional number in another, as a BadFileError.
 */
export function inexactAcrossFiles(
  files: readonly { file: LoadFile; numbers: ReadonlyMap<string, ColumnNumbers> }[],
  known: ReadonlySet<string>,
): BadFileError | null {
  const fractional = new Map<string, { key: string; at: NumberAt }>();
  for (const f of files) {
    for (const [column, c] of f.numbers)
      if (c.fractional && !fractional.has(column.toLowerCase()))
        fractional.set(column.toLowerCase(), { key: f.file.key, at: c.fractional });
  }
  for (const f of files) {
    for (const [column, c] of f.numbers) {
      const other = fractional.get(column.toLowerCase());
      if (column.includes('.') || known.has(column.toLowerCase()) || !c.longInteger || !other)
        continue;
      return numberError(
        f.file.key,
        column,
        c.longInteger,
        mixedWhy(other.at, `in ${other.key} on`),
      );
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
  return surelyExact(lexeme) ? null : lossOf(lexeme);
}

/**
 * True for the common numbers `lossOf` finds exact, told from their length alone (most of a file's
 * numbers; `lossOf` allocates): an integer of at most 18 digits lies within 64 bits; a number with
 * a fraction, no exponent and at most 15 digits has at most 15 significant ones, and lies between
 * 1e-15 and 1e15, in a double's normal range.
 */
function surelyExact(lexeme: string): boolean {
  let digits = lexeme.length;
  let point = false;
  for (let i = 0; i < lexeme.length; i++) {
    const c = lexeme.charCodeAt(i);
    if (c >= 48 && c <= 57) continue;
    if (c === 46 && !point) point = true;
    else if (!(c === 45 && i === 0)) return false; // an exponent, or not a number
    digits--;
  }
  return digits > 0 && digits <= (point ? DOUBLE_DIGITS : 18);
}

function lossOf(lexeme: string): string | null {
  const [mantissa = '', exponent] = lexeme.toLowerCase().split('e');
  const digits = mantissa.replace('-', '').replace('.', '').replace(/^0+/, '');
  if (exponent === undefined && !mantissa.includes('.')) {
    const v = BigInt(lexeme);
    return v > INT64_MAX || v < INT64_MIN
      ? 'it is beyond the 64-bit integer range, so DuckDB reads it as a double'
      : null;
  }
  const significant = digits.replace(/0+$/, '');
  if (significant.length > DOUBLE_DIGITS)
    return `DuckDB reads numbers with a fraction or an exponent as doubles, which hold ${DOUBLE_DIGITS} significant digits, not its ${significant.length}`;
  const value = Number(lexeme);
  if (!Number.isFinite(value)) return "it is beyond a double's range, as which DuckDB reads it";
  // Below the smallest normal double, a double holds fewer digits (a subnormal), or none (0).
  if ((value === 0 && significant !== '') || (value !== 0 && Math.abs(value) < MIN_NORMAL))
    return "it is smaller than a double's smallest normal value (2.2250738585072014e-308), below which a double, as which DuckDB reads it, keeps fewer digits or none";
  return null;
}

/** What a path of a file holds (the first value of each kind, where it stands); the input of ./json-texts.ts. */
export interface PathValues {
  /** The path's segments: keys, and ELEMENT for the elements of an array. */
  segments: string[];
  /** The path as error messages show it (`obj.x`, elements under their array's name). */
  column: string;
  first: Partial<Record<ValueKind, NumberAt>>;
}

/**
 * Kinds of JSON values. `integer`: an integer DuckDB prints back as the file spells it (within
 * 64 bits; not `-0`); `number`: any other number (DuckDB prints its double: `1e3` as `1000.0`).
 */
export type ValueKind = 'integer' | 'number' | 'string' | 'boolean' | 'object' | 'array';

/** The segment of an array's elements in `PathValues.segments`. */
export const ELEMENT = '\u0002[]';
const SEP = '\u0001';

/** A top-level value of a record, as the file spells it (`text`: a string's value, else the JSON text). */
export interface RecordText {
  /** The record's 1-based position in the file (DuckDB's row order: `_source_row`). */
  row: number;
  /** The 1-based line the value starts on. */
  line: number;
  /** The key as the file spells it. */
  column: string;
  text: string;
}

/**
 * What one reading of a JSON or NDJSON file's text finds: the numbers of every column, by path;
 * what every path holds; its records' top-level keys in order of first appearance
 * (./bulk-text.ts groups files by them); how many records it has.
 */
export interface JsonScan {
  numbers: Map<string, ColumnNumbers>;
  values: Map<string, PathValues>;
  keys: string[];
  records: number;
}

/** The facts of a JSON or NDJSON file (see JsonScan). */
export async function scanJson(session: DuckSession, file: LoadFile): Promise<JsonScan> {
  const lexer = new NumberLexer(null);
  await forEachLine(session, file, (text, line) => lexer.line(text, line));
  return {
    numbers: lexer.columns,
    values: lexer.values,
    keys: [...lexer.keys],
    records: lexer.records,
  };
}

/**
 * The texts of the top-level `columns` (lower case) of every record of a file, as the file spells
 * them (numbers, booleans, objects and arrays as their JSON text; strings as their value);
 * `spansLines` is the first object or array of those columns that spans lines, whose text is not kept.
 */
export async function recordTexts(
  session: DuckSession,
  file: LoadFile,
  columns: ReadonlySet<string>,
): Promise<{
  texts: RecordText[];
  records: number;
  spansLines: (NumberAt & { column: string }) | null;
}> {
  const lexer = new NumberLexer(columns);
  await forEachLine(session, file, (text, line) => lexer.line(text, line));
  return { texts: lexer.texts, records: lexer.records, spansLines: lexer.spansLines };
}

/** A path of the file's records: what it holds, its numbers' facts, and the paths below it. */
interface PathNode extends PathValues {
  children: Map<string, PathNode>;
  numbers: ColumnNumbers | null;
}

type Frame = {
  kind: 'object' | 'array';
  /** The path of the frame's values' parent (the record's root for a record). */
  node: PathNode;
  key: string | null;
  /** Where a captured top-level value started (recordTexts). */
  capture?: { line: number; index: number; column: string };
};

/** Integers DuckDB reads as 64-bit integers: no fraction, no exponent, not `-0`, within 64 bits (within 18 digits always). */
const INTEGER = /^-?[1-9][0-9]*$|^0$/;
const isInteger = (lexeme: string): boolean =>
  INTEGER.test(lexeme) && (lexeme.length <= 18 || doubleLoss(lexeme) === null);

/** A JSON lexer fed line by line: it keeps the path of every value and records the facts above. */
class NumberLexer {
  readonly columns = new Map<string, ColumnNumbers>();
  /** The records' top-level keys, in order of first appearance. */
  readonly keys = new Set<string>();
  readonly values = new Map<string, PathValues>();
  readonly texts: RecordText[] = [];
  spansLines: (NumberAt & { column: string }) | null = null;
  records = 0;
  private readonly root: PathNode = {
    segments: [],
    column: '',
    first: {},
    children: new Map(),
    numbers: null,
  };
  private readonly stack: Frame[] = [];
  /** A top-level array holds the records (JSON's array format); else the top-level values are. */
  private arrayOfRecords: boolean | null = null;
  /** Set by valueAt: the column whose text is kept when the value is a captured top-level value. */
  private capturing: string | null = null;

  /** `capture`: top-level columns (lower case) whose texts are kept, or null. */
  constructor(private readonly capture: ReadonlySet<string> | null) {}

  line(text: string, lineNo: number): void {
    let i = 0;
    while (i < text.length) {
      const code = text.charCodeAt(i);
      // space, tab, CR, comma, colon
      if (code === 32 || code === 9 || code === 13 || code === 44 || code === 58) {
        i++;
        continue;
      }
      const ch = text[i]!;
      if (ch === '{' || ch === '[') {
        if (this.arrayOfRecords === null && this.stack.length === 0)
          this.arrayOfRecords = ch === '[';
        const node =
          this.valueAt(ch === '{' ? 'object' : 'array', lineNo, text, i, i + 1) ?? this.root;
        const frame: Frame = { kind: ch === '{' ? 'object' : 'array', node, key: null };
        if (this.capturing !== null)
          frame.capture = { line: lineNo, index: i, column: this.capturing };
        this.stack.push(frame);
        i++;
      } else if (ch === '}' || ch === ']') {
        const frame = this.stack.pop();
        if (frame?.capture)
          this.captured(frame.capture, lineNo, text.slice(frame.capture.index, i + 1));
        this.valueDone();
        i++;
      } else if (ch === '"') {
        const end = stringEnd(text, i);
        const top = this.stack.at(-1);
        if (top?.kind === 'object' && top.key === null) {
          top.key = keyText(text.slice(i, end));
          if (this.stack.length === (this.arrayOfRecords ? 2 : 1)) this.keys.add(top.key);
        } else {
          this.valueAt('string', lineNo, text, i, end);
          if (this.capturing !== null)
            this.texts.push({
              row: this.records + 1,
              line: lineNo,
              column: this.capturing,
              text: keyText(text.slice(i, end)),
            });
          this.valueDone();
        }
        i = end;
      } else if (ch === '-' || (ch >= '0' && ch <= '9')) {
        NUMBER.lastIndex = i;
        const m = NUMBER.exec(text);
        const lexeme = m ? m[0] : ch;
        const node = this.valueAt(
          isInteger(lexeme) ? 'integer' : 'number',
          lineNo,
          text,
          i,
          i + lexeme.length,
        );
        if (this.capturing !== null)
          this.texts.push({
            row: this.records + 1,
            line: lineNo,
            column: this.capturing,
            text: lexeme,
          });
        if (node) this.number(node, lexeme, lineNo);
        this.valueDone();
        i += lexeme.length;
      } else {
        // true, false, null (or bytes DuckDB's reader will refuse)
        const start = i;
        while (i < text.length && isLetter(text.charCodeAt(i))) i++;
        if (!isLetter(code)) i++;
        const word = text.slice(start, i);
        if (word === 'true' || word === 'false') {
          this.valueAt('boolean', lineNo, text, start, i);
          if (this.capturing !== null)
            this.texts.push({
              row: this.records + 1,
              line: lineNo,
              column: this.capturing,
              text: word,
            });
        }
        this.valueDone();
      }
    }
  }

  /**
   * A value of `kind` starts (its text: `text` from `start` to `end`): its path, with the kind
   * recorded, or null for a record itself; `capturing` says whether its text is kept.
   */
  private valueAt(
    kind: ValueKind,
    line: number,
    text: string,
    start: number,
    end: number,
  ): PathNode | null {
    this.capturing = null;
    const top = this.stack.at(-1);
    const recordLevel = this.arrayOfRecords ? 1 : 0;
    if (!top || this.stack.length <= recordLevel) return null;
    const segment = top.kind === 'array' ? ELEMENT : (top.key ?? '');
    const parent = top.node;
    let node = parent.children.get(segment);
    if (!node) {
      const column =
        top.kind === 'array'
          ? parent.column
          : parent.column === ''
            ? segment
            : `${parent.column}.${segment}`;
      node = {
        segments: [...parent.segments, segment],
        column,
        first: {},
        children: new Map(),
        numbers: null,
      };
      parent.children.set(segment, node);
      this.values.set(node.segments.join(SEP), node);
    }
    node.first[kind] ??= {
      line,
      value: end - start > 200 ? `${text.slice(start, start + 200)}…` : text.slice(start, end),
    };
    if (
      this.capture !== null &&
      this.stack.length === recordLevel + 1 &&
      top.kind === 'object' &&
      this.capture.has(segment.toLowerCase())
    )
      this.capturing = segment;
    return node;
  }

  /** A captured object or array ended: its text, when it stood on one line. */
  private captured(
    at: { line: number; index: number; column: string },
    line: number,
    text: string,
  ): void {
    if (at.line === line) this.texts.push({ row: this.records + 1, line, column: at.column, text });
    else this.spansLines ??= { line: at.line, value: text.slice(0, 40), column: at.column };
  }

  /** A value of the current object ended: its next string is a key again; a value at record level is a record. */
  private valueDone(): void {
    const top = this.stack.at(-1);
    if (top?.kind === 'object') top.key = null;
    if (this.stack.length === (this.arrayOfRecords ? 1 : 0)) this.records++;
  }

  private number(node: PathNode, lexeme: string, line: number): void {
    let c = node.numbers;
    if (!c) {
      // Elements are reported under their array's name: the array and its elements share the facts.
      c = this.columns.get(node.column) ?? { inexact: null, fractional: null, longInteger: null };
      this.columns.set(node.column, (node.numbers = c));
    }
    const fractional = /[.eE]/.test(lexeme);
    if (c.inexact === null) {
      const why = doubleLoss(lexeme);
      if (why !== null) c.inexact = { line, value: lexeme, why };
    }
    if (fractional) c.fractional ??= { line, value: lexeme };
    else if (
      lexeme.length > DOUBLE_DIGITS &&
      lexeme.replace('-', '').replace(/^0+/, '').length > DOUBLE_DIGITS
    )
      c.longInteger ??= { line, value: lexeme };
  }
}

/** A key's text (a malformed one as written: DuckDB's reader refuses the file anyway). */
function keyText(quoted: string): string {
  // Without escapes a well-formed string is its inner text (JSON.parse costs more than the lexing).
  if (
    quoted.length >= 2 &&
    quoted.charCodeAt(quoted.length - 1) === 34 &&
    !quoted.includes('\\') &&
    !CONTROL.test(quoted)
  )
    return quoted.slice(1, -1);
  try {
    return JSON.parse(quoted) as string;
  } catch {
    return quoted.slice(1, -1);
  }
}

const NUMBER = /-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;
/** Characters JSON strings may not hold raw (JSON.parse refuses them; keyText then keeps the text as written). */
const CONTROL = /[\u0000-\u001f]/;

/** ASCII letters (the letters of `true`, `false`, `null` and of what DuckDB's reader refuses). */
function isLetter(code: number): boolean {
  return (code >= 65 && code <= 90) || (code >= 97 && code <= 122);
}

/** The index after the closing quote of the string starting at `start` (or the line's end). */
function stringEnd(text: string, start: number): number {
  let i = start + 1;
  while (i < text.length) {
    const code = text.charCodeAt(i);
    if (code === 92)
      i += 2; // backslash
    else if (code === 34)
      return i + 1; // quote
    else i++;
  }
  return text.length;
}
