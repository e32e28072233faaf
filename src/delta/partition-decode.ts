/**
 * Decoding what the log says about a file: its path (percent-decoded exactly once) and its
 * partition values (strings in the log, validated and put in one canonical text form per type,
 * which the engine turns into typed SQL literals). See docs/delta-protocol.md, "Partition values".
 */
import { DeltaLogError, SchemaError } from '../errors.js';
import type { DataType } from './schema.js';

const URI_SCHEME = /^[a-zA-Z][a-zA-Z0-9+.-]*:/;

/**
 * The object key (relative to the table root) of an `add`/`remove` path.
 * Decodes exactly once (`%2520` becomes `%20`, `+` stays `+`). An absolute URI is accepted
 * only when it lies inside `tableUri`; otherwise, and for keys that would leave the table
 * root, a DeltaLogError names the path.
 */
export function decodeLogPath(path: string, tableUri?: string): string {
  const decoded = percentDecode(path);
  if (!URI_SCHEME.test(path)) return checkRelative(decoded, path);
  const file = normalizeFileUri(decoded);
  const roots = tableUri === undefined ? [] : rootForms(tableUri);
  const root = roots.find((r) => file.startsWith(r));
  if (root === undefined) {
    throw new DeltaLogError(
      `[delta] data file ${JSON.stringify(path)} is an absolute URI outside the table root` +
        `${tableUri ? ` ${tableUri}` : ''}; tidemark reads only files below the table root`,
      { context: { key: path, uri: tableUri } },
    );
  }
  return checkRelative(file.slice(root.length), path);
}

/** The table URI as written and percent-decoded, normalized and ending with `/`. */
function rootForms(tableUri: string): string[] {
  const forms = [tableUri];
  try {
    forms.push(decodeURIComponent(tableUri));
  } catch {
    // Not percent-encoded: the raw form is the only one.
  }
  return forms.map((f) => normalizeFileUri(f.endsWith('/') ? f : `${f}/`));
}

/**
 * One spelling per location: Hadoop writes `file:/x` where URLs say `file:///x`, and its S3
 * connectors' schemes (`s3a://`, `s3n://`) name the same objects as `s3://`. A table written by
 * Spark through s3a and opened by tidemark as s3 must see its own files as its own: VACUUM
 * would otherwise take a live file for one outside the table.
 */
function normalizeFileUri(uri: string): string {
  if (/^s3[an]:\/\//i.test(uri)) return `s3://${uri.slice(uri.indexOf('//') + 2)}`;
  return /^file:\/(?!\/)/.test(uri) ? `file:///${uri.slice('file:/'.length)}` : uri;
}

function percentDecode(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch (cause) {
    throw new DeltaLogError(
      `[delta] data file path ${JSON.stringify(path)} is not valid percent-encoding`,
      {
        context: { key: path },
        cause,
      },
    );
  }
}

function checkRelative(key: string, original: string): string {
  const segments = key.split('/');
  if (
    key === '' ||
    key.startsWith('/') ||
    segments.some((s) => s === '..' || s === '.' || s === '')
  ) {
    throw new DeltaLogError(
      `[delta] data file path ${JSON.stringify(original)} does not name a file below the table root`,
      {
        context: { key: original },
      },
    );
  }
  return key;
}

const INTEGER = /^[-+]?\d+$/;
const DECIMAL = /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/;
const FLOAT = /^([-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?|NaN|[-+]?Infinity)$/;
const DATE = /^\d{4,}-\d{2}-\d{2}$/;
/** `yyyy-MM-dd HH:mm:ss[.ffffff]` or ISO `yyyy-MM-ddTHH:mm:ss[.ffffff][Z|±hh:mm]`. */
const TIMESTAMP =
  /^(\d{4,}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?)(Z|[+-]\d{2}(?::?\d{2})?)?$/;

/**
 * A partition value from the log in canonical text, or null for NULL. null and "" mean NULL;
 * the string "null" stays a string. Timestamps get an explicit zone (none in the log means UTC,
 * as Spark and kernel read them); `timestamp_ntz` values are wall-clock times and may not carry
 * one. A value that is not valid for its type is a DeltaLogError naming the column.
 * `column` only names the column in error messages.
 */
export function normalizePartitionValue(
  value: string | null,
  deltaType: DataType,
  column?: string,
): string | null {
  if (value === null || value === '' || deltaType === 'void') return null;
  if (typeof deltaType !== 'string') {
    throw new SchemaError(
      `[delta] partition column ${column ?? ''} has a nested type, which Delta does not allow`,
      {
        context: { column },
      },
    );
  }
  return normalizedValue(value, deltaType, column);
}

/** The value validated (and for timestamps given an explicit zone) before DuckDB casts it. */
function normalizedValue(value: string, type: string, column?: string): string {
  const bad = (): never => {
    const shown = JSON.stringify(value);
    throw new DeltaLogError(
      `[delta] partition value ${shown} of column ${column ?? '?'} is not a valid ${type}`,
      {
        context: { column, value },
      },
    );
  };
  if (type === 'string' || type === 'binary') return value;
  if (type === 'boolean') return value === 'true' || value === 'false' ? value : bad();
  if (['byte', 'short', 'integer', 'long'].includes(type))
    return INTEGER.test(value) ? value : bad();
  if (type === 'float' || type === 'double') return FLOAT.test(value) ? value : bad();
  if (type.startsWith('decimal')) return DECIMAL.test(value) ? value : bad();
  if (type === 'date') return DATE.test(value) ? value : bad();
  const m = TIMESTAMP.exec(value);
  if (type === 'timestamp') return m ? `${m[1]} ${m[2]}${zoneSuffix(m[3])}` : bad();
  // A wall-clock type cannot carry a zone; DuckDB would silently drop it.
  if (type === 'timestamp_ntz') return m && m[3] === undefined ? `${m[1]} ${m[2]}` : bad();
  throw new SchemaError(
    `[delta] partition column ${column ?? '?'} has type ${type}, which cannot be a partition type`,
    {
      context: { column },
    },
  );
}

/** A zone DuckDB understands: none or `Z` means UTC. */
function zoneSuffix(zone: string | undefined): string {
  if (zone === undefined || zone === 'Z') return '+00:00';
  return zone;
}
