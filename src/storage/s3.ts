/**
 * Storage on an S3 prefix (AWS S3, MinIO or any S3-compatible endpoint) through the AWS
 * SDK v3. This is the only module that imports the SDK.
 *
 * Credentials come from the SDK's default provider chain (environment, profile, SSO,
 * container and instance roles); tidemark's config never holds them. Throttling, 5xx and
 * network errors are retried by the SDK (`maxAttempts`); what still fails is mapped to
 * StorageError, with kind 'transient' when a later retry may succeed.
 */
import { createWriteStream, createReadStream, promises as fsp } from 'node:fs';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { Readable, Transform, pipeline as pipeStreams } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import type { GetObjectCommandOutput, S3ClientConfig, _Object } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { StorageError, TidemarkError, UnsafeKeyError } from '../errors.js';
import type { ErrorKind } from '../errors.js';
import { bodyBytes, checkRange, gatherPages, notFoundError, pageSizeOf } from './common.js';
import type {
  Body,
  ByteRange,
  ListOptions,
  ListPage,
  ListResult,
  ObjectInfo,
  Storage,
  WriteOptions,
} from './storage.js';

/** Default multipart part size for `upload`. */
export const DEFAULT_PART_SIZE = 8 * 1024 * 1024;
/** S3's minimum part size (all parts but the last). */
const MIN_PART_SIZE = 5 * 1024 * 1024;
/** DeleteObjects accepts at most this many keys per request. */
const DELETE_BATCH = 1000;
/** A 409 ConditionalRequestConflict is retried this many times before giving up. */
const CONDITIONAL_CONFLICT_ATTEMPTS = 3;

/** S3 error codes worth retrying once the SDK's own retries are spent. */
const TRANSIENT_CODES = new Set([
  'SlowDown',
  'Throttling',
  'ThrottlingException',
  'RequestLimitExceeded',
  'TooManyRequestsException',
  'RequestTimeout',
  'RequestTimeoutException',
  'InternalError',
  'ServiceUnavailable',
  'TimeoutError',
]);
/** Network-level errno codes: the request may not have reached the store. */
const NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'ENOTFOUND',
  'ENETUNREACH',
  'EHOSTUNREACH',
]);

export interface S3StorageOptions {
  bucket: string;
  /** Key prefix inside the bucket; a trailing `/` is added when missing. */
  prefix?: string;
  /** Custom endpoint (MinIO, s3rver, other S3-compatible stores), e.g. `http://localhost:9000`. */
  endpoint?: string;
  /** AWS region; defaults to the SDK's resolution (AWS_REGION, profile), or us-east-1 with a custom endpoint. */
  region?: string;
  /** Path-style addressing (`endpoint/bucket/key`), needed by MinIO and most local servers. */
  forcePathStyle?: boolean;
  /** Attempts per request, including the first (SDK retries with backoff on throttling and 5xx). */
  maxAttempts?: number;
  /** Part size for multipart uploads (bytes, at least 5 MiB); files above it go multipart. Default 8 MiB. */
  partSize?: number;
  /** Parts uploaded in parallel by `upload`. Default 4. */
  uploadConcurrency?: number;
  /**
   * A ready client (tests, embedding). When given, endpoint/region/forcePathStyle/maxAttempts
   * are ignored: the client carries them.
   */
  client?: S3Client;
  /**
   * Explicit credentials, for tests against local servers only. Production leaves this unset so
   * the SDK's default provider chain applies; tidemark's config has no credential fields.
   */
  credentials?: S3ClientConfig['credentials'];
}

/** The SDK client config for these options (no credentials unless explicitly given). */
export function s3ClientConfig(opts: Omit<S3StorageOptions, 'bucket' | 'client'>): S3ClientConfig {
  const config: S3ClientConfig = {
    region: opts.region ?? (opts.endpoint ? 'us-east-1' : undefined),
    forcePathStyle: opts.forcePathStyle,
    maxAttempts: opts.maxAttempts,
  };
  if (opts.endpoint) {
    config.endpoint = opts.endpoint;
    // Many S3-compatible stores do not accept the SDK's newer default checksum trailers.
    config.requestChecksumCalculation = 'WHEN_REQUIRED';
    config.responseChecksumValidation = 'WHEN_REQUIRED';
  }
  if (opts.credentials) config.credentials = opts.credentials;
  return config;
}

