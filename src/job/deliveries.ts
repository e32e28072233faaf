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
 *   Discovering by partition, such a file is ordered by its partition first, then LastModified and
 *   key: an extract that lands late in an older partition is an older extract, and must not delete
 *   the keys a newer partition's extract holds.
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

/**
 * Which delivery a file belongs to: its partition, or the file itself (LastModified ISO, key),
 * with its partition when a `snapshotPattern` file is found by partition.
 */
export type DeliveryMark =
  { partition: string } | { lastModified: string; key: string; partition?: string };

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
  const byPartition = job.source.discover.by === 'partition' && file.partition !== undefined;
  if (byPartition && job.source.snapshotPattern === undefined)
    return { partition: file.partition! };
  const ofFile = { lastModified: file.lastModified.toISOString(), key: file.key };
  return byPartition ? { partition: file.partition!, ...ofFile } : ofFile;
}

/**
 * Order of deliveries: by partition id where both have one, then by LastModified and key (ISO
 * times of one format sort as text). A file mark recorded without its partition (states written
 * before files found by partition carried it) compares by LastModified and key alone.
 */
export function compareDeliveries(a: DeliveryMark, b: DeliveryMark): number {
  if (a.partition !== undefined && b.partition !== undefined && a.partition !== b.partition)
    return a.partition < b.partition ? -1 : 1;
  const [x, y] = [fileOrder(a), fileOrder(b)];
  return x < y ? -1 : x > y ? 1 : 0;
}

function fileOrder(m: DeliveryMark): string {
  return 'lastModified' in m ? `${m.lastModified}\u0000${m.key}` : '';
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
