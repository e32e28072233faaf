/**
 * Files a run looks at again although their partition lies before the scan window: the files
 * the job quarantined. Overwriting a quarantined file with fixed content loads it again (with
 * `onOverwrite: reload`), however long ago its partition left the lookback window, so each run
 * lists the partition folder of every quarantined file outside the window (one listing per
 * folder) and plans those whose ETag changed. Partition discovery only: by modification time an
 * overwritten file has a new LastModified, inside the window (with `incrementalListing` its key is
 * listed on its own when the listing starts after it: ./by-modified.ts).
 */
import type { Storage } from '../storage/storage.js';
import type { PartitionSettings } from './config.js';
import { SUCCESS_MARKER } from './identity.js';
import type { Decision, DiscoveredFile } from './plan.js';

/** A file to look at again: its key and the ETag it had when it was set aside. */
export interface RevisitFile {
  key: string;
  etag: string;
}

/** What the folders of the files to revisit hold now. */
export interface Revisited {
  files: DiscoveredFile[];
  decisions: Decision[];
  /** Partition folders listed. */
  prefixes: string[];
  listRequests: number;
}

/**
 * List the partition folders of `revisit` that lie before `from` (those in the window are
 * listed anyway) and plan every file among them that was overwritten (a new ETag). With
 * `onOverwrite: ignore`, or a missing success marker when one is required, nothing is planned.
 */
export async function revisitBeforeWindow(
  storage: Storage,
  settings: PartitionSettings,
  revisit: readonly RevisitFile[],
  from: string | null,
  signal?: AbortSignal,
): Promise<Revisited> {
  const out: Revisited = { files: [], decisions: [], prefixes: [], listRequests: 0 };
  if (settings.onOverwrite !== 'reload' || from === null) return out;
  const byFolder = new Map<string, { id: string; files: RevisitFile[] }>();
  for (const f of revisit) {
    const prefix = partitionPrefixOf(f.key, settings.layout.levels.length);
    const parsed = prefix === null ? null : settings.layout.parsePrefix(prefix);
    if (prefix === null || parsed === null || 'reason' in parsed || parsed.id >= from) continue;
    const entry = byFolder.get(prefix) ?? { id: parsed.id, files: [] };
    entry.files.push(f);
    byFolder.set(prefix, entry);
  }
  for (const [prefix, { id, files }] of byFolder) {
    const listing = await storage.listAll({ prefix, ...(signal ? { signal } : {}) });
    out.listRequests += 1;
    out.prefixes.push(prefix);
    const now = new Map(listing.objects.map((o) => [o.key, o]));
    const marked = now.has(prefix + SUCCESS_MARKER);
    for (const f of files) {
      const o = now.get(f.key);
      if (
        !o ||
        o.etag === f.etag ||
        !settings.selects(o.key) ||
        (settings.requireSuccessMarker && !marked)
      )
        continue;
      out.files.push({ ...o, partition: id, arrival: o.lastModified, loadedBefore: true });
      out.decisions.push({
        key: o.key,
        action: 'load',
        reason: 'overwritten since quarantined, reloading',
        partition: id,
      });
    }
  }
  return out;
}

/** The first `levels` folders of `key` (`2026/03/05/` of `2026/03/05/x/a.csv`), or null when it is not that deep. */
function partitionPrefixOf(key: string, levels: number): string | null {
  const names = key.split('/');
  return names.length <= levels ? null : names.slice(0, levels).join('/') + '/';
}