/** A Storage rooted at `s3://bucket/prefix/`. */
export class S3Storage implements Storage {
  readonly uri: string;
  readonly bucket: string;
  /** Key prefix inside the bucket: `''` or ending with `/`. */
  readonly prefix: string;
  readonly client: S3Client;
  private readonly partSize: number;
  private readonly uploadConcurrency: number;

  constructor(opts: S3StorageOptions) {
    if (!opts.bucket) throw new StorageError('[storage] S3 bucket name is empty', { kind: 'usage' });
    this.bucket = opts.bucket;
    this.prefix = normalizePrefix(opts.prefix ?? '');
    this.uri = `s3://${this.bucket}/${this.prefix}`;
    this.client = opts.client ?? new S3Client(s3ClientConfig(opts));
    this.partSize = Math.max(MIN_PART_SIZE, opts.partSize ?? DEFAULT_PART_SIZE);
    this.uploadConcurrency = opts.uploadConcurrency ?? 4;
  }

  localPath(_key: string): null {
    return null;
  }

  async *list(opts: ListOptions = {}): AsyncIterable<ListPage> {
    const pageSize = pageSizeOf(opts);
    const seenTokens = new Set<string>();
    let token: string | undefined;
    do {
      const command = new ListObjectsV2Command({
        Bucket: this.bucket,
        Prefix: this.prefix + (opts.prefix ?? ''),
        Delimiter: opts.delimiter || undefined,
        StartAfter: opts.startAfter === undefined ? undefined : this.prefix + opts.startAfter,
        ContinuationToken: token,
        MaxKeys: pageSize,
      });
      const clock = captureServerDate(command);
      const out = await this.call('list', opts.prefix ?? '', () => this.client.send(command, { abortSignal: opts.signal }));
      yield {
        objects: (out.Contents ?? []).map((o) => this.infoOfListed(o)),
        commonPrefixes: (out.CommonPrefixes ?? []).flatMap((p) => (p.Prefix ? [this.relative(p.Prefix)] : [])),
        serverTime: clock.date ?? new Date(),
      };
      token = this.nextToken(out.IsTruncated, out.NextContinuationToken, seenTokens, opts.prefix ?? '');
    } while (token !== undefined);
  }

  listAll(opts: ListOptions = {}): Promise<ListResult> {
    return gatherPages(this.list(opts));
  }

  async head(key: string): Promise<ObjectInfo | null> {
    try {
      const command = new HeadObjectCommand({ Bucket: this.bucket, Key: this.fullKey(key) });
      const out = await this.call('head', key, () => this.client.send(command));
      return infoOf(key, out.ContentLength, out.LastModified, out.ETag);
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  }

  async read(key: string, range?: ByteRange): Promise<Uint8Array | null> {
    const got = await this.getRange(key, range);
    if (got === 'missing') return null;
    if (got === 'empty') return new Uint8Array(0);
    const bytes = await this.call('read', key, () => got.out.Body!.transformToByteArray());
    const { skip, limit } = got;
    return skip === 0 && limit === undefined ? bytes : bytes.subarray(skip, limit === undefined ? undefined : skip + limit);
  }

  async readStream(key: string, range?: ByteRange): Promise<Readable> {
    const got = await this.getRange(key, range);
    if (got === 'missing') throw notFoundError(key, this.uri);
    if (got === 'empty') return Readable.from([]);
    const body = got.out.Body as Readable;
    if (got.skip === 0 && got.limit === undefined) return body;
    // pipeline (not .pipe) so that a failing body destroys the slice with the same error.
    return pipeStreams(body, sliceStream(got.skip, got.limit), () => undefined);
  }

  async download(key: string, localPath: string, opts: { signal?: AbortSignal } = {}): Promise<ObjectInfo> {
    const out = await this.getObject(key, undefined, opts.signal);
    if (!out) throw notFoundError(key, this.uri);
    const dest = path.resolve(localPath);
    await fsp.mkdir(path.dirname(dest), { recursive: true });
    // Stream to a temp name, then rename: a partial download is never seen under the final name.
    const tmp = path.join(path.dirname(dest), `.tmp-${randomUUID()}`);
    try {
      await pipeline(out.Body as Readable, createWriteStream(tmp), { signal: opts.signal });
      await fsp.rename(tmp, dest);
    } catch (err) {
      await fsp.rm(tmp, { force: true });
      throw this.mapError(err, 'download', key);
    }
    return infoOf(key, out.ContentLength, out.LastModified, out.ETag);
  }

  async write(key: string, body: Body, opts: WriteOptions = {}): Promise<void> {
    const command = new PutObjectCommand({ ...this.putParams(key, opts), Body: bodyBytes(body) });
    await this.call('write', key, () => this.client.send(command, { abortSignal: opts.signal }));
  }

  async upload(key: string, localPath: string, opts: WriteOptions = {}): Promise<void> {
    const source = createReadStream(localPath);
    const upload = new Upload({
      client: this.client,
      params: { ...this.putParams(key, opts), Body: source },
      partSize: this.partSize,
      queueSize: this.uploadConcurrency,
      leavePartsOnError: false, // abort the multipart upload on failure: no orphaned parts
    });
    const onAbort = () => void upload.abort();
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      opts.signal?.throwIfAborted();
      await upload.done();
    } catch (err) {
      throw this.mapError(err, 'upload', key, { localPath });
    } finally {
      opts.signal?.removeEventListener('abort', onAbort);
      source.destroy();
    }
  }

