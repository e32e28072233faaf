/**
 * Storage on an S3 prefix (AWS S3, MinIO or any S3-compatible endpoint) through the AWS
 * SDK v3. The driver and ./s3/ are the only modules that import the SDK.
 *
 * S3 is unreliable at scale, so every request runs under one retry policy (./s3/retry.ts) with
 * timeouts (./s3/timeouts.ts); GetObject bodies are resumed when they break (./s3/resumable-get.ts);
 * uploads retry part by part (./s3/upload.ts); requests are counted by kind
 * (./s3/request-counter.ts). What still fails is a StorageError: 'transient' with "storage
 * unavailable after N attempts" when retrying later may help, 'terminal' otherwise.
 *
 * Credentials come from the SDK's default provider chain (environment, profile, SSO,
 * container and instance roles); tidemark's config never holds them.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import {
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import type {
  GetObjectCommandOutput,
  HeadObjectCommandOutput,
  S3ClientConfig,
  _Object,
} from '@aws-sdk/client-s3';
import { StorageError, UnsafeKeyError } from '../errors.js';
import { makeFolder } from './make-folder.js';
import { bodyBytes, checkRange, gatherPages, notFoundError, pageSizeOf } from './driver-helpers.js';
import { ChecksumCounter, DEFAULT_UPLOAD_CHECKSUM } from './s3/checksums.js';
import type { UploadChecksum } from './s3/checksums.js';
import { TRANSIENT_CODES, classify, isNotFound, mapS3Error, statusOf } from './s3/faults.js';
import { RequestCounter } from './s3/request-counter.js';
import { mustStartOver, openObject } from './s3/resumable-get.js';
import type { GetRequest, HeadRequest, ObjectVersion, Opened } from './s3/resumable-get.js';
import {
  DEFAULT_BASE_DELAY_MS,
  DEFAULT_MAX_ATTEMPTS,
  DEFAULT_MAX_DELAY_MS,
  RetryBudget,
  RetryPolicy,
} from './s3/retry.js';
import type { Attempts, Operation } from './s3/retry.js';
import { handlerOptions, resolveTimeouts } from './s3/timeouts.js';
import type { Timeouts } from './s3/timeouts.js';
import { downloadAttempt } from './s3/download.js';
import { uploadFile } from './s3/upload.js';
import { settleUpload, singlePart } from './s3/upload-check.js';
import type { ExpectedUpload, Settle, StoredAnswer } from './s3/upload-check.js';
import type {
  Body,
  ByteRange,
  ChecksumCounts,
  ListOptions,
  ListPage,
  ListResult,
  ObjectInfo,
  RequestCounts,
  Storage,
  WriteOptions,
} from './storage.js';

export { RetryBudget } from './s3/retry.js';
export type { UploadChecksum } from './s3/checksums.js';

/** Default multipart part size for `upload`. */
export const DEFAULT_PART_SIZE = 8 * 1024 * 1024;
/** S3's minimum part size (all parts but the last). */
const MIN_PART_SIZE = 5 * 1024 * 1024;
/** DeleteObjects accepts at most this many keys per request. */
const DELETE_BATCH = 1000;
/** A 409 ConditionalRequestConflict is retried this many times before giving up. */
const CONDITIONAL_CONFLICT_ATTEMPTS = 3;

/** Pause before retrying a 409: 50 ms doubling, with jitter (the write in flight needs time to land). */
function conflictBackoffMs(conflicts: number): number {
  return Math.floor(50 * 2 ** (conflicts - 1) * (0.5 + Math.random()));
}

