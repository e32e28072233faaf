/**
 * Storage settings per source and target: `source.storage` / `target.storage` over the
 * top-level `storage`, field by field (a landing zone on one endpoint, the lake on another).
 */
import type { JobConfig, StorageConfig, StorageOverride, TidemarkConfig } from './schema.js';

/** The global settings: a whole config or its `storage` (what a RunContext carries). */
export type GlobalStorage = StorageConfig | Pick<TidemarkConfig, 'storage'>;

function globalOf(global: GlobalStorage): StorageConfig {
  return 'storage' in global ? global.storage : global;
}

function merge(global: StorageConfig, own: StorageOverride | undefined): StorageConfig {
  const merged: StorageConfig = { ...global };
  for (const [field, value] of Object.entries(own ?? {})) {
    if (value !== undefined) (merged as Record<string, unknown>)[field] = value;
  }
  return merged;
}

/** The job's target storage settings, including `singleWriter` (which only a target has). */
export function targetStorageConfig(
  global: GlobalStorage,
  job: Pick<JobConfig, 'target'>,
): StorageConfig {
  return merge(globalOf(global), job.target.storage);
}

/**
 * The job's source storage settings. `singleWriter` is the global one: a source is only read,
 * so it has none of its own.
 */
export function sourceStorageConfig(
  global: GlobalStorage,
  job: Pick<JobConfig, 'source'>,
): StorageConfig {
  return merge(globalOf(global), job.source.storage);
}
