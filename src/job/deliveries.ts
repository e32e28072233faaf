/**
 * Deliveries: in replace mode, and for snapshot sources (`source.snapshot`), each delivery is a
 * full extract of the source table, and only the newest one counts (pure): replace makes it the
 * table; a snapshot is merged and the keys it lacks are deleted (./snapshot-deletes.ts).
 *
 * - Discovering by partition, a delivery is a partition: every file of it the run found (several
 *   part files make one extract; `requireSuccessMarker` makes sure it is complete).
 * - Discovering by modification time, a delivery is one file: the newest by LastModified, then key.
 * - With `source.snapshotPattern`, each file matching it is a delivery of its own; the other files
 *   are changes, merged as usual after the delivery (so a change newer than the extract is kept).
 *
 * A run loads only the newest delivery it found, in one commit whatever `maxFilesPerBatch` says;
 * the older ones it found are superseded: recorded as handled in the same commit's state (the
 * watermark passes them), never loaded. The state remembers the newest delivery applied
 * (`JobState.delivery`): a delivery found later that is not newer than it (a late file of an older
 * partition, a late file of the partition applied) is superseded too, so it can never roll the
 * table back to an older extract.
 */
import type { JobConfig } from '../config/schema.js';
import type { DiscoveredFile } from '../discovery/index.js';
import { compileKeyFilter } from '../discovery/filter.js';

/** Why a run passes over a file of a replace job (the run report counts files by reason). */
export const SUPERSEDED = 'superseded by a newer delivery';

/** Which delivery a file belongs to: its partition, or the file itself (LastModified ISO, key). */
export type DeliveryMark = { partition: string } | { lastModified: string; key: string };

/** What a run loads of the files it found. */
export interface DeliveryPlan {
  /** The newest delivery, newer than the one applied; empty when there is none. */
  delivery: DiscoveredFile[];
  /** The files found that are not loaded: older deliveries, or not newer than the one applied. */
  superseded: DiscoveredFile[];
  /** The mark to record with the delivery (null when none is loaded). */
  mark: DeliveryMark | null;
  /** Files that are no full extract (not matching `snapshotPattern`): merged as usual. */
  changes: DiscoveredFile[];
}

/** True when the job loads deliveries (full extracts) rather than every file. */
export function loadsDeliveries(job: JobConfig): boolean {
  return job.target.mode === 'replace' || job.source.snapshot;
}

/** The delivery `file` belongs to. */
export function deliveryMark(job: JobConfig, file: DiscoveredFile): DeliveryMark {
  if (
    job.source.snapshotPattern === undefined &&
    job.source.discover.by === 'partition' &&
    file.partition !== undefined
  )
    return { partition: file.partition };
  return { lastModified: file.lastModified.toISOString(), key: file.key };
}

/** Order of deliveries: by partition id, or by LastModified then key (ISO times of one format sort as text). */
export function compareDeliveries(a: DeliveryMark, b: DeliveryMark): number {
  const [x, y] = [sortKey(a), sortKey(b)];
  return x < y ? -1 : x > y ? 1 : 0;
}

function sortKey(m: DeliveryMark): string {
  return 'partition' in m ? m.partition : `${m.lastModified}\u0000${m.key}`;
}

/** The newest delivery among `files` newer than `applied`, and the files it supersedes. */
export function newestDelivery(
  job: JobConfig,
  found: readonly DiscoveredFile[],
  applied: DeliveryMark | undefined,
): DeliveryPlan {
  const pattern = job.source.snapshotPattern;
  const extract = pattern === undefined ? () => true : compileKeyFilter({ include: [pattern] });
  const files = found.filter((f) => extract(f.key));
  const changes = found.filter((f) => !extract(f.key));
  let newest: DeliveryMark | null = null;
  for (const f of files) {
    const mark = deliveryMark(job, f);
    if (newest === null || compareDeliveries(mark, newest) > 0) newest = mark;
  }
  if (newest === null || (applied !== undefined && compareDeliveries(newest, applied) <= 0))
    return { delivery: [], superseded: files, mark: null, changes };
  const mark = newest;
  const inIt = (f: DiscoveredFile) => compareDeliveries(deliveryMark(job, f), mark) === 0;
  return { delivery: files.filter(inIt), superseded: files.filter((f) => !inIt(f)), mark, changes };
}
