/**
 * SQL text helpers. Everything that comes from outside (column names, file paths, config
 * values) reaches SQL only through these, never spliced raw.
 */

/** Quote an identifier for DuckDB: "name" with embedded quotes doubled. */
export function ident(name: string): string {
  if (name.includes('\u0000'))
    throw new Error(`identifier contains a NUL character: ${JSON.stringify(name)}`);
  return `"${name.replaceAll('"', '""')}"`;
}

/** Quote a string literal: 'text' with embedded quotes doubled. */
export function str(value: string): string {
  if (value.includes('\u0000'))
    throw new Error(`string literal contains a NUL character: ${JSON.stringify(value)}`);
  return `'${value.replaceAll("'", "''")}'`;
}

/** A SQL literal for a JS value (string, number, bigint, boolean, null). */
export function literal(value: string | number | bigint | boolean | null): string {
  if (value === null) return 'NULL';
  if (typeof value === 'string') return str(value);
  if (typeof value === 'boolean') return value ? 'TRUE' : 'FALSE';
  if (typeof value === 'bigint') return value.toString();
  if (!Number.isFinite(value))
    throw new Error(`non-finite number cannot be a SQL literal: ${value}`);
  return String(value);
}

/**
 * Many small rows as one relation (one column per key of `types`, a DuckDB type each): a single
 * string literal of their JSON, which DuckDB's from_json reads, instead of a VALUES list.
 */
export function jsonRows(
  rows: ReadonlyArray<Record<string, string | number | null>>,
  types: Readonly<Record<string, string>>,
): string {
  return `(SELECT unnest(from_json(${str(JSON.stringify(rows))}, ${str(JSON.stringify([types]))}), recursive := true))`;
}

/** A list of quoted identifiers, comma separated. */
export function identList(names: readonly string[]): string {
  return names.map(ident).join(', ');
}

/** True when DuckDB would expand the path as a glob pattern (or read `\` as a glob escape). */
export function needsSafeAlias(path: string): boolean {
  return /[*?[\]{}\\]/.test(path);
}
