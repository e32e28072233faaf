/**
 * Open a job's source and target from its config.
 */
import type { StorageConfig } from '../config/schema.js';
import type { JobConfig } from '../config/schema.js';
import { sourceStorageConfig, targetStorageConfig } from '../config/storage.js';
import type { DiscoveryConfig } from '../discovery/index.js';
import { CONTENT_DIGEST_MAX_BYTES, type LocalStorageOptions } from '../storage/local.js';
import { RetryBudget } from '../storage/s3.js';
import { openStorage, type S3EndpointOptions } from '../storage/uri.js';
import type { Storage } from '../storage/storage.js';

/** Opens a Storage for a URI (the source or the target of a job). */
export type StorageOpener = (
  uri: string,
  s3Options: S3EndpointOptions,
  localOptions?: LocalStorageOptions,
) => Storage;

/**
 * S3 client options of storage settings (already merged for the source or target); `budget`
 * is the retry budget the job's source and target share, so a store that is down fails the run
 * fast instead of every request waiting out its own attempts.
 */
export function s3Options(cfg: StorageConfig, budget: RetryBudget | undefined): S3EndpointOptions {
  return {
    ...(cfg.endpoint ? { endpoint: cfg.endpoint } : {}),
    ...(cfg.region ? { region: cfg.region } : {}),
    ...(cfg.forcePathStyle !== undefined ? { forcePathStyle: cfg.forcePathStyle } : {}),
    ...(cfg.connectTimeout !== undefined ? { connectTimeoutMs: cfg.connectTimeout } : {}),
    ...(cfg.requestTimeout !== undefined ? { requestTimeoutMs: cfg.requestTimeout } : {}),
    ...(cfg.idleTimeout !== undefined ? { idleTimeoutMs: cfg.idleTimeout } : {}),
    ...(cfg.maxAttempts !== undefined ? { maxAttempts: cfg.maxAttempts } : {}),
    ...(cfg.uploadChecksum !== undefined ? { uploadChecksum: cfg.uploadChecksum } : {}),
    ...(cfg.etagChecksum !== undefined ? { etagChecksum: cfg.etagChecksum } : {}),
    ...(budget ? { retryBudget: budget } : {}),
  };
}

/** Source storage rooted at the source prefix; `source.storage` applies over the global `cfg`. */
export function openSource(
  job: JobConfig,
  cfg: StorageConfig,
  open: StorageOpener = openStorage,
  budget?: RetryBudget,
): Storage {
  // Small local source files are known by their content: a touch or a chmod is no new version.
  return open(job.source.uri, s3Options(sourceStorageConfig(cfg, job), budget), {
    contentDigestMaxBytes: CONTENT_DIGEST_MAX_BYTES,
  });
}

/** Target storage rooted at the table root; `target.storage` applies over the global `cfg`. */
export function openTarget(
  job: JobConfig,
  cfg: StorageConfig,
  open: StorageOpener = openStorage,
  budget?: RetryBudget,
): Storage {
  return open(job.target.uri, s3Options(targetStorageConfig(cfg, job), budget));
}

/** The discovery settings of a job, in discovery's own terms. */
export function discoveryConfigOf(job: JobConfig): DiscoveryConfig {
  const d = job.source.discover;
  const { include, exclude } = job.source;
  if (d.by === 'notifications') {
    return {
      by: 'notifications',
      queue: d.queue,
      reconcileEvery: d.reconcileEvery,
      visibilityTimeout: d.visibilityTimeout,
      onOverwrite: d.onOverwrite,
      ...(d.region !== undefined ? { region: d.region } : {}),
      ...(d.start ? { start: d.start } : {}),
      ...(include ? { include } : {}),
      ...(exclude ? { exclude } : {}),
    };
  }
  const common = {
    requireSuccessMarker: d.requireSuccessMarker,
    onOverwrite: d.onOverwrite,
    ...(d.start ? { start: d.start } : {}),
    ...(include ? { include } : {}),
    ...(exclude ? { exclude } : {}),
  };
  return d.by === 'partition'
    ? {
        by: 'partition',
        layout: d.layout,
        lookback: d.lookback,
        lateCheck: d.lateCheck,
        timezone: d.timezone,
        ...common,
      }
    : { by: 'modified', settle: d.settle, incrementalListing: d.incrementalListing, ...common };
}
