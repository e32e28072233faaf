/**
 * Everything a run needs besides the job's own config.
 */
import type { EngineConfig, StorageConfig } from '../config/schema.js';
import type { Logger } from '../log/logger.js';
import type { RunProgress } from '../log/progress.js';
import type { StorageOpener } from './open.js';

/**
 * Points where tests inject faults (a crash is an exception thrown from a hook). Production
 * runs pass none; a real `kill -9` test covers the moments between them.
 */
export interface RunHooks {
  /** After a batch's files are fetched, before DuckDB reads them. */
  afterFetch?(batch: number): Promise<void> | void;
  /** After the batch's data files are written and uploaded, before its tombstone file and commit. */
  afterWrite?(batch: number): Promise<void> | void;
  /** Just before the commit: data and tombstone files uploaded, the log entry not yet written. */
  beforeCommit?(batch: number): Promise<void> | void;
  /** Just after the batch's commit. */
  afterCommit?(batch: number, version: number | null): Promise<void> | void;
}

export interface RunContext {
  storage: StorageConfig;
  /** DuckDB's memory limit and threads; default: DuckDB's own. */
  engine?: EngineConfig;
  logger: Logger;
  dryRun?: boolean;
  signal?: AbortSignal;
  /** Parent folder of the per-run spool folder; default the OS temp folder. */
  spoolRoot?: string;
  /** Progress bars on stderr; default: when stderr is a terminal. */
  tty?: boolean;
  /** Where a run is (phase, batch n/N, files fetched): a bar on a terminal, log lines elsewhere. */
  progress?: RunProgress;
  /** Told each batch's source files once they are committed (lineage lists them as inputs). */
  onFilesCommitted?(keys: readonly string[]): void;
  /** Commit attempts after losing a race to another run of the same job, before giving up (exit 3). */
  maxReplans?: number;
  hooks?: RunHooks;
  /**
   * `--accept-config-change`: a changed key or orderBy drops the deletes the job remembers
   * (tombstones) that no longer fit it, instead of being refused (./config-change.ts).
   */
  acceptConfigChange?: boolean;
  /** `--allow-large-delete`: a snapshot source may delete more than `source.maxDeleteShare` of the keys, this run (./snapshot-deletes.ts). */
  allowLargeDelete?: boolean;
  /** `--adopt-state-of OLD`: the job was renamed from OLD; its state becomes this job's (./renamed.ts). */
  adoptStateOf?: string;
  /** `--fresh`: the job is new although another job of its table loads the same source (./renamed.ts). */
  fresh?: boolean;
  /** Opens the source and target stores from their URIs; default `openStorage` (tests wrap it to count requests). */
  openStorage?: StorageOpener;
}
