/**
 * Writer side of Delta partition paths (docs/delta-protocol.md, "Partition values"); the
 * partition-value strings themselves are formatted in SQL by the engine (engine/partition-sql.ts),
 * so DuckDB formats dates, timestamps and decimals itself:
 * - Hive folder names `col=value/` with Spark's escaping;
 * - the second, URI-style encoding of a relative path for `add.path` in the log.
 *
 * Readers decode `add.path` exactly once and never parse folder names (that is the reader's
 * partition-decode module), so the folders only have to be unique and Spark-looking.
 */
import { SchemaError } from '../errors.js';
import type { PartitionValues } from './actions.js';

/** Folder value for a null partition value (Hive/Spark convention). */
export const HIVE_DEFAULT_PARTITION = '__HIVE_DEFAULT_PARTITION__';

/** Characters Spark escapes in partition folder names (ExternalCatalogUtils, Linux). */
const HIVE_ESCAPED = new Set([
  '"',
  '#',
  '%',
  "'",
  '*',
  '/',
  ':',
  '=',
  '?',
  '\\',
  '\u007F',
  '{',
  '[',
  ']',
  '^',
]);

/** Spark's escapePathName: `%XX` (upper-case hex) for control characters and HIVE_ESCAPED. */
export function escapePartitionName(s: string): string {
  let out = '';
  for (const ch of s) {
    const code = ch.codePointAt(0)!;
    if ((code >= 0x01 && code <= 0x1f) || HIVE_ESCAPED.has(ch)) {
      out += '%' + code.toString(16).toUpperCase().padStart(2, '0');
    } else {
      out += ch;
    }
  }
  return out;
}

/**
 * The Hive folder path for one partition, `col1=v1/col2=v2` in `columns` order (no trailing
 * slash; `''` when there are no partition columns). Null and `''` become __HIVE_DEFAULT_PARTITION__.
 */
export function hivePartitionFolder(columns: readonly string[], values: PartitionValues): string {
  return columns
    .map((col) => {
      const v = values[col];
      const folderValue =
        v === null || v === undefined || v === '' ? HIVE_DEFAULT_PARTITION : escapePartitionName(v);
      return `${escapePartitionName(col)}=${folderValue}`;
    })
    .join('/');
}

/** Characters encodeURIComponent escapes but a Delta log path keeps (Spark keeps them too). */
const KEPT_IN_LOG_PATH: Record<string, string> = {
  '%2F': '/',
  '%3D': '=',
  '%2B': '+',
  '%40': '@',
  '%2C': ',',
  '%3B': ';',
  '%24': '$',
  '%26': '&',
};

/**
 * `add.path` for a key relative to the table root: percent-encoded (UTF-8, upper-case hex) so
 * that one decodeURIComponent gives the key back. `%`, space, `#`, `?`, `:`, non-ASCII and
 * control characters are encoded; `/`, `=`, `+` (and `@ , ; $ &`) stay as they are.
 * Example: folder `d=2021-09-08 11%3A11%3A11` → `d=2021-09-08%2011%253A11%253A11`.
 */
export function encodeLogPath(relativePath: string): string {
  let encoded: string;
  try {
    encoded = encodeURIComponent(relativePath);
  } catch (cause) {
    throw new SchemaError(
      `[partition] path is not valid Unicode: ${JSON.stringify(relativePath)}`,
      {
        context: { key: relativePath },
        cause,
      },
    );
  }
  return encoded.replace(/%(2F|3D|2B|40|2C|3B|24|26)/g, (m) => KEPT_IN_LOG_PATH[m]!);
}