export interface S3StorageOptions extends Partial<Timeouts> {
  bucket: string;
  /** Key prefix inside the bucket; a trailing `/` is added when missing. */
  prefix?: string;
  /** Custom endpoint (MinIO, s3rver, other S3-compatible stores), e.g. `http://localhost:9000`. */
  endpoint?: string;
  /** AWS region; defaults to the SDK's resolution (AWS_REGION, profile), or us-east-1 with a custom endpoint. */
  region?: string;
  /** Path-style addressing (`endpoint/bucket/key`), needed by MinIO and most local servers. */
  forcePathStyle?: boolean;
  /** Attempts per request (and per resumed read) without progress, the first included. Default 6. */
  maxAttempts?: number;
  /** First backoff ceiling in ms; doubles per attempt, ×5 after SlowDown. Default 100. */
  retryBaseDelayMs?: number;
  /** Longest single backoff in ms. Default 20 000. */
  retryMaxDelayMs?: number;
  /** Retry budget shared by this storage and its children: a token count, or a budget to share wider (e.g. source and target of a run). Default 500. */
  retryBudget?: number | RetryBudget;
  /** Part size for multipart uploads (bytes, at least 5 MiB); files above it go multipart. Default 8 MiB. */
  partSize?: number;
  /** Parts uploaded in parallel by `upload`. Default 4. */
  uploadConcurrency?: number;
  /**
   * The checksum every upload (PutObject, each multipart part) carries for the store to verify,
   * and against which the store's answer for the whole object is compared: CRC64NVME (default),
   * CRC32, CRC32C (full-object for a multipart upload), SHA1, SHA256 (composite), MD5
   * (Content-MD5; the ETag compared), or `off` for a store that refuses the header.
   */
  uploadChecksum?: UploadChecksum;
  /**
   * Check a whole-object read of a single-part object that has no checksum against its ETag, as
   * its MD5 (s3rver, MinIO, AWS but SSE-KMS/SSE-C). Default true; false for stores whose ETags are not.
   */
  etagChecksum?: boolean;
  /**
   * A ready client (tests, embedding). When given, endpoint/region/forcePathStyle and the
   * timeouts are the client's (tidemark's retries still apply; give it maxAttempts 1 so the
   * SDK does not retry underneath).
   */
  client?: S3Client;
  /**
   * Explicit credentials, for tests against local servers only. Production leaves this unset so
   * the SDK's default provider chain applies; tidemark's config has no credential fields.
   */
  credentials?: S3ClientConfig['credentials'];
}

/**
 * The SDK client config for these options (no credentials unless explicitly given). The SDK's
 * retries are off (tidemark's policy retries, see ./s3/retry.ts); its HTTP handler gets the timeouts.
 * Its checksums are left to the driver (./s3/checksums.ts), on AWS too: it checks a read across
 * resumes (the SDK would check one answer, hash it twice and fail it with an untyped error), and
 * `uploadChecksum` alone decides what an upload carries (the SDK would add CRC32 when it is off).
 */
export function s3ClientConfig(opts: Omit<S3StorageOptions, 'bucket' | 'client'>): S3ClientConfig {
  const config: S3ClientConfig = {
    region: opts.region ?? (opts.endpoint ? 'us-east-1' : undefined),
    forcePathStyle: opts.forcePathStyle,
    maxAttempts: 1,
    requestHandler: handlerOptions(resolveTimeouts(opts)),
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  };
  if (opts.endpoint) config.endpoint = opts.endpoint;
  if (opts.credentials) config.credentials = opts.credentials;
  return config;
}

/** What a storage shares with its children: one client, one retry budget, one request count. */
interface Shared {
  client: S3Client;
  policy: RetryPolicy;
  counter: RequestCounter;
  idleTimeoutMs: number;
  partSize: number;
  uploadConcurrency: number;
  uploadChecksum: UploadChecksum;
  etagIsMd5: boolean;
  /** Checked reads and uploads, by kind. */
  checksums: ChecksumCounter;
}

/** A Storage rooted at `s3://bucket/prefix/`. */
export class S3Storage implements Storage {
  readonly uri: string;
  readonly bucket: string;
  /** Key prefix inside the bucket: `''` or ending with `/`. */
  readonly prefix: string;
  readonly client: S3Client;
  private readonly shared: Shared;

