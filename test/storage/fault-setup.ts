/**
 * s3rver with the fault proxy in front (emulating S3's conditional requests and checksums), and
 * S3Storages through it with short timeouts and backoffs, so fault-injection tests fail over in
 * milliseconds instead of S3's seconds.
 */
import { randomUUID } from 'node:crypto';
import { S3Storage } from '../../src/storage/s3.js';
import type { S3StorageOptions } from '../../src/storage/s3.js';
import { startFaultProxy } from '../helpers/fault-proxy.js';
import type { FaultProxy, FaultProxyOptions } from '../helpers/fault-proxy.js';
import { scaled } from '../helpers/machine.js';
import { startS3rver } from '../helpers/s3rver.js';
import type { S3rverHandle } from '../helpers/s3rver.js';

/**
 * Timeouts and retries for tests: a silent connection costs 300 ms on a quiet machine, a backoff
 * at most 40 ms. The timeouts scale with the machine (test/helpers/machine.ts): on a busy one
 * s3rver itself can take longer than 300 ms to answer, and a fault-free request would time out.
 */
export const FAST_RETRIES: Partial<S3StorageOptions> = {
  connectTimeoutMs: scaled(300),
  requestTimeoutMs: scaled(3_000),
  idleTimeoutMs: scaled(300),
  maxAttempts: 5,
  retryBaseDelayMs: 5,
  retryMaxDelayMs: 40,
  partSize: 5 * 1024 * 1024,
};

export interface ProxiedS3 {
  s3: S3rverHandle;
  proxy: FaultProxy;
  /** A storage through the proxy on a fresh prefix (or `prefix`). */
  storage(extra?: Partial<S3StorageOptions>, prefix?: string): S3Storage;
  /** A storage straight on s3rver (no proxy, no faults) for setting up and checking. */
  direct(prefix: string): S3Storage;
  stop(): Promise<void>;
}

export async function startProxiedS3(proxyOpts: Omit<FaultProxyOptions, 'target'> = {}): Promise<ProxiedS3> {
  const s3 = await startS3rver();
  const proxy = await startFaultProxy({ target: s3.endpoint, emulateConditionals: true, emulateChecksums: true, ...proxyOpts });
  const made: S3Storage[] = [];
  return {
    s3,
    proxy,
    storage(extra = {}, prefix = `f-${randomUUID()}/`) {
      const storage = new S3Storage({ bucket: s3.bucket, prefix, ...s3.clientOptions, ...FAST_RETRIES, ...extra, endpoint: extra.endpoint ?? proxy.endpoint });
      made.push(storage);
      return storage;
    },
    direct: (prefix) => s3.makeStorage(prefix),
    async stop() {
      for (const s of made) s.client.destroy();
      await proxy.stop();
      await s3.stop();
    },
  };
}
