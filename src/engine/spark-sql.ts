/**
 * Spark SQL expressions (CHECK constraints and invariants stored in a Delta table by Spark) as
 * DuckDB SQL. Simple checks read the same in both; what differs is quoting, so this rewrites
 * tokens, never the expression's structure (pure):
 *
 * - `` `col` `` (Spark's identifier quotes) becomes `"col"`;
 * - `"text"` (a string literal in Spark) becomes `'text'`;
 * - backslash escapes inside string literals (`'it\'s'`) become DuckDB's doubled quotes;
 * - `<=>` (null-safe equality) becomes `IS NOT DISTINCT FROM`.
 *
 * Whatever else differs (a function DuckDB lacks) fails DuckDB's parser or binder, and the caller
 * refuses the constraint by name rather than guess.
 */

/** Escapes Spark resolves inside string literals; any other `\x` is `x`. */
const STRING_ESCAPES: Readonly<Record<string, string>> = {
  n: '\n',
  t: '\t',
  r: '\r',
  '0': '\0',
  b: '\b',
};

/** The expression in DuckDB's spelling; see the module comment. Throws on an unterminated quote. */
export function sparkExpressionToDuck(expression: string): string {
  let out = '';
  let i = 0;
  while (i < expression.length) {
    const ch = expression[i]!;
    if (ch === '`') {
      const { text, end } = readQuoted(expression, i, '`', false);
      out += `"${text.replaceAll('"', '""')}"`;
      i = end;
    } else if (ch === "'" || ch === '"') {
      const { text, end } = readQuoted(expression, i, ch, true);
      out += `'${text.replaceAll("'", "''")}'`;
      i = end;
    } else if (expression.startsWith('<=>', i)) {
      out += ' IS NOT DISTINCT FROM ';
      i += 3;
    } else {
      out += ch;
      i++;
    }
  }
  return out;
}

/**
 * The text between the quote at `start` and its closing quote, and the index after it. A doubled
 * quote stands for itself; in string literals a backslash escapes the next character.
 */
function readQuoted(
  s: string,
  start: number,
  quote: string,
  escapes: boolean,
): { text: string; end: number } {
  let text = '';
  let i = start + 1;
  while (i < s.length) {
    const ch = s[i]!;
    if (escapes && ch === '\\' && i + 1 < s.length) {
      const next = s[i + 1]!;
      text += STRING_ESCAPES[next] ?? next;
      i += 2;
    } else if (ch === quote && s[i + 1] === quote) {
      text += quote;
      i += 2;
    } else if (ch === quote) {
      return { text, end: i + 1 };
    } else {
      text += ch;
      i++;
    }
  }
  throw new Error(`unterminated ${quote} quote at position ${start}`);
}