  /** `shared` is for `child()`: a child uses its parent's client, retry budget and request count. */
  constructor(opts: S3StorageOptions, shared?: Shared) {
    if (!opts.bucket)
      throw new StorageError('[storage] S3 bucket name is empty', { kind: 'usage' });
    this.bucket = opts.bucket;
    this.prefix = normalizePrefix(opts.prefix ?? '');
    this.uri = `s3://${this.bucket}/${this.prefix}`;
    this.shared = shared ?? sharedOf(opts);
    this.client = this.shared.client;
  }

  localPath(_key: string): null {
    return null;
  }

  /** Requests sent so far by this storage, its parent and its children. */
  requestCounts(): RequestCounts {
    return this.shared.counter.snapshot();
  }

  /** Whole-object reads and uploads checked so far (same tree), by checksum kind. */
  checksumCounts(): ChecksumCounts {
    return this.shared.checksums.snapshot();
  }

  async *list(opts: ListOptions = {}): AsyncIterable<ListPage> {
    const pageSize = pageSizeOf(opts);
    const prefix = opts.prefix ?? '';
    const seenTokens = new Set<string>();
    let token: string | undefined;
    do {
      // Each page is retried on its own, with the continuation token of that page.
      const pageToken = token;
      const { out, date } = await this.run('list', prefix, opts.signal, async () => {
        const command = new ListObjectsV2Command({
          Bucket: this.bucket,
          Prefix: this.prefix + prefix,
          Delimiter: opts.delimiter || undefined,
          StartAfter: opts.startAfter === undefined ? undefined : this.prefix + opts.startAfter,
          ContinuationToken: pageToken,
          MaxKeys: pageSize,
        });
        const clock = captureServerDate(command);
        const out = await this.client.send(this.track(command), sendOpts(opts.signal));
        return { out, date: clock.date };
      });
      yield {
        objects: (out.Contents ?? []).map((o) => this.infoOfListed(o)),
        commonPrefixes: (out.CommonPrefixes ?? []).flatMap((p) =>
          p.Prefix ? [this.relative(p.Prefix)] : [],
        ),
        serverTime: date ?? new Date(),
      };
      token = this.nextToken(out.IsTruncated, out.NextContinuationToken, seenTokens, prefix);
    } while (token !== undefined);
  }

  listAll(opts: ListOptions = {}): Promise<ListResult> {
    return gatherPages(this.list(opts));
  }

  async head(key: string): Promise<ObjectInfo | null> {
    const Key = this.fullKey(key);
    try {
      const out = await this.run('head', key, undefined, () =>
        this.client.send(this.track(new HeadObjectCommand({ Bucket: this.bucket, Key }))),
      );
      return infoOf(key, out.ContentLength, out.LastModified, out.ETag);
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  }

  async read(key: string, range?: ByteRange): Promise<Uint8Array | null> {
    const got = await this.readWhole('read', key, range, undefined, async (body) => {
      const chunks: Buffer[] = [];
      for await (const chunk of body) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks);
    });
    if (got === 'missing') return null;
    if (got === 'empty') return new Uint8Array(0);
    return new Uint8Array(got.buffer, got.byteOffset, got.byteLength);
  }

  /**
   * A stream that resumes itself when the connection breaks. If the object is replaced while it
   * is read, the stream fails with a transient error (bytes already handed out cannot be taken back).
   */
  async readStream(key: string, range?: ByteRange): Promise<Readable> {
    const opened = await this.open(
      key,
      range,
      undefined,
      this.policy.start(this.operation('readStream', key)),
    );
    if (opened === 'missing') throw notFoundError(key, this.uri);
    if (opened === 'empty') return Readable.from([]);
    return opened.body;
  }

