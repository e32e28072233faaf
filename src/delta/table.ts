/**
 * The Delta table façade: open a table, read snapshots, create it, commit to it
 * (feature gate → commit loop → checkpoint).
 *
 * Writing data is two steps, the first outside the commit loop: the engine writes and uploads the
 * data files (their names are unique, so a lost race leaves harmless orphans), then the caller
 * `commit`s the add/remove actions describing them. Retrying a commit never rewrites data.
 */
import {
  AppendOnlyTableError,
  CommitConflictError,
  DeltaLogError,
  UnsupportedFeatureError,
} from '../errors.js';
import { assertSafeCommits } from '../storage/probe.js';
import type { Storage } from '../storage/storage.js';
import type { Metadata, Protocol } from './actions.js';
import { checkpointInterval, maybeWriteCheckpoint, type CheckpointOutcome } from './checkpoint.js';
import { commitWithRetry, type RetryInfo } from './commit.js';
import type { CommitFeatures } from './commit-stamps.js';
import { assertWritable } from './features.js';
import { loadSnapshot } from './replay.js';
import { highWaterMarkOf } from './row-tracking.js';
import type { Snapshot } from './snapshot.js';
import { TableConfig } from './table-config.js';
import { createTableRequest, type CreateTableRequest } from './table-create.js';
import type { CommitRequest, CommitResult } from './transaction.js';
import type { CheckpointIO } from './checkpoint-io.js';

export interface DeltaTableOptions {
  /** Commit attempts before giving up (default 15). */
  maxAttempts?: number;
  /** Override `delta.checkpointInterval` (default: the table's, else 10). */
  checkpointInterval?: number;
  /** This process is the table's only writer: skip the conditional-write probe. */
  singleWriter?: boolean;
  /** Clock (ms) for commitInfo, createdTime and the expiry of removes in checkpoints. */
  now?: () => number;
  /** Reads and writes checkpoint Parquet (the engine's `duckCheckpointIO`). */
  checkpointIO: CheckpointIO;
}

/** Per-commit options. */
export interface TableCommitOptions {
  signal?: AbortSignal;
  onRetry?: (info: RetryInfo) => void;
}

/** A commit's result plus what happened to the checkpoint (null when none was due). */
export interface TableCommitResult extends CommitResult {
  checkpoint: CheckpointOutcome | null;
}

/** A Delta table at a storage root. */
export class DeltaTable {
  readonly uri: string;
  private readonly io: CheckpointIO;
  private cached: Snapshot | null = null;
  private commitsChecked = false;

  private constructor(
    readonly storage: Storage,
    private readonly opts: DeltaTableOptions,
  ) {
    this.uri = storage.uri;
    this.io = opts.checkpointIO;
  }

  /** The table at `storage`'s root (it need not exist yet). No I/O. */
  static open(storage: Storage, opts: DeltaTableOptions): DeltaTable {
    return new DeltaTable(storage, opts);
  }

  /** The snapshot at the latest (or the given) version, or null when the table does not exist. */
  async snapshot(opts: { version?: number } = {}): Promise<Snapshot | null> {
    const snapshot = await loadSnapshot(
      this.storage,
      this.io,
      opts.version === undefined ? {} : { version: opts.version },
    );
    if (snapshot) this.cached = snapshot;
    return snapshot;
  }

  /**
   * Create the table as version 0. Losing a creation race fails with CommitConflictError
   * 'TableAlreadyExists'; re-open the table and write to it normally.
   */
  async create(
    request: CreateTableRequest,
    opts: TableCommitOptions = {},
  ): Promise<TableCommitResult> {
    return this.commit(createTableRequest(request, this.now()), opts);
  }

  /**
   * Commit a transaction planned on `request.read.readVersion`: check that tidemark may write
   * the table, commit with retries (./commit.ts), then write a checkpoint when one is due.
   */
  async commit(request: CommitRequest, opts: TableCommitOptions = {}): Promise<TableCommitResult> {
    const base = await this.baseSnapshot(request.read.readVersion);
    const prepared = prepareRequest(request, base, this.uri);
    const after = TableConfig.after(base, prepared.actions, this.uri);
    assertWritable(after.protocol, after.metadata, this.uri);
    assertAppendOnlyRespected(prepared, after, this.uri);
    assertChangesRecorded(prepared, after, this.uri);
    await this.checkCommitsSafe();
    const result = await commitWithRetry(this.storage, prepared, {
      maxAttempts: this.opts.maxAttempts,
      now: this.opts.now,
      signal: opts.signal,
      onRetry: opts.onRetry,
      features: commitFeatures(prepared, base, after),
    });
    return { ...result, checkpoint: await this.checkpointAfter(result.version, after.metadata) };
  }

  private async baseSnapshot(readVersion: number): Promise<Snapshot | null> {
    if (readVersion < 0) return null;
    if (this.cached?.version === readVersion) return this.cached;
    const snapshot = await this.snapshot({ version: readVersion });
    if (!snapshot) {
      throw new DeltaLogError(
        `[delta] cannot commit to ${this.uri}: the table has no version ${readVersion}`,
        {
          context: { uri: this.uri, version: readVersion },
        },
      );
    }
    return snapshot;
  }

