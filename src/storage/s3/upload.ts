/**
 * Upload of a local file: one PutObject when it fits in a part, else a multipart upload by
 * `@aws-sdk/lib-storage`'s `Upload` (parts read from the file, `queueSize` at a time, the upload
 * aborted on failure so no parts are left behind to be billed). The PUT, and each part, go
 * through the driver's retry policy; a multipart upload that fails otherwise starts over as a
 * whole: a data file's name is unique and nobody reads it before the commit that names it, so
 * sending it again is always safe. Each PUT and part carries a checksum computed here, and the
 * whole object's is returned with the store's answer for the driver to compare
 * (./upload-check.ts).
 */
import { createReadStream, promises as fsp } from 'node:fs';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  PutObjectCommand,
  UploadPartCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { UploadChecksum } from './checksums.js';
import { MultipartSums, singlePart } from './upload-check.js';
import type { ExpectedUpload, StoredAnswer } from './upload-check.js';
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
  /** What the PUT and each part carry for the store to verify (./checksums.ts). */
  checksum: UploadChecksum;
  signal?: AbortSignal;
}

/** What an upload sent and what the store answered, for ./upload-check.ts to compare. */
export interface Uploaded {
  multipart: boolean;
  expected: ExpectedUpload;
  answer: StoredAnswer;
}

/** Upload `localPath` to the context's key, visible in one step. */
export async function uploadFile(ctx: UploadContext, localPath: string): Promise<Uploaded> {
  const { size } = await fsp.stat(localPath);
  const target = { Bucket: ctx.bucket, Key: ctx.fullKey, ContentType: ctx.contentType };
  const op: Operation = {
    op: 'upload',
    key: ctx.key,
    uri: ctx.uri,
    ...(ctx.signal ? { signal: ctx.signal } : {}),
  };
  if (size <= ctx.partSize) {
    const body = await fsp.readFile(localPath);
    const sendOpts = ctx.signal ? { abortSignal: ctx.signal } : {};
    const { header, expected } = await singlePart(ctx.checksum, body);
    const params = { ...target, Body: body, ...header };
    const answer = await ctx.policy.run(op, () =>
      ctx.client.send(ctx.counter.track(new PutObjectCommand(params)), sendOpts),
    );
    return { multipart: false, expected, answer };
  }
  // A failed part is sent again on its own (its body is a Buffer lib-storage cut from the file);
  // anything else that fails the upload (its creation, its completion) starts it over, unless a
  // part has used up its attempts: then the store is unavailable and starting over would only
  // repeat them.
  const parts = { gaveUp: false };
  const attempts = ctx.policy.start(op);
  for (;;) {
    try {
      const uploaded = await multipartUpload(ctx, op, localPath, parts);
      attempts.succeeded();
      return uploaded;
    } catch (err) {
      if (parts.gaveUp) throw err;
      await attempts.failed(err);
    }
  }
}

async function multipartUpload(
  ctx: UploadContext,
  op: Operation,
  localPath: string,
  parts: { gaveUp: boolean },
): Promise<Uploaded> {
  // Each attempt's parts: their checksums, computed as they are sent (countingClient), make the
  // whole object's.
  const sums = new MultipartSums(ctx.checksum);
  const upload = new Upload({
    client: countingClient(ctx, op, parts, sums),
    params: {
      Bucket: ctx.bucket,
      Key: ctx.fullKey,
      ContentType: ctx.contentType,
      Body: createReadStream(localPath),
      ...sums.createParams(),
    },
    partSize: ctx.partSize,
    queueSize: ctx.concurrency,
    leavePartsOnError: false,
  });
  const abort = () => void upload.abort().catch(() => undefined);
  ctx.signal?.addEventListener('abort', abort, { once: true });
  try {
    const answer = await upload.done();
    return { multipart: true, expected: sums.expected(), answer };
  } finally {
    ctx.signal?.removeEventListener('abort', abort);
  }
}

/**
 * The client as `Upload` sees it: every command it sends is counted like the driver's own; each
 * part carries the checksum `sums` computes of it (so the SDK computes none) and is retried by
 * the driver's policy (the SDK's own retries are off); the completion carries the whole
 * object's full-object CRC for the store to check; and its abort of a failed upload is best
 * effort, so a store that refuses the abort cannot hide why the upload failed (a bucket
 * lifecycle rule, AbortIncompleteMultipartUpload, cleans up after it).
 */
function countingClient(
  ctx: UploadContext,
  op: Operation,
  parts: { gaveUp: boolean },
  sums: MultipartSums,
): S3Client {
  const { client, counter, policy } = ctx;
  return new Proxy(client, {
    get(target, property, receiver) {
      if (property !== 'send') return Reflect.get(target, property, receiver) as unknown;
      return async (command: Parameters<S3Client['send']>[0], options?: unknown) => {
        const tracked = counter.track(command);
        if (command instanceof UploadPartCommand) {
          const { Body, PartNumber } = command.input;
          // lib-storage cuts every part into a Buffer from the file.
          if (!(Body instanceof Uint8Array) || PartNumber === undefined)
            throw new TypeError('upload: a part without a byte body or a number');
          Object.assign(command.input, await sums.part(PartNumber, Body));
          return policy
            .run(op, () => target.send(tracked, options as never))
            .catch((err: unknown) => {
              parts.gaveUp = true;
              throw err;
            });
        }
        if (command instanceof CompleteMultipartUploadCommand)
          Object.assign(command.input, sums.completeParams());
        const sent = target.send(tracked, options as never);
        return command instanceof AbortMultipartUploadCommand ? sent.catch(() => undefined) : sent;
      };
    },
  });
}