  async download(
    key: string,
    localPath: string,
    opts: { signal?: AbortSignal } = {},
  ): Promise<ObjectInfo> {
    const dest = path.resolve(localPath);
    await makeFolder(path.dirname(dest));
    try {
      const got = await this.readWhole('download', key, undefined, opts.signal, (body, object) =>
        downloadAttempt(body, object, dest, {
          key,
          uri: this.uri,
          ...(opts.signal ? { signal: opts.signal } : {}),
        }),
      );
      if (got === 'missing' || got === 'empty') throw notFoundError(key, this.uri);
      await fsp.rename(got.file, dest).catch(async (err: unknown) => {
        await fsp.rm(got.file, { force: true });
        throw err;
      });
      return infoOf(key, got.object.size, got.object.lastModified, got.object.etag);
    } catch (err) {
      throw mapS3Error(err, { op: 'download', key, uri: this.uri });
    }
  }

  async write(key: string, body: Body, opts: WriteOptions = {}): Promise<void> {
    const bytes = bodyBytes(body);
    const { header, expected } = await singlePart(this.shared.uploadChecksum, bytes);
    const params = { ...this.putParams(key, opts), Body: bytes, ...header };
    // A plain PUT is idempotent: a retry writes the same bytes again.
    const answer = await this.run('write', key, opts.signal, () =>
      this.client.send(this.track(new PutObjectCommand(params)), sendOpts(opts.signal)),
    );
    await this.settle('write', key, expected, answer, { remove: true });
  }

  async upload(key: string, localPath: string, opts: WriteOptions = {}): Promise<void> {
    const { client, counter, policy, partSize, uploadConcurrency, uploadChecksum } = this.shared;
    try {
      opts.signal?.throwIfAborted();
      const uploaded = await uploadFile(
        {
          client,
          counter,
          policy,
          bucket: this.bucket,
          fullKey: this.fullKey(key),
          key,
          uri: this.uri,
          ...(opts.contentType ? { contentType: opts.contentType } : {}),
          partSize,
          concurrency: uploadConcurrency,
          checksum: uploadChecksum,
          ...(opts.signal ? { signal: opts.signal } : {}),
        },
        localPath,
      );
      await this.settle('upload', key, uploaded.expected, uploaded.answer, {
        remove: true,
        head: uploaded.multipart,
      });
    } catch (err) {
      throw mapS3Error(err, { op: 'upload', key, uri: this.uri, extra: { localPath } });
    }
  }

  /**
   * PUT with If-None-Match: *. An attempt whose answer was lost (500, reset, timeout) may have
   * created the key; when a retry then answers 412, the key is read back and compared with our
   * body, so the call still says whether this write created it.
   */
  async writeIfAbsent(key: string, body: Body, opts: WriteOptions = {}): Promise<boolean> {
    const bytes = bodyBytes(body);
    const { header, expected } = await singlePart(this.shared.uploadChecksum, bytes);
    const params = { ...this.putParams(key, opts), Body: bytes, IfNoneMatch: '*', ...header };
    const attempts = this.policy.start(this.operation('writeIfAbsent', key, opts.signal));
    let ambiguous = false;
    let conflicts = 0;
    for (;;) {
      try {
        const answer = await this.client.send(
          this.track(new PutObjectCommand(params)),
          sendOpts(opts.signal),
        );
        attempts.succeeded();
        // A commit that does not hold what was sent is not deleted: a reader may have seen it.
        await this.settle('writeIfAbsent', key, expected, answer, { remove: false });
        return true;
      } catch (err) {
        const status = statusOf(err);
        // 412: the key exists. Decided by status code, never by message text.
        if (status === 412) return ambiguous ? this.holds(key, bytes) : false;
        // 409: a concurrent write to the key was in flight (maybe our own lost attempt); AWS
        // advises retrying, and the retry answers 412 or 200. When it persists, whose write
        // lands is unknown yet: a transient fault, and the caller reads the key to find out
        // (reading it now could miss a write still landing, ours included).
        if (status === 409) {
          if (++conflicts >= CONDITIONAL_CONFLICT_ATTEMPTS)
            throw this.conflictPersisted(key, conflicts, err);
          await sleep(
            conflictBackoffMs(conflicts),
            undefined,
            opts.signal ? { signal: opts.signal } : undefined,
          );
          continue;
        }
        if (classify(err).transient) ambiguous = true;
        await attempts.failed(err, ambiguous ? { ambiguous: true } : {});
      }
    }
  }