  async writeIfAbsent(key: string, body: Body, opts: WriteOptions = {}): Promise<boolean> {
    const params = { ...this.putParams(key, opts), Body: bodyBytes(body), IfNoneMatch: '*' };
    for (let attempt = 1; ; attempt++) {
      try {
        const command = new PutObjectCommand(params);
        await this.call('writeIfAbsent', key, () => this.client.send(command, { abortSignal: opts.signal }));
        return true;
      } catch (err) {
        const status = statusOf(err);
        // 412: the key exists. Decided by status code, never by message text.
        if (status === 412) return false;
        // 409: a concurrent write to the key was in flight; AWS advises retrying, and the
        // retry answers 412 (the other write won) or 200. When it persists, report a loss.
        if (status === 409) {
          if (attempt < CONDITIONAL_CONFLICT_ATTEMPTS) continue;
          return false;
        }
        throw err;
      }
    }
  }

  async delete(keys: string[]): Promise<void> {
    const fullKeys = keys.map((key) => this.fullKey(key));
    const failures: { key: string; code?: string }[] = [];
    for (let i = 0; i < fullKeys.length; i += DELETE_BATCH) {
      const batch = fullKeys.slice(i, i + DELETE_BATCH);
      const command = new DeleteObjectsCommand({
        Bucket: this.bucket,
        Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true },
      });
      const out = await this.call('delete', keys[i] ?? '', () => this.client.send(command));
      for (const e of out.Errors ?? []) failures.push({ key: this.relative(e.Key ?? ''), code: e.Code });
    }
    if (failures.length > 0) throw this.deleteError(failures);
  }

  child(prefix: string): S3Storage {
    const clean = prefix.endsWith('/') ? prefix.slice(0, -1) : prefix;
    if (clean !== '') this.fullKey(clean); // same safety rules as keys
    return new S3Storage({
      bucket: this.bucket,
      prefix: clean === '' ? this.prefix : `${this.prefix}${clean}/`,
      client: this.client,
      partSize: this.partSize,
      uploadConcurrency: this.uploadConcurrency,
    });
  }

  // --- helpers ---------------------------------------------------------------

  /**
   * Bucket key for a storage key. `.` and `..` segments are refused: some servers and proxies
   * normalise them (s3rver stores `a/../b` as `b`), which would escape the storage prefix.
   */
  private fullKey(key: string): string {
    const bad =
      typeof key !== 'string' ||
      key === '' ||
      key.startsWith('/') ||
      key.includes('\0') ||
      key.split('/').some((seg) => seg === '.' || seg === '..');
    if (bad) throw new UnsafeKeyError(String(key), this.uri);
    return this.prefix + key;
  }

  private relative(fullKey: string): string {
    return fullKey.startsWith(this.prefix) ? fullKey.slice(this.prefix.length) : fullKey;
  }

  private putParams(key: string, opts: WriteOptions) {
    return { Bucket: this.bucket, Key: this.fullKey(key), ContentType: opts.contentType };
  }

  private infoOfListed(o: _Object): ObjectInfo {
    return infoOf(this.relative(o.Key ?? ''), o.Size, o.LastModified, o.ETag);
  }

  /** Next continuation token, or undefined when done; refuses a token seen before (a loop). */
  private nextToken(truncated: boolean | undefined, token: string | undefined, seen: Set<string>, prefix: string): string | undefined {
    if (!truncated) return undefined;
    if (!token || seen.has(token)) {
      const why = token ? 'repeated a continuation token' : 'was truncated without a continuation token';
      throw new StorageError(`[storage] listing ${this.uri} (prefix ${JSON.stringify(prefix)}): the store ${why}`, {
        kind: 'terminal',
        context: { uri: this.uri, key: prefix },
      });
    }
    seen.add(token);
    return token;
  }

  /** GetObject (optionally a range), or null on 404. */
  private async getObject(key: string, range?: ByteRange, signal?: AbortSignal): Promise<GetObjectCommandOutput | null> {
    checkRange(range, key);
    const Range = range ? `bytes=${range.start}-${range.end ?? ''}` : undefined;
    const command = new GetObjectCommand({ Bucket: this.bucket, Key: this.fullKey(key), Range });
    try {
      return await this.call('read', key, () => this.client.send(command, { abortSignal: signal }));
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  }

  /**
   * A ranged GetObject plus the bytes to trim when the server sent more than asked;
   * 'empty' when the range starts at or past the end (HTTP 416: the object exists).
   */
  private async getRange(key: string, range?: ByteRange): Promise<{ out: GetObjectCommandOutput; skip: number; limit?: number } | 'missing' | 'empty'> {
    try {
      const out = await this.getObject(key, range);
      if (!out) return 'missing';
      const [skip, limit] = excessOf(range, out.ContentRange);
      return { out, skip, limit };
    } catch (err) {
      if (statusOf(err) === 416) return 'empty';
      throw err;
    }
  }

  /** Run an SDK call; its errors become StorageError (404s carry `notFound`, status and code). */
  private async call<T>(op: string, key: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (err) {
      throw this.mapError(err, op, key);
    }
  }

  private mapError(err: unknown, op: string, key: string, extra: Record<string, unknown> = {}): unknown {
    if (err instanceof TidemarkError || isAbort(err)) return err;
    hideRawResponse(err);
    const status = statusOf(err);
    const code = codeOf(err);
    const kind = kindOf(err, status, code);
    const what = [code, status ? `HTTP ${status}` : undefined].filter(Boolean).join(', ');
    // The SDK's message is left out on purpose: the code and status say what happened, and
    // nothing from the request (signatures, headers) can leak into logs.
    return new StorageError(`[storage] S3 ${op} failed for ${JSON.stringify(key)} in ${this.uri}${what ? `: ${what}` : ''}${hint(status)}`, {
      kind,
      context: {
        key,
        uri: this.uri,
        status,
        code,
        requestId: (err as { $metadata?: { requestId?: string } })?.$metadata?.requestId,
        ...(status === 404 ? { notFound: true } : {}),
        ...extra,
      },
      cause: err,
    });
  }

  private deleteError(failures: { key: string; code?: string }[]): StorageError {
    const allTransient = failures.every((f) => f.code !== undefined && TRANSIENT_CODES.has(f.code));
    const sample = failures.slice(0, 5).map((f) => `${JSON.stringify(f.key)} (${f.code ?? 'unknown'})`);
    return new StorageError(
      `[storage] S3 delete failed for ${failures.length} key(s) in ${this.uri}: ${sample.join(', ')}${failures.length > 5 ? ', …' : ''}`,
      { kind: allTransient ? 'transient' : 'terminal', context: { uri: this.uri, key: failures[0]?.key, failures } },
    );
  }
}

