/**
 * The storage contract once more, for S3Storage behind the fault proxy with no faults: the proxy
 * itself changes nothing a driver can see. The proxy emulates S3's conditional requests, so
 * the put-if-absent tests that s3rver alone cannot pass run here.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll } from 'vitest';
import { S3Storage } from '../../src/storage/s3.js';
import { startFaultProxy } from '../helpers/fault-proxy.js';
import type { FaultProxy } from '../helpers/fault-proxy.js';
import { startS3rver } from '../helpers/s3rver.js';
import type { S3rverHandle } from '../helpers/s3rver.js';
import { storageContract } from './contract.js';

let s3: S3rverHandle;
let proxy: FaultProxy;
const storages: S3Storage[] = [];
beforeAll(async () => {
  s3 = await startS3rver();
  proxy = await startFaultProxy({ target: s3.endpoint, emulateConditionals: true });
});
afterAll(async () => {
  for (const s of storages) s.client.destroy();
  await proxy?.stop();
  await s3?.stop();
});

storageContract(
  'S3Storage behind the fault proxy (no faults)',
  async () => {
    const storage = new S3Storage({
      bucket: s3.bucket,
      prefix: `cp-${randomUUID()}/`,
      ...s3.clientOptions,
      endpoint: proxy.endpoint,
      partSize: 5 * 1024 * 1024,
    });
    storages.push(storage);
    return storage;
  },
  { largeUploadBytes: 11 * 1024 * 1024 + 123, quirks: { utf16StartAfter: true } },
);
