/**
 * Storage URIs: `s3://bucket/prefix/` (also `s3a://`), `file:///abs/path`, or a plain
 * relative or absolute path.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '../errors.js';
import { LocalStorage, type LocalStorageOptions } from './local.js';
import { S3Storage } from './s3.js';
import type { S3StorageOptions } from './s3.js';
import type { Storage } from './storage.js';

/**
 * Where an S3 endpoint is, how to address it, and how patient to be with it (timeouts, retries,
 * a retry budget to share between the storages of one run); credentials always come from the SDK chain.
 */
export type S3EndpointOptions = Pick<
  S3StorageOptions,
  | 'endpoint'
  | 'region'
  | 'forcePathStyle'
  | 'maxAttempts'
  | 'connectTimeoutMs'
  | 'requestTimeoutMs'
  | 'idleTimeoutMs'
  | 'retryBaseDelayMs'
  | 'retryMaxDelayMs'
  | 'retryBudget'
  | 'uploadChecksum'
  | 'etagChecksum'
>;

/** A parsed storage URI. `uri` is canonical: folders end with `/`. */
export type StorageLocation =
  | { kind: 's3'; uri: string; bucket: string; prefix: string }
  | { kind: 'file'; uri: string; path: string };

const SCHEME = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\//;
// Permissive on purpose: legacy buckets and S3-compatible stores allow upper case and `_`.
const BUCKET = /^[A-Za-z0-9][A-Za-z0-9._-]{1,254}$/;

/**
 * Parse a storage URI without touching the store. Throws ConfigError (kind 'usage') for an
 * unsupported scheme, a missing bucket, or `.`/`..` segments in an S3 prefix.
 */
export function describeUri(uri: string): StorageLocation {
  const scheme = SCHEME.exec(uri)?.[1]?.toLowerCase();
  if (scheme === undefined) {
    // `file:x` or `s3:b/x` are typos for a URI, not folder names; WHATWG would read `file:x` as `/x`.
    if (/^(file|s3a?):/i.test(uri))
      throw new ConfigError(
        `malformed storage URI ${uri}: expected s3://bucket/prefix/ or file:///path`,
        { uri },
      );
    return fileLocation(path.resolve(uri));
  }
  if (scheme === 's3' || scheme === 's3a') return s3Location(uri, uri.slice(scheme.length + 3));
  if (scheme === 'file') return fileLocation(filePath(uri));
  throw new ConfigError(
    `unsupported storage URI scheme '${scheme}://' in ${uri}: use s3://bucket/prefix/, file:///path or a path`,
    {
      uri,
    },
  );
}

/** Open the Storage a URI names. S3 options apply to `s3://` URIs only, local options to folders only. */
export function openStorage(
  uri: string,
  s3Options: S3EndpointOptions = {},
  localOptions: LocalStorageOptions = {},
): Storage {
  const loc = describeUri(uri);
  if (loc.kind === 'file') return new LocalStorage(loc.path, localOptions);
  return new S3Storage({ bucket: loc.bucket, prefix: loc.prefix, ...s3Options });
}

function s3Location(uri: string, rest: string): StorageLocation {
  const slash = rest.indexOf('/');
  const bucket = slash < 0 ? rest : rest.slice(0, slash);
  const prefix = slash < 0 ? '' : rest.slice(slash + 1);
  if (!BUCKET.test(bucket))
    throw new ConfigError(`invalid S3 bucket name ${JSON.stringify(bucket)} in ${uri}`, { uri });
  // S3 keys are literal (no percent-decoding), but `.`/`..` segments could escape the prefix
  // on servers that normalise paths.
  const segments = prefix.split('/').filter((s, i, all) => !(s === '' && i === all.length - 1));
  if (segments.some((s) => s === '.' || s === '..')) {
    throw new ConfigError(`S3 prefix must not contain '.' or '..' segments: ${uri}`, { uri });
  }
  const normalized = prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/`;
  return { kind: 's3', uri: `s3://${bucket}/${normalized}`, bucket, prefix: normalized };
}

/** `file:` URL to a path; percent escapes are decoded (`file:///a%20b` → `/a b`). */
function filePath(uri: string): string {
  try {
    return fileURLToPath(uri);
  } catch (err) {
    throw new ConfigError(
      `invalid file URI ${uri}: it must be absolute, like file:///data/landing`,
      { uri },
      err,
    );
  }
}

function fileLocation(abs: string): StorageLocation {
  const uri = new LocalStorage(abs).uri;
  return { kind: 'file', uri, path: abs };
}