  async delete(keys: string[]): Promise<void> {
    const fullKeys = keys.map((key) => this.fullKey(key));
    const failures: { key: string; code?: string }[] = [];
    for (let i = 0; i < fullKeys.length; i += DELETE_BATCH) {
      const batch = fullKeys.slice(i, i + DELETE_BATCH);
      const command = () =>
        new DeleteObjectsCommand({
          Bucket: this.bucket,
          Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true },
        });
      // Deleting is idempotent: a retried batch deletes what is left of it.
      const out = await this.run('delete', keys[i] ?? '', undefined, () =>
        this.client.send(this.track(command())),
      );
      for (const e of out.Errors ?? [])
        failures.push({ key: this.relative(e.Key ?? ''), code: e.Code });
    }
    if (failures.length > 0) throw this.deleteError(failures);
  }

  child(prefix: string): S3Storage {
    const clean = prefix.endsWith('/') ? prefix.slice(0, -1) : prefix;
    if (clean !== '') this.fullKey(clean); // same safety rules as keys
    return new S3Storage(
      { bucket: this.bucket, prefix: clean === '' ? this.prefix : `${this.prefix}${clean}/` },
      this.shared,
    );
  }

  // --- helpers ---------------------------------------------------------------

  /**
   * Compare an upload's answer with what was sent (./s3/upload-check.ts) and count it; a multipart
   * upload whose answer lacks its checksum is asked again with a HEAD. On a mismatch the object
   * is deleted (`remove`) and an UploadChecksumError thrown.
   */
  private async settle(
    op: string,
    key: string,
    expected: ExpectedUpload,
    answer: StoredAnswer,
    opts: { remove: boolean; head?: boolean },
  ): Promise<void> {
    const how: Settle = { op, key, uri: this.uri, etagIsMd5: this.shared.etagIsMd5 };
    if (opts.head) {
      const Key = this.fullKey(key);
      how.head = () =>
        this.run('head', key, undefined, () =>
          this.client.send(
            this.track(
              new HeadObjectCommand({ Bucket: this.bucket, Key, ChecksumMode: 'ENABLED' }),
            ),
          ),
        );
    }
    if (opts.remove) how.remove = () => this.delete([key]);
    this.shared.checksums.upload(await settleUpload(expected, answer, how));
  }

  /** The transient error of a conditional write whose 409 answers did not stop. */
  private conflictPersisted(key: string, conflicts: number, last: unknown): StorageError {
    return new StorageError(
      `[storage] S3 writeIfAbsent ${JSON.stringify(key)} on ${this.uri}: answered 409 ConditionalRequestConflict ${conflicts} times ` +
        '(another write to the key was in flight); whether a write landed is not known yet',
      {
        kind: 'transient',
        context: { key, uri: this.uri, op: 'writeIfAbsent', status: 409, attempts: conflicts },
        cause: last,
      },
    );
  }

  private get policy(): RetryPolicy {
    return this.shared.policy;
  }

  private operation(op: string, key: string, signal?: AbortSignal): Operation {
    return { op, key, uri: this.uri, ...(signal ? { signal } : {}) };
  }

  /** One operation under the retry policy. */
  private run<T>(
    op: string,
    key: string,
    signal: AbortSignal | undefined,
    attempt: () => Promise<T>,
  ): Promise<T> {
    return this.policy.run(this.operation(op, key, signal), attempt);
  }

  /** Count every attempt of the command (see ./s3/request-counter.ts). */
  private track<C extends { middlewareStack: { add: (...args: any[]) => void } }>(command: C): C {
    return this.shared.counter.track(command);
  }

  private sendGet(key: string, req: GetRequest): Promise<GetObjectCommandOutput> {
    const command = new GetObjectCommand({
      Bucket: this.bucket,
      Key: this.fullKey(key),
      Range: req.range,
      IfMatch: req.ifMatch,
    });
    return this.client.send(this.track(askForChecksum(command)), { abortSignal: req.signal });
  }

  private sendHead(key: string, req: HeadRequest): Promise<HeadObjectCommandOutput> {
    const command = new HeadObjectCommand({
      Bucket: this.bucket,
      Key: this.fullKey(key),
      IfMatch: req.ifMatch,
      PartNumber: req.partNumber,
    });
    return this.client.send(this.track(command), { abortSignal: req.signal });
  }

  /** A resumable GetObject; `attempts` is the operation's retry state. */
  private open(
    key: string,
    range: ByteRange | undefined,
    signal: AbortSignal | undefined,
    attempts: Attempts,
  ): Promise<Opened> {
    checkRange(range, key);
    this.fullKey(key);
    return openObject({
      get: (req) => this.sendGet(key, req),
      head: (req) => this.sendHead(key, req),
      ...(range ? { range } : {}),
      attempts,
      idleTimeoutMs: this.shared.idleTimeoutMs,
      ...(signal ? { signal } : {}),
      checks: { etagIsMd5: this.shared.etagIsMd5, counter: this.shared.checksums },
    });
  }

  /**
   * A whole-object read (into memory or a file): when the object is replaced mid-read, or the
   * store's answers disagree about its size, nothing has been handed out yet, so it starts over
   * (an attempt like any other).
   */
  private async readWhole<T>(
    op: string,
    key: string,
    range: ByteRange | undefined,
    signal: AbortSignal | undefined,
    consume: (body: Readable, object: ObjectVersion) => Promise<T>,
  ): Promise<T | 'missing' | 'empty'> {
    const attempts = this.policy.start(this.operation(op, key, signal));
    // Each attempt received bytes, so the attempts' own limit (without progress) never applies.
    let startedOver = 0;
    for (;;) {
      const opened = await this.open(key, range, signal, attempts);
      if (typeof opened === 'string') return opened;
      try {
        return await consume(opened.body, opened.object);
      } catch (err) {
        opened.body.destroy();
        if (!mustStartOver(err) || ++startedOver >= this.policy.settings.maxAttempts) throw err;
        await attempts.failed(err);
      }
    }
  }

  /** Does the key hold exactly `bytes`? (Our own write, whose answer was lost.) */
  private async holds(key: string, bytes: Uint8Array): Promise<boolean> {
    const existing = await this.read(key);
    return existing !== null && Buffer.compare(Buffer.from(existing), Buffer.from(bytes)) === 0;
  }

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
  private nextToken(
    truncated: boolean | undefined,
    token: string | undefined,
    seen: Set<string>,
    prefix: string,
  ): string | undefined {
    if (!truncated) return undefined;
    if (!token || seen.has(token)) {
      const why = token
        ? 'repeated a continuation token'
        : 'was truncated without a continuation token';
      throw new StorageError(
        `[storage] listing ${this.uri} (prefix ${JSON.stringify(prefix)}): the store ${why}`,
        {
          kind: 'terminal',
          context: { uri: this.uri, key: prefix },
        },
      );
    }
    seen.add(token);
    return token;
  }

  private deleteError(failures: { key: string; code?: string }[]): StorageError {
    const allTransient = failures.every((f) => f.code !== undefined && TRANSIENT_CODES.has(f.code));
    const sample = failures
      .slice(0, 5)
      .map((f) => `${JSON.stringify(f.key)} (${f.code ?? 'unknown'})`);
    return new StorageError(
      `[storage] S3 delete failed for ${failures.length} key(s) in ${this.uri}: ${sample.join(', ')}${failures.length > 5 ? ', …' : ''}`,
      {
        kind: allTransient ? 'transient' : 'terminal',
        context: { uri: this.uri, key: failures[0]?.key, failures },
      },
    );
  }
}