/** `a/b` → `a/b/`; leading slashes dropped. */
function normalizePrefix(prefix: string): string {
  const p = prefix.replace(/^\/+/, '');
  return p === '' || p.endsWith('/') ? p : `${p}/`;
}

function infoOf(key: string, size?: number, lastModified?: Date, etag?: string): ObjectInfo {
  return { key, size: size ?? 0, lastModified: lastModified ?? new Date(0), etag: stripQuotes(etag ?? '') };
}

/** S3 returns ETags quoted (`"abc"`); weak markers (`W/`) are dropped too. */
function stripQuotes(etag: string): string {
  return etag.replace(/^W\//, '').replace(/^"(.*)"$/, '$1');
}

/**
 * Capture the HTTP `Date` header of a command's response: the store's clock, which decides
 * modification-time windows (the local clock may drift). The middleware sits in the
 * deserialize step, around each attempt, so it sees the raw HTTP response.
 */
function captureServerDate(command: ListObjectsV2Command): { date?: Date } {
  const clock: { date?: Date } = {};
  command.middlewareStack.add(
    (next) => async (args) => {
      const out = await next(args);
      const header = (out.response as { headers?: Record<string, string> } | undefined)?.headers?.['date'];
      const date = header ? new Date(header) : undefined;
      if (date && !Number.isNaN(date.getTime())) clock.date = date;
      return out;
    },
    { step: 'deserialize', name: 'tidemarkServerDate' },
  );
  return clock;
}

/**
 * Bytes to drop and keep when the server answered a different range than asked (s3rver
 * answers `bytes=0-0` with the whole object; some servers ignore Range). [skip, limit].
 */
function excessOf(range: ByteRange | undefined, contentRange: string | undefined): [number, number | undefined] {
  if (!range) return [0, undefined];
  const m = contentRange ? /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(contentRange) : null;
  const gotStart = m ? Number(m[1]) : 0; // no Content-Range: the server sent the whole object
  const gotEnd = m ? Number(m[2]) : Number.POSITIVE_INFINITY;
  const skip = Math.max(0, range.start - gotStart);
  const wantEnd = range.end ?? Number.POSITIVE_INFINITY;
  const limit = wantEnd < gotEnd ? wantEnd - range.start + 1 : undefined;
  return [skip, limit];
}

/** A stream that drops `skip` bytes, then passes at most `limit` bytes. */
function sliceStream(skip: number, limit: number | undefined): Transform {
  let pos = 0;
  const end = limit === undefined ? Number.POSITIVE_INFINITY : skip + limit;
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      const from = Math.max(0, skip - pos);
      const to = Math.min(chunk.length, end - pos);
      pos += chunk.length;
      done(null, to > from ? chunk.subarray(from, to) : undefined);
    },
  });
}

