/**
 * moto's S3 server (PyPI moto, `moto_server`), the second real S3 implementation the storage
 * tests run against. It needs Python, so `npm test` does not start it: the interop run does
 * (interop/storage-on-moto.sh) and names it in TIDEMARK_MOTO_ENDPOINT. Unset, the tests that
 * need it are not registered at all (not skipped, not counted).
 *
 * Unlike s3rver, moto honours `If-None-Match: *` on PUT, stores and answers checksums (also a
 * multipart upload's composite `…-N` and full-object ones) and answers a Range on bytes 0-0 as
 * S3 does. One server holds many tests' objects: each storage gets a fresh prefix.
 */
import { randomUUID } from 'node:crypto';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { S3Storage, s3ClientConfig } from '../../src/storage/s3.js';
import type { S3StorageOptions } from '../../src/storage/s3.js';

/** The endpoint of a running moto server (`http://127.0.0.1:<port>`), when the run has one. */
export const MOTO_ENDPOINT: string | undefined = process.env['TIDEMARK_MOTO_ENDPOINT'] || undefined;

export interface MotoHandle {
  endpoint: string;
  bucket: string;
  /** Options for S3Storage / S3Client (moto accepts any credentials; these are made up). */
  clientOptions: Omit<S3StorageOptions, 'bucket'>;
  /** A client for direct SDK calls in tests. */
  client: S3Client;
  /** An S3Storage on the test bucket (its client) under a fresh prefix (or `prefix`). */
  makeStorage(prefix?: string, extra?: Partial<S3StorageOptions>): S3Storage;
  stop(): void;
}

/** A bucket on the run's moto server (created when missing). */
export async function connectMoto(endpoint: string, bucket = 'tidemark-test'): Promise<MotoHandle> {
  const clientOptions = {
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: 'moto', secretAccessKey: 'moto' },
    maxAttempts: 2,
  };
  const client = new S3Client(s3ClientConfig(clientOptions));
  try {
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
  } catch (err) {
    if ((err as { name?: string }).name !== 'BucketAlreadyOwnedByYou') throw err;
  }
  return {
    endpoint,
    bucket,
    clientOptions,
    client,
    makeStorage: (prefix = `t-${randomUUID()}/`, extra = {}) =>
      new S3Storage({ bucket, prefix, client, ...extra }),
    stop: () => client.destroy(),
  };
}