/** Client, retry policy and counter of a root storage. */
function sharedOf(opts: S3StorageOptions): Shared {
  const timeouts = resolveTimeouts(opts);
  const budget =
    opts.retryBudget instanceof RetryBudget ? opts.retryBudget : new RetryBudget(opts.retryBudget);
  const maxAttempts = opts.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  if (!Number.isSafeInteger(maxAttempts) || maxAttempts < 1) {
    throw new StorageError(
      `[storage] S3 maxAttempts must be a positive integer, got ${maxAttempts}`,
      { kind: 'usage', context: { field: 'maxAttempts' } },
    );
  }
  return {
    client: opts.client ?? new S3Client(s3ClientConfig(opts)),
    policy: new RetryPolicy({
      maxAttempts,
      baseDelayMs: opts.retryBaseDelayMs ?? DEFAULT_BASE_DELAY_MS,
      maxDelayMs: opts.retryMaxDelayMs ?? DEFAULT_MAX_DELAY_MS,
      budget,
      ...(opts.endpoint ? { endpoint: opts.endpoint } : {}),
    }),
    counter: new RequestCounter(),
    idleTimeoutMs: timeouts.idleTimeoutMs,
    partSize: Math.max(MIN_PART_SIZE, opts.partSize ?? DEFAULT_PART_SIZE),
    uploadConcurrency: opts.uploadConcurrency ?? 4,
    uploadChecksum: opts.uploadChecksum ?? DEFAULT_UPLOAD_CHECKSUM,
    etagIsMd5: opts.etagChecksum ?? true,
    checksums: new ChecksumCounter(),
  };
}

