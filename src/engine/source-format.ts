/**
 * Source file formats: from the job config, or failing that from the file name
 * (`orders.csv.gz` is gzip-compressed CSV).
 */
import { BadFileError } from '../errors.js';

export type SourceFormat = 'parquet' | 'csv' | 'tsv' | 'json' | 'ndjson';
export type Compression = 'none' | 'gzip' | 'zstd';

const COMPRESSION_SUFFIXES: Array<[RegExp, Compression]> = [
  [/\.(gz|gzip)$/i, 'gzip'],
  [/\.(zst|zstd)$/i, 'zstd'],
];

const FORMAT_SUFFIXES: Array<[RegExp, SourceFormat]> = [
  [/\.(parquet|pq)$/i, 'parquet'],
  [/\.csv$/i, 'csv'],
  [/\.tsv$/i, 'tsv'],
  [/\.(ndjson|jsonl)$/i, 'ndjson'],
  [/\.json$/i, 'json'],
];

/** Compression implied by the file name's last suffix. */
export function compressionOf(name: string): Compression {
  for (const [re, c] of COMPRESSION_SUFFIXES) if (re.test(name)) return c;
  return 'none';
}

/** Format implied by the name (after stripping a compression suffix), or null. */
export function formatFromName(name: string): SourceFormat | null {
  let base = name;
  for (const [re] of COMPRESSION_SUFFIXES) base = base.replace(re, '');
  for (const [re, f] of FORMAT_SUFFIXES) if (re.test(base)) return f;
  return null;
}

/** The format to read `key` with: the configured one, else from its name; a BadFileError if neither. */
export function resolveFormat(key: string, configured?: SourceFormat): SourceFormat {
  if (configured) {
    if (configured === 'parquet' && compressionOf(key) !== 'none') {
      throw new BadFileError(
        `[load] ${key}: a Parquet file cannot be ${compressionOf(key)}-compressed as a whole`,
        { context: { key } },
      );
    }
    return configured;
  }
  const f = formatFromName(key);
  if (!f) {
    throw new BadFileError(
      `[load] ${key}: cannot tell the format from the file name; set source.format in the job, ` +
        "or leave files that are not data out with source.include (e.g. ['*.csv']) or source.exclude",
      { context: { key } },
    );
  }
  return f;
}
