/**
 * Upload of a local file: one PutObject when it fits in a part, else a multipart upload whose
 * parts are read from the file and retried one by one (a retry re-reads its part from disk).
 * Every request goes through the driver's retry policy. A failed multipart upload is aborted,
 * so no parts are left behind to be billed; a completion whose answer was lost is recognised by
 * the object's ETag.
 */
import { createHash } from 'node:crypto';
import { createReadStream, promises as fsp } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  HeadObjectCommand,
  PutObjectCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import type { S3Client } from '@aws-sdk/client-s3';
import { StorageError } from '../../errors.js';
import { classify, statusOf } from './faults.js';
import type { RequestCounter } from './request-counter.js';
import type { Operation, RetryPolicy } from './retry.js';

export interface UploadContext {
  client: S3Client;
  counter: RequestCounter;
  policy: RetryPolicy;
  bucket: string;
  /** Bucket key. */
  fullKey: string;
  /** Storage key and URI, for messages. */
  key: string;
  uri: string;
  contentType?: string;
  partSize: number;
  concurrency: number;
  signal?: AbortSignal;
}

interface Part {
  PartNumber: number;
  ETag: string;
  md5: Buffer;
}

/** Upload `localPath` to the context's key, visible in one step. */
export async function uploadFile(ctx: UploadContext, localPath: string): Promise<void> {
  const file = await fsp.open(localPath, 'r');
  try {
    const { size } = await file.stat();
    if (size <= ctx.partSize) {
      // A plain PUT is idempotent: a retry sends the whole object again.
      const body = await readSlice(file, 0, size);
      await ctx.policy.run(op(ctx, 'upload'), () => ctx.client.send(ctx.counter.track(new PutObjectCommand({ ...target(ctx), Body: body })), sendOpts(ctx)));
      return;
    }
    await multipart(ctx, file, size, localPath);
  } finally {
    await file.close();
  }
}

async function multipart(ctx: UploadContext, file: FileHandle, size: number, localPath: string): Promise<void> {
  // A lost answer here leaves an upload we cannot name to abort; a bucket lifecycle rule
  // (AbortIncompleteMultipartUpload) is the backstop for those.
  const created = await ctx.policy.run(op(ctx, 'upload'), () => ctx.client.send(ctx.counter.track(new CreateMultipartUploadCommand(target(ctx))), sendOpts(ctx)));
  const uploadId = created.UploadId;
  if (!uploadId) throw new StorageError(`[storage] S3 upload of ${JSON.stringify(ctx.key)} in ${ctx.uri}: the store returned no upload id`, { context: { key: ctx.key, uri: ctx.uri } });
  try {
    const parts = await uploadParts(ctx, file, size, uploadId);
    await complete(ctx, uploadId, parts, localPath);
  } catch (err) {
    await abort(ctx, uploadId);
    throw err;
  }
}

/** Parts in parallel (`concurrency` workers); all workers settle before a failure is thrown. */
async function uploadParts(ctx: UploadContext, file: FileHandle, size: number, uploadId: string): Promise<Part[]> {
  const count = Math.ceil(size / ctx.partSize);
  const parts: Part[] = [];
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (!failed && next < count) {
      const n = ++next;
      const start = (n - 1) * ctx.partSize;
      const data = await readSlice(file, start, Math.min(ctx.partSize, size - start));
      try {
        const out = await ctx.policy.run(op(ctx, `upload (part ${n} of ${count})`), () =>
          ctx.client.send(
            ctx.counter.track(new UploadPartCommand({ Bucket: ctx.bucket, Key: ctx.fullKey, UploadId: uploadId, PartNumber: n, Body: data })),
            sendOpts(ctx),
          ),
        );
        parts.push({ PartNumber: n, ETag: out.ETag ?? '', md5: createHash('md5').update(data).digest() });
      } catch (err) {
        failed = true;
        throw err;
      }
    }
  };
  const settled = await Promise.allSettled(Array.from({ length: Math.min(ctx.concurrency, count) }, worker));
  const rejected = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (rejected) throw rejected.reason;
  return parts.sort((a, b) => a.PartNumber - b.PartNumber);
}

