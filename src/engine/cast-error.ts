/**
 * The error for a source value that does not fit its table column's type: it names the value,
 * the column, the file and the row, and says that tidemark does not change column types.
 */
import { BadFileError } from '../errors.js';

/** Where a value that does not fit was found. */
export interface Misfit {
  /** Table column name. */
  column: string;
  /** The DuckDB type written for the column. */
  type: string;
  /** The source column's DuckDB type. */
  sourceType: string;
  value: unknown;
  /** Source file (its full URI), when known. */
  file?: unknown;
  /** 1-based row in the file, when known. */
  row?: unknown;
}

/** A BadFileError naming the value, column, file and row; `prefix` is the subsystem (`[load]`). */
export function castError(m: Misfit, prefix: string, cause?: unknown): BadFileError {
  const file = m.file != null ? String(m.file) : undefined;
  const row = m.row != null ? Number(m.row) : undefined;
  const where = [file !== undefined ? `file ${file}` : '', row !== undefined ? `row ${row}` : ''].filter(Boolean).join(', ');
  return new BadFileError(
    `${prefix} value ${JSON.stringify(String(m.value))} of column ${JSON.stringify(m.column)} cannot be cast to the table's type ${m.type}` +
      (where ? ` (${where})` : '') +
      `; the source has ${m.sourceType}, and tidemark does not change a table column's type (that needs Delta's typeWidening feature)`,
    {
      context: { column: m.column, ...(file !== undefined ? { key: file } : {}), ...(row !== undefined ? { row } : {}) },
      ...(cause === undefined ? {} : { cause }),
    },
  );
}