  /**
   * Probe once per table object that the store honours put-if-absent (local disk always does);
   * ConditionalWriteUnsupportedError otherwise, unless declared the only writer. Commits call it;
   * a job calls it first, so a store that cannot take commits fails before anything is loaded.
   */
  async checkCommitsSafe(): Promise<void> {
    if (this.commitsChecked || this.uri.startsWith('file:')) return;
    await assertSafeCommits(this.storage, { singleWriter: this.opts.singleWriter ?? false });
    this.commitsChecked = true;
  }

  private async checkpointAfter(
    version: number,
    metadata: Metadata,
  ): Promise<CheckpointOutcome | null> {
    const interval = this.opts.checkpointInterval ?? checkpointInterval(metadata.configuration);
    if (version === 0 || version % interval !== 0) return null;
    try {
      const snapshot = await this.snapshot({ version });
      if (!snapshot) return null;
      return await maybeWriteCheckpoint(this.storage, this.io, snapshot, {
        interval,
        now: this.opts.now,
      });
    } catch (error) {
      // The commit stands; a missing checkpoint only slows readers down.
      return { written: false, reason: 'failed', error };
    }
  }

  private now(): number {
    return (this.opts.now ?? Date.now)();
  }
}

/**
 * Add what the protocol needs for this commit: writing domain metadata to a table without the
 * `domainMetadata` feature upgrades it to writer 7 in the same commit (legacy features listed),
 * also when the commit creates the table or already carries a protocol action.
 * System domains (`delta.*`) are never written by tidemark.
 */
export function prepareRequest(
  request: CommitRequest,
  base: Snapshot | null,
  uri: string,
): CommitRequest {
  const domains = request.actions.flatMap((a) =>
    'domainMetadata' in a ? [a.domainMetadata.domain] : [],
  );
  const system = domains.find((d) => d.startsWith('delta.'));
  if (system !== undefined) {
    throw new UnsupportedFeatureError(
      'domainMetadata',
      'write',
      uri,
      `tidemark does not write the system domain '${system}'`,
    );
  }
  if (domains.length === 0) return request;
  const own = request.actions.find((a): a is { protocol: Protocol } => 'protocol' in a);
  const protocol = own?.protocol ?? base?.protocol;
  const metadata =
    request.actions.find((a): a is { metaData: Metadata } => 'metaData' in a)?.metaData ??
    base?.metadata;
  // Without both, the commit fails on its own (TableConfig.after).
  if (!protocol || !metadata) return request;
  const table = TableConfig.of(protocol, metadata);
  if (table.supports('domainMetadata')) return request;
  const upgraded = { protocol: table.withFeature('domainMetadata', { reader: false }) };
  if (own) return { ...request, actions: request.actions.map((a) => (a === own ? upgraded : a)) };
  return { ...request, actions: [upgraded, ...request.actions] };
}

/**
 * What the table's features stamp on each attempt of this commit: row ids counted from the read
 * version's high-water mark, an in-commit timestamp after the read version's.
 */
function commitFeatures(
  request: CommitRequest,
  base: Snapshot | null,
  table: TableConfig,
): CommitFeatures {
  const { rowTracking } = table;
  const stamps: CommitFeatures = {};
  if (rowTracking.assignsIds) {
    // tidemark's writers preserve ids wherever the table asks for it; elsewhere only a commit moving no rows keeps them all.
    const preserved =
      rowTracking.materialized !== null || !request.actions.some((a) => 'remove' in a);
    stamps.rowIds = { highWaterMark: base ? highWaterMarkOf(base.domains) : -1, preserved };
  }
  if (table.inCommitTimestamps)
    stamps.inCommitTimestamp = { previous: base?.inCommitTimestamp ?? null };
  return stamps;
}

/** `delta.appendOnly=true` tables accept no dataChange removes (compaction's dataChange=false rewrites are fine). */
function assertAppendOnlyRespected(request: CommitRequest, table: TableConfig, uri: string): void {
  if (!table.appendOnly) return;
  const removal = request.actions.find((a) => 'remove' in a && a.remove.dataChange);
  if (removal && 'remove' in removal)
    throw new AppendOnlyTableError(uri, request.operation, `would remove ${removal.remove.path}`);
}

/**
 * A commit to a table that records changes (./change-data.ts) must carry change files when it
 * removes rows (a dataChange remove: a rewrite, a new deletion vector, a dropped file); without
 * them change-feed readers would take the rewritten file's kept rows as deleted and inserted
 * again. A violation is a bug in the writer, so it throws before anything is written.
 */
function assertChangesRecorded(request: CommitRequest, table: TableConfig, uri: string): void {
  if (!table.recordsChangeData) return;
  const removes = request.actions.some((a) => 'remove' in a && a.remove.dataChange);
  if (!removes || request.actions.some((a) => 'cdc' in a)) return;
  throw new DeltaLogError(
    `[delta] invalid ${request.operation} commit to ${uri}: the table records a change data feed and the commit ` +
      'changes existing rows without change data files',
    { context: { uri, version: request.read.readVersion + 1 } },
  );
}

/** True for a CommitConflictError: the caller should re-read the table and plan again. */
export function isCommitConflict(err: unknown): err is CommitConflictError {
  return err instanceof CommitConflictError;
}