/**
 * Complete the upload. When an attempt's answer was lost, the store may have completed it: the
 * upload id is then gone (S3 answers 404 NoSuchUpload, s3rver 500), so before each retry the
 * object is checked for the ETag of our bytes.
 */
async function complete(ctx: UploadContext, uploadId: string, parts: Part[], localPath: string): Promise<void> {
  const attempts = ctx.policy.start(op(ctx, 'upload (complete)'));
  const ours = etagsOf(parts, localPath);
  let ambiguous = false;
  for (;;) {
    if (ambiguous && (await landed(ctx, ours))) return;
    try {
      const command = new CompleteMultipartUploadCommand({
        Bucket: ctx.bucket,
        Key: ctx.fullKey,
        UploadId: uploadId,
        MultipartUpload: { Parts: parts.map(({ PartNumber, ETag }) => ({ PartNumber, ETag })) },
      });
      await ctx.client.send(ctx.counter.track(command), sendOpts(ctx));
      attempts.succeeded();
      return;
    } catch (err) {
      if (ambiguous && statusOf(err) === 404) {
        throw new StorageError(`[storage] S3 multipart upload of ${JSON.stringify(ctx.key)} in ${ctx.uri} was lost while it was completed; upload again`, {
          kind: 'transient',
          context: { key: ctx.key, uri: ctx.uri, attempts: attempts.failures + 1 },
          cause: err,
        });
      }
      if (classify(err).transient) ambiguous = true;
      await attempts.failed(err);
    }
  }
}

/**
 * The ETags our bytes can have: AWS gives a multipart object md5(part md5s)-N; s3rver and some
 * S3-compatible stores give the md5 of the whole object (computed only if asked for).
 */
function etagsOf(parts: Part[], localPath: string): () => Promise<string[]> {
  const multipart = `${createHash('md5').update(Buffer.concat(parts.map((p) => p.md5))).digest('hex')}-${parts.length}`;
  let whole: Promise<string> | undefined;
  return async () => [multipart, await (whole ??= md5OfFile(localPath))];
}

/** Does the key hold our bytes? A failed check counts as "no" (the retry that follows decides). */
async function landed(ctx: UploadContext, ours: () => Promise<string[]>): Promise<boolean> {
  const head = await ctx.policy.run(op(ctx, 'upload (check)'), () => ctx.client.send(ctx.counter.track(new HeadObjectCommand(target(ctx))), sendOpts(ctx))).catch(() => null);
  const etag = head?.ETag?.replace(/"/g, '');
  return etag !== undefined && (await ours()).includes(etag);
}

/** Best effort: a failed abort must not hide why the upload failed. Not tied to the caller's signal. */
async function abort(ctx: UploadContext, uploadId: string): Promise<void> {
  const noSignal = { ...ctx, signal: undefined };
  await ctx.policy
    .run(op(noSignal, 'upload (abort)'), () => ctx.client.send(ctx.counter.track(new AbortMultipartUploadCommand({ Bucket: ctx.bucket, Key: ctx.fullKey, UploadId: uploadId }))))
    .catch(() => undefined);
}

function target(ctx: UploadContext) {
  return { Bucket: ctx.bucket, Key: ctx.fullKey, ContentType: ctx.contentType };
}

function op(ctx: UploadContext, name: string): Operation {
  return { op: name, key: ctx.key, uri: ctx.uri, ...(ctx.signal ? { signal: ctx.signal } : {}) };
}

/** Options of one request: the caller's signal. */
function sendOpts(ctx: UploadContext): { abortSignal?: AbortSignal } {
  return ctx.signal ? { abortSignal: ctx.signal } : {};
}

async function readSlice(file: FileHandle, start: number, length: number): Promise<Buffer> {
  const buf = Buffer.alloc(length);
  let got = 0;
  while (got < length) {
    const { bytesRead } = await file.read(buf, got, length - got, start + got);
    if (bytesRead === 0) throw new StorageError(`[storage] local file shrank while it was uploaded (at byte ${start + got})`, { context: { position: start + got } });
    got += bytesRead;
  }
  return buf;
}

async function md5OfFile(localPath: string): Promise<string> {
  const hash = createHash('md5');
  for await (const chunk of createReadStream(localPath)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
