/**
 * A plain aligned text table for human output (`history`, `show`): a header, a rule, one line per
 * row; long cells are cut so one wide value cannot push the rest off the screen.
 */

/** Widest a cell is shown. */
const MAX_CELL = 48;

/** Options of `formatTable`. */
export interface TableTextOptions {
  /** Indexes of the columns aligned right (numbers). */
  right?: readonly number[];
}

/** The table as text, every line ending in a newline. */
export function formatTable(
  header: readonly string[],
  rows: readonly (readonly string[])[],
  opts: TableTextOptions = {},
): string {
  const cut = (s: string) =>
    s.length > MAX_CELL ? s.slice(0, MAX_CELL - 1) + '…' : s.replace(/[\r\n\t]/g, ' ');
  const body = rows.map((r) => r.map(cut));
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => (r[i] ?? '').length)));
  const right = new Set(opts.right ?? []);
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (right.has(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd() + '\n';
  return line(header) + line(widths.map((w) => '-'.repeat(w))) + body.map(line).join('');
}
