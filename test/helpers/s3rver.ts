/**
 * The embedded s3rver (scripts/lib/embedded-s3.ts, with its listing and DES fixes) for tests:
 * 127.0.0.1, random port, temp folder. Start it once per test file (beforeAll), stop it in afterAll.
 *
 * s3rver 3.7.1 quirks that remain (its bugs, not tidemark's):
 * - it ignores `If-None-Match: *` on PUT and overwrites (see probe.test.ts);
 * - a key that is a prefix of another key can be listed out of order;
 * - `Range: bytes=0-0` returns the whole object (S3Storage trims it);
 * - keys with `.`/`..` segments are normalised (`a/../b` is stored as `b`), and `a//b` 404s;
 * - StartAfter and continuation compare keys as UTF-16 strings, not UTF-8 bytes.
 */
import { randomUUID } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { startEmbeddedS3 } from '../../scripts/lib/embedded-s3.js';
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
  /**
   * A fresh landing zone under `<name>-<uuid>/`: its storage, `s3://` URI, key prefix, and the
   * config's `storage` section for a job (or a CLI child) reading it.
   */
  landingZone(name?: string): S3LandingZone;
  /**
   * Put many small objects fast by writing them straight into s3rver's store folder
   * (`<bucket>/<key>._S3rver_object`; s3rver derives ETag, size and LastModified from the file).
   * A PUT through s3rver costs ~10 ms, too slow for landing zones with years of partitions.
   */
  seedObjects(objects: ReadonlyArray<readonly [key: string, body: string]>): Promise<void>;
  /** Back-date an object (s3rver reports its store file's mtime as LastModified). `key` includes any prefix. */
  setLastModified(key: string, at: Date): Promise<void>;
  stop(): Promise<void>;
}

/** See S3rverHandle.landingZone. */
export interface S3LandingZone {
  source: S3Storage;
  uri: string;
  prefix: string;
  storageConfig: { endpoint: string; region: string; forcePathStyle: true };
}

/** Start s3rver with one bucket. */
export async function startS3rver(bucket = 'tidemark-test'): Promise<S3rverHandle> {
  const directory = await fsp.mkdtemp(path.join(os.tmpdir(), 'tidemark-s3rver-'));
  const server = await startEmbeddedS3({ buckets: [bucket], directory });
  const { endpoint, region } = server;
  const clientOptions = {
    endpoint,
    region,
    forcePathStyle: true,
    credentials: server.credentials,
    maxAttempts: 2,
  };
  const client = new S3Client(s3ClientConfig(clientOptions));
  return {
    endpoint,
    bucket,
    region,
    clientOptions,
    client,
    makeStorage: (prefix = `t-${randomUUID()}/`, extra = {}) =>
      new S3Storage({ bucket, prefix, client, ...extra }),
    landingZone(name = 'landing') {
      const prefix = `${name}-${randomUUID()}/`;
      return {
        source: new S3Storage({ bucket, prefix, client }),
        uri: `s3://${bucket}/${prefix}`,
        prefix,
        storageConfig: { endpoint, region, forcePathStyle: true },
      };
    },
    async seedObjects(objects) {
      const folders = new Set(
        objects.map(([key]) => path.dirname(path.join(directory, bucket, key))),
      );
      await Promise.all([...folders].map((f) => fsp.mkdir(f, { recursive: true })));
      await Promise.all(
        objects.map(([key, body]) =>
          fsp.writeFile(path.join(directory, bucket, `${key}._S3rver_object`), body),
        ),
      );
    },
    async setLastModified(key, at) {
      // s3rver may still be finishing its own write of the object when the PUT has answered,
      // which would stamp the file again: set the time until a HEAD reports it (bounded).
      const file = path.join(directory, bucket, `${key}._S3rver_object`);
      for (let attempt = 0; attempt < 50; attempt++) {
        await fsp.utimes(file, at, at);
        const head = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
        if (head.LastModified?.getTime() === Math.floor(at.getTime() / 1000) * 1000) return;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      throw new Error(`s3rver kept a different LastModified for ${key} than ${at.toISOString()}`);
    },
    async stop() {
      client.destroy();
      await server.stop();
      await fsp.rm(directory, { recursive: true, force: true });
    },
  };
}
