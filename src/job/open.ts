/**
 * Open a job's source and target from its config.
 */
import type { StorageConfig } from '../config/schema.js';
import type { JobConfig } from '../config/schema.js';
import type { DiscoveryConfig } from '../discovery/index.js';
import { openStorage, type S3EndpointOptions } from '../storage/uri.js';
import type { Storage } from '../storage/storage.js';

/** Opens a Storage for a URI (the source or the target of a job). */
export type StorageOpener = (uri: string, s3Options: S3EndpointOptions) => Storage;

function s3Options(cfg: StorageConfig): S3EndpointOptions {
  return {
    ...(cfg.endpoint ? { endpoint: cfg.endpoint } : {}),
    ...(cfg.region ? { region: cfg.region } : {}),
    ...(cfg.forcePathStyle !== undefined ? { forcePathStyle: cfg.forcePathStyle } : {}),
  };
}

/** Source storage rooted at the source prefix. */
export function openSource(job: JobConfig, cfg: StorageConfig, open: StorageOpener = openStorage): Storage {
  return open(job.source.uri, s3Options(cfg));
}

/** Target storage rooted at the table root. */
export function openTarget(job: JobConfig, cfg: StorageConfig, open: StorageOpener = openStorage): Storage {
  return open(job.target.uri, s3Options(cfg));
}

/** The discovery settings of a job, in discovery's own terms. */
export function discoveryConfigOf(job: JobConfig): DiscoveryConfig {
  const d = job.source.discover;
  const common = { requireSuccessMarker: d.requireSuccessMarker, onOverwrite: d.onOverwrite, ...(d.start ? { start: d.start } : {}) };
  return d.by === 'partition'
    ? { by: 'partition', layout: d.layout, lookback: d.lookback, timezone: d.timezone, ...common }
    : { by: 'modified', settle: d.settle, ...common };
}
