/**
 * Printing benchmark results: aligned text tables on stdout, and the full result as JSON in a
 * file, so runs can be compared later. Formatting helpers keep units in one place.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

/** A table: a header row and data rows, all cells already formatted. */
export interface TextTable {
  title: string;
  header: string[];
  rows: string[][];
}

/** Render a table with columns padded to their widest cell (numbers right-aligned). */
export function renderTable(table: TextTable): string {
  const all = [table.header, ...table.rows];
  const widths = table.header.map((_, c) => Math.max(...all.map((r) => (r[c] ?? '').length)));
  const numeric = table.header.map((_, c) =>
    table.rows.every((r) => /^[-+\d.,%×≤<>~ ]*(s|ms|MiB|GiB|KiB|B|%|×)?$/.test(r[c] ?? '')),
  );
  const line = (r: string[]) =>
    r
      .map((cell, c) => (numeric[c] && c > 0 ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!)))
      .join('  ')
      .trimEnd();
  const rule = widths.map((w) => '-'.repeat(w)).join('  ');
  return [table.title, line(table.header), rule, ...table.rows.map(line)].join('\n');
}

/** Print tables separated by blank lines. */
export function printTables(tables: readonly TextTable[]): void {
  process.stdout.write(`\n${tables.map(renderTable).join('\n\n')}\n\n`);
}

/** Write the result object as pretty JSON (creating the folder). */
export async function writeJson(path: string, result: unknown): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, `${JSON.stringify(result, null, 2)}\n`);
}

/** Seconds with 2 decimals (3 below one second). */
export function secs(ms: number): string {
  const s = ms / 1000;
  return s < 1 ? `${s.toFixed(3)} s` : `${s.toFixed(2)} s`;
}

/** A ratio as a percentage with 2 decimals. */
export function pct(ratio: number): string {
  return `${(ratio * 100).toFixed(2)} %`;
}

/** A ratio as a multiplier. */
export function times(ratio: number): string {
  return `${ratio.toFixed(2)} ×`;
}

/** Bytes in MiB. */
export function mib(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(1)} MiB`;
}

/** An integer with thousands separators. */
export function count(n: number): string {
  return n.toLocaleString('en-US');
}

/** 'yes' / 'NO' for a target check, so a miss stands out. */
export function verdict(met: boolean): string {
  return met ? 'met' : 'MISSED';
}

/** The slowest statements of a traced run, as a table (statements cut to `width` characters). */
export function sqlTable(
  title: string,
  entries: ReadonlyArray<{ ms: number; count: number; sql: string }>,
  width = 150,
): TextTable {
  return {
    title,
    header: ['time', 'runs', 'statement (ids, paths and numbers folded)'],
    rows: entries.map((e) => [
      secs(e.ms),
      String(e.count),
      e.sql.length > width ? `${e.sql.slice(0, width - 1)}…` : e.sql,
    ]),
  };
}