/** `a/b` → `a/b/`; leading slashes dropped. */
function normalizePrefix(prefix: string): string {
  const p = prefix.replace(/^\/+/, '');
  return p === '' || p.endsWith('/') ? p : `${p}/`;
}

function infoOf(key: string, size?: number, lastModified?: Date, etag?: string): ObjectInfo {
  return {
    key,
    size: size ?? 0,
    lastModified: lastModified ?? new Date(0),
    etag: stripQuotes(etag ?? ''),
  };
}

/** S3 returns ETags quoted (`"abc"`); weak markers (`W/`) are dropped too. */
function stripQuotes(etag: string): string {
  return etag.replace(/^W\//, '').replace(/^"(.*)"$/, '$1');
}

function sendOpts(signal: AbortSignal | undefined): { abortSignal?: AbortSignal } {
  return signal ? { abortSignal: signal } : {};
}

/**
 * Ask for the object's checksum with the `x-amz-checksum-mode` header itself rather than the
 * command's ChecksumMode: that would make the SDK check each answer on its own, which a resumed
 * read cannot use (its range answers carry no full-object checksum); the reader checks the whole.
 */
function askForChecksum(command: GetObjectCommand): GetObjectCommand {
  command.middlewareStack.add(
    (next) => async (args) => {
      const request = args.request as { headers?: Record<string, string> };
      if (request.headers) request.headers['x-amz-checksum-mode'] = 'ENABLED';
      return next(args);
    },
    { step: 'build', name: 'tidemarkChecksumMode' },
  );
  return command;
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
      const header = (out.response as { headers?: Record<string, string> } | undefined)?.headers?.[
        'date'
      ];
      const date = header ? new Date(header) : undefined;
      if (date && !Number.isNaN(date.getTime())) clock.date = date;
      return out;
    },
    { step: 'deserialize', name: 'tidemarkServerDate' },
  );
  return clock;
}
