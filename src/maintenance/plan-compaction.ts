/**
 * Planning a compaction (pure: no I/O). Small live files are grouped by partition, then packed
 * into bins of at most `targetFileBytes` each; every bin becomes one new file. A file is never
 * moved across partitions, and a partition with fewer than `minFilesPerPartition` small files is
 * left alone, as is any bin that would hold a single small file (rewriting it gains nothing).
 *
 * Purging deletion vectors (Spark's REORG … APPLY (PURGE)): a file whose deletion vector deletes
 * more than `maxDeletedShare` of its rows (all files with a DV under `purge`) is rewritten without
 * them, alone or packed with the partition's small files, whatever its size.
 *
 * Files a clustering implementation wrote (`clusteringProvider` set) are left alone: tidemark is
 * not one, and only the provider may recluster them (PROTOCOL.md "Clustered Table").
 */
import type { PartitionValues } from '../delta/actions.js';
import { physicalColumn } from '../delta/column-mapping.js';
import type { LiveFile, Snapshot } from '../delta/snapshot.js';
import { TableConfig } from '../delta/table-config.js';

/** Delta's default OPTIMIZE target (spark.databricks.delta.optimize.maxFileSize). */
export const DEFAULT_TARGET_FILE_BYTES = 128 * 1024 * 1024;
/** Fewer small files than this in a partition: nothing to gain, leave it. */
export const DEFAULT_MIN_FILES_PER_PARTITION = 2;
/** Files below this fraction of the target count as small. */
export const SMALL_FILE_FRACTION = 0.75;
/** A file whose DV deletes more than this share of its rows is rewritten (Spark's optimize.maxDeletedRowsRatio). */
export const DEFAULT_MAX_DELETED_SHARE = 0.05;

/** What to compact. */
export interface CompactionOptions {
  /** Size each bin (new file) aims for; default 128 MiB. */
  targetFileBytes?: number;
  /** A partition needs at least this many small files to be compacted; default 2. */
  minFilesPerPartition?: number;
  /** Files below this size are small; default 0.75 × targetFileBytes. */
  smallFileBytes?: number;
  /** Only partitions for which this returns true, given a file's logged partitionValues (see `partitionEquals`). */
  partitionFilter?: (values: PartitionValues) => boolean;
  /** Rewrite every file with a deletion vector, however few rows it deletes. */
  purge?: boolean;
  /** Rewrite a file whose DV deletes more than this share of its rows; default 0.05. */
  maxDeletedShare?: number;
}

/** Files of one partition to rewrite as one new file. */
export interface CompactionBin {
  partitionValues: PartitionValues;
  /** In the order their rows are concatenated: modification time, then path. */
  files: LiveFile[];
  bytes: number;
}

/** The bins, plus what was looked at. */
export interface CompactionPlan {
  bins: CompactionBin[];
  /** Live files in the partitions that passed `partitionFilter`. */
  consideredFiles: number;
  /** Considered files left as they are (large, alone in their bin, or with a DV that deletes little). */
  skippedFiles: number;
}

/** The compaction plan for a snapshot; see the module comment. */
export function planCompaction(snapshot: Snapshot, opts: CompactionOptions = {}): CompactionPlan {
  const target = opts.targetFileBytes ?? DEFAULT_TARGET_FILE_BYTES;
  const small = opts.smallFileBytes ?? Math.floor(target * SMALL_FILE_FRACTION);
  const minFiles = opts.minFilesPerPartition ?? DEFAULT_MIN_FILES_PER_PARTITION;
  const purges = (f: LiveFile) => mustPurge(f, opts);
  const bins: CompactionBin[] = [];
  let considered = 0;
  for (const files of groupByPartition(snapshot).values()) {
    const partitionValues = files[0]!.partitionValues;
    if (opts.partitionFilter && !opts.partitionFilter(partitionValues)) continue;
    considered += files.length;
    const purged = files.filter(purges);
    const smallFiles = files.filter((f) => f.size < small && !purges(f));
    const candidates = [...purged, ...(smallFiles.length >= minFiles ? smallFiles : [])];
    bins.push(
      ...packBins(candidates.sort(byArrival), target).filter(
        (b) => b.files.length > 1 || b.files.some(purges),
      ),
    );
  }
  const planned = bins.reduce((n, b) => n + b.files.length, 0);
  return { bins, consideredFiles: considered, skippedFiles: considered - planned };
}

/** True when the file's deletion vector is to be purged (see the module comment). */
function mustPurge(file: LiveFile, opts: CompactionOptions): boolean {
  const dv = file.deletionVector;
  if (!dv) return false;
  if (opts.purge) return true;
  const rows = file.parsedStats?.numRecords;
  // Without a row count the share is unknown: purge, rather than keep a file that may be mostly deleted.
  return (
    rows === undefined ||
    rows === 0 ||
    dv.cardinality / rows > (opts.maxDeletedShare ?? DEFAULT_MAX_DELETED_SHARE)
  );
}

/**
 * Next-fit packing in the given order: a bin is closed when the next file would take it past
 * the target. Keeping the order keeps rows that arrived together in the same file.
 */
export function packBins(files: readonly LiveFile[], targetBytes: number): CompactionBin[] {
  const bins: CompactionBin[] = [];
  let current: CompactionBin | null = null;
  for (const file of files) {
    if (current === null || current.bytes + file.size > targetBytes) {
      current = { partitionValues: file.partitionValues, files: [], bytes: 0 };
      bins.push(current);
    }
    current.files.push(file);
    current.bytes += file.size;
  }
  return bins;
}

/** A partition filter matching every partition whose values include these (a conjunction). */
export function partitionEquals(values: PartitionValues): (candidate: PartitionValues) => boolean {
  return (candidate) => Object.entries(values).every(([k, v]) => norm(candidate[k]) === norm(v));
}

/** Live files tidemark may rewrite keyed by their partition values (keyed by physical names under column mapping), in the snapshot's path order. */
function groupByPartition(snapshot: Snapshot): Map<string, LiveFile[]> {
  const mode = TableConfig.of(snapshot.protocol, snapshot.metadata).columnMapping;
  const keys = snapshot.partitionColumns.map((c) => physicalColumn(snapshot.schema, c, mode));
  const groups = new Map<string, LiveFile[]>();
  for (const file of snapshot.files) {
    if (file.clusteringProvider) continue;
    const key = JSON.stringify(keys.map((k) => norm(file.partitionValues[k])));
    const list = groups.get(key);
    if (list) list.push(file);
    else groups.set(key, [file]);
  }
  return groups;
}

/** Partition values: '' and missing both mean null (PROTOCOL.md#Partition-Value-Serialization). */
function norm(v: string | null | undefined): string | null {
  return v === undefined || v === '' ? null : v;
}

function byArrival(a: LiveFile, b: LiveFile): number {
  return (
    a.modificationTime - b.modificationTime || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)
  );
}