/**
 * Fields the SDK copies onto its errors that can hold credentials: the raw HTTP exchange
 * (`$response`, which references the signed request and its Authorization header), and what S3
 * echoes in an InvalidAccessKeyId or SignatureDoesNotMatch answer (the key id, the string to
 * sign, the canonical request with its `x-amz-security-token` header).
 */
const CREDENTIAL_FIELDS = ['$response', 'AWSAccessKeyId', 'StringToSign', 'StringToSignBytes', 'SignatureProvided', 'CanonicalRequest', 'CanonicalRequestBytes'];

/**
 * Keep those fields for debugging but make them non-enumerable, so loggers, `util.inspect` and
 * test reporters that serialise `cause` do not print them.
 */
function hideRawResponse(err: unknown): void {
  if (!err || typeof err !== 'object') return;
  for (const field of CREDENTIAL_FIELDS) {
    if (Object.prototype.propertyIsEnumerable.call(err, field)) Object.defineProperty(err, field, { enumerable: false });
  }
}

function statusOf(err: unknown): number | undefined {
  if (err instanceof StorageError) return err.context.status as number | undefined;
  return (err as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode;
}

function codeOf(err: unknown): string | undefined {
  const e = err as { Code?: unknown; code?: unknown; name?: unknown } | null;
  const code = e?.Code ?? e?.code ?? e?.name;
  return typeof code === 'string' ? code : undefined;
}

function isNotFound(err: unknown): boolean {
  return statusOf(err) === 404;
}

function isAbort(err: unknown): boolean {
  return (err as { name?: unknown } | null)?.name === 'AbortError';
}

function kindOf(err: unknown, status: number | undefined, code: string | undefined): ErrorKind {
  const errno = (err as { code?: unknown } | null)?.code;
  if (typeof errno === 'string' && NETWORK_CODES.has(errno)) return 'transient';
  if (code && TRANSIENT_CODES.has(code)) return 'transient';
  if (status !== undefined && (status >= 500 || status === 429 || status === 408)) return 'transient';
  if ((err as { $retryable?: unknown } | null)?.$retryable) return 'transient';
  return 'terminal';
}

/** A short pointer for the errors users can fix themselves. */
function hint(status: number | undefined): string {
  if (status === 403) return ' (access denied: check the credentials from the SDK default chain and the bucket policy)';
  if (status === 301) return ' (wrong region for this bucket: set the region)';
  return '';
}
