/**
 * Upload of a local file: one PutObject when it fits in a part, else a multipart upload by
 * `@aws-sdk/lib-storage`'s `Upload` (parts read from the file, `queueSize` at a time, the upload
 * aborted on failure so no parts are left behind to be billed). Both go through the driver's
 * retry policy as whole objects: a data file's name is unique and nobody reads it before the
 * commit that names it, so sending it again is always safe.
 */
import { createReadStream, promises as fsp } from 'node:fs';
import { AbortMultipartUploadCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
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

/** Upload `localPath` to the context's key, visible in one step. */
export async function uploadFile(ctx: UploadContext, localPath: string): Promise<void> {
  const { size } = await fsp.stat(localPath);
  const target = { Bucket: ctx.bucket, Key: ctx.fullKey, ContentType: ctx.contentType };
  const op: Operation = { op: 'upload', key: ctx.key, uri: ctx.uri, ...(ctx.signal ? { signal: ctx.signal } : {}) };
  if (size <= ctx.partSize) {
    const body = await fsp.readFile(localPath);
    const sendOpts = ctx.signal ? { abortSignal: ctx.signal } : {};
    await ctx.policy.run(op, () => ctx.client.send(ctx.counter.track(new PutObjectCommand({ ...target, Body: body })), sendOpts));
    return;
  }
  await ctx.policy.run(op, async () => {
    const upload = new Upload({
      client: countingClient(ctx.client, ctx.counter),
      params: { ...target, Body: createReadStream(localPath) },
      partSize: ctx.partSize,
      queueSize: ctx.concurrency,
      leavePartsOnError: false,
    });
    const abort = () => void upload.abort().catch(() => undefined);
    ctx.signal?.addEventListener('abort', abort, { once: true });
    try {
      await upload.done();
    } finally {
      ctx.signal?.removeEventListener('abort', abort);
    }
  });
}

/**
 * The client as `Upload` sees it: every command it sends is counted like the driver's own, and
 * its abort of a failed upload is best effort, so a store that refuses the abort cannot hide why
 * the upload failed (a bucket lifecycle rule, AbortIncompleteMultipartUpload, cleans up after it).
 */
function countingClient(client: S3Client, counter: RequestCounter): S3Client {
  return new Proxy(client, {
    get(target, property, receiver) {
      if (property !== 'send') return Reflect.get(target, property, receiver) as unknown;
      return async (command: Parameters<S3Client['send']>[0], options?: unknown) => {
        const sent = target.send(counter.track(command), options as never);
        return command instanceof AbortMultipartUploadCommand ? sent.catch(() => undefined) : sent;
      };
    },
  });
}
