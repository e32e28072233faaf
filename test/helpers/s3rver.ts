/**
 * An s3rver (in-process S3 emulator) on 127.0.0.1 with a random port and a temp folder,
 * for tests. Start it once per test file (beforeAll) and stop it in afterAll.
 *
 * s3rver 3.7.1 quirks worth knowing (they are its bugs, not tidemark's):
 * - it ignores `If-None-Match: *` on PUT and overwrites (see probe.test.ts);
 * - a delimiter listing misses a folder holding only deeper folders (`a/b/c` gives no `a/`
 *   for prefix ''); a key that is a prefix of another key can be listed out of order;
 * - `Range: bytes=0-0` returns the whole object (S3Storage trims it);
 * - keys with `.`/`..` segments are normalised (`a/../b` is stored as `b`), and `a//b` 404s;
 * - StartAfter and continuation compare keys as UTF-16 strings, not UTF-8 bytes;
 * - its continuation tokens use single DES, which OpenSSL 3 (Node 17+) no longer has: every
 *   truncated listing fails with HTTP 500. `allowS3rverContinuationTokens` fixes that.
 */
import { randomUUID } from 'node:crypto';
import crypto from 'node:crypto';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import { S3Storage, s3ClientConfig } from '../../src/storage/s3.js';
import type { S3StorageOptions } from '../../src/storage/s3.js';

export interface S3rverHandle {
  /** `http://127.0.0.1:<port>` */
  endpoint: string;
  bucket: string;
  region: string;
  /** Options for S3Storage / S3Client (endpoint, region, path style, s3rver's fixed test keys). */
  clientOptions: Omit<S3StorageOptions, 'bucket'>;
  /** A client for direct SDK calls in tests. */
  client: S3Client;
  /** An S3Storage on the test bucket; without a prefix, a fresh unique one (isolates tests). */
  makeStorage(prefix?: string, extra?: Partial<S3StorageOptions>): S3Storage;
  stop(): Promise<void>;
}

/**
 * s3rver encrypts continuation tokens with `des` (DES-CBC), which OpenSSL 3 moved to its
 * legacy provider. Triple DES with three equal keys is exactly single DES, and is still
 * available, so map that one algorithm for s3rver (it runs in this process and calls
 * `crypto.createCipheriv` through the shared CommonJS module object). Test-only.
 */
function allowS3rverContinuationTokens(): void {
  const mutable = crypto as unknown as Record<string, unknown> & { __tidemarkDesShim?: boolean };
  if (mutable.__tidemarkDesShim) return;
  const wrap = (original: (...args: any[]) => unknown) =>
    function (this: unknown, algorithm: string, key: Buffer, iv: Buffer, ...rest: unknown[]) {
      if (algorithm === 'des' && key.length === 8) return original.call(this, 'des-ede3-cbc', Buffer.concat([key, key, key]), iv, ...rest);
      return original.call(this, algorithm, key, iv, ...rest);
    };
  mutable['createCipheriv'] = wrap(crypto.createCipheriv);
  mutable['createDecipheriv'] = wrap(crypto.createDecipheriv);
  mutable.__tidemarkDesShim = true;
}

/** s3rver's built-in credentials: test-only, never used outside tests. */
const S3RVER_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

/** Start s3rver with one bucket. */
export async function startS3rver(bucket = 'tidemark-test'): Promise<S3rverHandle> {
  allowS3rverContinuationTokens();
  const directory = await fsp.mkdtemp(path.join(os.tmpdir(), 'tidemark-s3rver-'));
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory,
    configureBuckets: [{ name: bucket }],
  });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  const region = 'us-east-1'; // s3rver's continuation tokens only accept us-east-1
  const clientOptions = { endpoint, region, forcePathStyle: true, credentials: S3RVER_CREDENTIALS, maxAttempts: 2 };
  const client = new S3Client(s3ClientConfig(clientOptions));
  return {
    endpoint,
    bucket,
    region,
    clientOptions,
    client,
    makeStorage: (prefix = `t-${randomUUID()}/`, extra = {}) =>
      new S3Storage({ bucket, prefix, client, ...extra }),
    async stop() {
      client.destroy();
      await server.close();
      await fsp.rm(directory, { recursive: true, force: true });
    },
  };
}
