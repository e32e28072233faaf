/**
 * Building the `add` and `remove` actions a writer commits for data files (PROTOCOL.md
 * "Add File and Remove File"). Pure: the data files themselves are written by the engine, which
 * describes each one as a `DataFileDescription`.
 */
import type { AddFile, DeletionVectorDescriptor, PartitionValues, RemoveFile } from './actions.js';
import type { FileStats, LiveFile } from './snapshot.js';
import { statsJson } from './stats.js';

/** A data file written for a commit, as the log needs to know it. */
export interface DataFileDescription {
  /** The path for `add.path`: relative to the table root and percent-encoded (see encodeLogPath). */
  logPath: string;
  /** Delta partition value strings (null for null); `{}` when unpartitioned. */
  partitionValues: PartitionValues;
  /** File size in bytes. */
  size: number;
  /** Per-file stats (serialized with statsJson, which keeps decimals exact). */
  stats: FileStats;
}

/**
 * The `add` action for an uploaded data file, uploaded at `modificationTime` (ms). `dataChange`
 * is true for appends and MERGE output; false only for rewrites that keep the rows (compaction).
 */
export function addFileFor(
  file: DataFileDescription,
  opts: { modificationTime: number; dataChange?: boolean },
): AddFile {
  return {
    path: file.logPath,
    partitionValues: file.partitionValues,
    size: file.size,
    modificationTime: opts.modificationTime,
    dataChange: opts.dataChange ?? true,
    stats: statsJson(file.stats),
  };
}

/**
 * The `remove` action for a live file, as Spark writes it: extended metadata (partition values,
 * size), the file's tags, and its exact deletion vector so the (path, DV) key matches.
 */
export function removeFileFor(
  file: LiveFile,
  opts: { deletionTimestamp: number; dataChange?: boolean },
): RemoveFile {
  const remove: RemoveFile = {
    path: file.path,
    deletionTimestamp: opts.deletionTimestamp,
    dataChange: opts.dataChange ?? true,
    extendedFileMetadata: true,
    partitionValues: file.partitionValues,
    size: file.size,
  };
  if (file.stats) remove.stats = file.stats;
  if (file.tags) remove.tags = file.tags;
  if (file.deletionVector) remove.deletionVector = file.deletionVector;
  if (file.baseRowId !== undefined && file.baseRowId !== null) remove.baseRowId = file.baseRowId;
  if (file.defaultRowCommitVersion !== undefined && file.defaultRowCommitVersion !== null) {
    remove.defaultRowCommitVersion = file.defaultRowCommitVersion;
  }
  return remove;
}

/**
 * The `add` that gives a live file a new deletion vector (PROTOCOL.md "Deletion Vectors"): a copy
 * of the live add with only the DV and the stats changed. Its stats keep their bounds but say they
 * may be wider than the live rows (`tightBounds: false`); `numRecords` still counts every physical
 * row. A file without stats gets `{"numRecords": physicalRows, "tightBounds": false}`, and stats
 * without `numRecords` get it.
 */
export function addWithDeletionVector(
  file: LiveFile,
  dv: DeletionVectorDescriptor,
  physicalRows: number,
): AddFile {
  const { parsedStats: _parsed, ...add } = file;
  return {
    ...add,
    deletionVector: dv,
    dataChange: true,
    stats: looseStats(file.stats, physicalRows),
  };
}

/** Stats text with `tightBounds: false`, every other byte as it was (numbers keep their exact text). */
function looseStats(stats: string | null | undefined, physicalRows: number): string {
  const text = stats?.trim();
  if (!text || !text.startsWith('{') || !text.endsWith('}'))
    return `{"numRecords":${physicalRows},"tightBounds":false}`;
  // A DV's add must say how many rows the file holds: stats without numRecords get it.
  const counted = /"numRecords"\s*:/.test(text)
    ? text
    : `{"numRecords":${physicalRows},${text.slice(1)}`.replace(/,\s*}$/, '}');
  if (/"tightBounds"\s*:\s*(true|false)/.test(counted))
    return counted.replace(/"tightBounds"\s*:\s*(true|false)/, '"tightBounds":false');
  const inner = counted.slice(1, -1).trim();
  return inner === ''
    ? `{"numRecords":${physicalRows},"tightBounds":false}`
    : `{${inner},"tightBounds":false}`;
}
