/**
 * Synthetic listings for the pure planners: what a walk or a listing of a landing zone
 * would return, built from a list of files, so planning tests need no I/O.
 */
import type { ModifiedListing } from '../../src/discovery/by-modified.js';
import {
  resolveDiscovery,
  type DiscoveryConfig,
  type ModifiedSettings,
  type PartitionSettings,
} from '../../src/discovery/config.js';
import type { Layout } from '../../src/discovery/layout.js';
import type { PartitionFolder, PartitionWalk } from '../../src/discovery/partitions.js';
import type { DiscoveryPlan } from '../../src/discovery/plan.js';
import type { ObjectInfo } from '../../src/storage/storage.js';

/** A file of a synthetic landing zone; the etag defaults to one derived from key and time. */
export interface FakeFile {
  key: string;
  /** ISO time or epoch ms. */
  modified: string | number;
  etag?: string;
  size?: number;
}

/** ObjectInfo of a fake file. */
export function objectOf(f: FakeFile): ObjectInfo {
  const lastModified = new Date(f.modified);
  return {
    key: f.key,
    size: f.size ?? 100,
    lastModified,
    etag: f.etag ?? `${f.key}@${lastModified.getTime()}`,
  };
}

/** What a walk of `files` returns: every partition folder (the planner keeps those in range). */
export function walkOf(
  layout: Layout,
  serverTime: string | Date,
  files: FakeFile[],
): PartitionWalk {
  const depth = layout.levels.length;
  const partitions = new Map<string, PartitionFolder>();
  const strayObjects: ObjectInfo[] = [];
  for (const f of files) {
    const segments = f.key.split('/');
    const prefix = segments.slice(0, depth).join('/') + '/';
    const parsed = segments.length > depth ? layout.parsePrefix(prefix) : { reason: 'stray' };
    if ('reason' in parsed) {
      strayObjects.push(objectOf(f));
      continue;
    }
    const folder = partitions.get(prefix) ?? { id: parsed.id, prefix, objects: [] };
    folder.objects.push(objectOf(f));
    partitions.set(prefix, folder);
  }
  const sorted = [...partitions.values()].sort((a, b) => (a.id < b.id ? -1 : 1));
  return {
    partitions: sorted,
    skippedFolders: [],
    strayObjects,
    serverTime: new Date(serverTime),
    listRequests: 0,
  };
}

/** What a listing of `files` returns. */
export function listingOf(serverTime: string | number | Date, files: FakeFile[]): ModifiedListing {
  return {
    objects: files.map(objectOf),
    olderThanWindow: 0,
    prefixesListed: [],
    skippedFolders: [],
    serverTime: new Date(serverTime),
    listRequests: 0,
  };
}

/** Resolved partition settings. */
export function partitionSettings(
  config: Omit<Extract<DiscoveryConfig, { by: 'partition' }>, 'by'>,
): PartitionSettings {
  return resolveDiscovery({ by: 'partition', ...config }) as PartitionSettings;
}

/** Resolved modification-time settings. */
export function modifiedSettings(
  config: Omit<Extract<DiscoveryConfig, { by: 'modified' }>, 'by'> = {},
): ModifiedSettings {
  return resolveDiscovery({ by: 'modified', ...config }) as ModifiedSettings;
}

/** Keys of the plan's files, in load order. */
export function loadedKeys(plan: DiscoveryPlan): string[] {
  return plan.files.map((f) => f.key);
}

/** `key -> reason` for every decision. */
export function reasons(plan: DiscoveryPlan): Record<string, string> {
  return Object.fromEntries(plan.decisions.map((d) => [d.key, d.reason]));
}
