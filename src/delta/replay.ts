/**
 * Rebuilding a snapshot (docs/delta-protocol.md, Replay): checkpoint rows first, then the commits after it in
 * order. File actions are keyed by (path, deletion-vector id), so a DV table's
 * `add(path, newDV)` listed before `remove(path, oldDV)` keeps the file.
 */
import pLimit from 'p-limit';
import { DeltaLogError } from '../errors.js';
import type { Storage } from '../storage/storage.js';
import {
  fileActionKey,
  parseCommit,
  type Action,
  type AddFile,
  type DomainMetadata,
  type Metadata,
  type Protocol,
  type RemoveFile,
  type Txn,
} from './actions.js';
import { readCheckpoint } from './checkpoint-read.js';
import { assertReadable } from './features.js';
import { inCommitTimestampOf } from './in-commit-timestamp.js';
import { commitKey } from './log-files.js';
import { locateSnapshot, type CommitRef, type ReplayPlan } from './log-listing.js';
import { parseSchema } from './schema.js';
import type { LiveFile, Snapshot } from './snapshot.js';
import { parseStats } from './stats.js';
import { TableConfig } from './table-config.js';
import type { CheckpointIO } from './checkpoint-io.js';

/** Commit files read at once. */
const COMMIT_READ_CONCURRENCY = 16;

/** Options for `loadSnapshot`. */
export interface LoadSnapshotOptions {
  /** Time travel: the version to rebuild (default: the latest). */
  version?: number;
  /**
   * Refuse (UnsupportedFeatureError) a table tidemark cannot read. Default true; pass false
   * only to inspect the protocol, e.g. to name the features a writer would have to refuse.
   */
  checkReadable?: boolean;
}

/**
 * The table's snapshot at the latest (or the given) version, or null when the table has
 * no Delta log. Throws DeltaLogError for a corrupt log (gaps, missing protocol/metaData)
 * and UnsupportedFeatureError for tables tidemark cannot read.
 */
export async function loadSnapshot(
  storage: Storage,
  io: CheckpointIO,
  opts: LoadSnapshotOptions = {},
): Promise<Snapshot | null> {
  const plan = await locateSnapshot(storage, opts.version);
  if (!plan) return null;
  const builder = new SnapshotBuilder(storage.uri);
  if (plan.checkpoint) builder.apply(await readCheckpoint(storage, io, plan.checkpoint));
  const commits = await readCommits(storage, plan.commits);
  for (const commit of commits) builder.apply(commit);
  const snapshot = builder.build(plan.version);
  if (opts.checkReadable !== false)
    assertReadable(snapshot.protocol, snapshot.metadata, storage.uri);
  if (TableConfig.of(snapshot.protocol, snapshot.metadata).inCommitTimestamps) {
    const ict = await versionTimestamp(storage, plan, commits);
    if (ict !== null) snapshot.inCommitTimestamp = ict;
  }
  return snapshot;
}

/**
 * The in-commit timestamp of the plan's version: from its commit when replay read it, else (the
 * version is a checkpoint's, which keeps no commitInfo) from its commit file, when it is still there.
 */
async function versionTimestamp(
  storage: Storage,
  plan: ReplayPlan,
  commits: readonly Action[][],
): Promise<number | null> {
  if (plan.commits.at(-1)?.version === plan.version)
    return inCommitTimestampOf(commits.at(-1) ?? []);
  const bytes = await storage.read(commitKey(plan.version));
  return bytes === null
    ? null
    : inCommitTimestampOf(parseCommit(new TextDecoder().decode(bytes), plan.version, storage.uri));
}

/** The actions of each commit, in the order given. */
export async function readCommits(storage: Storage, commits: CommitRef[]): Promise<Action[][]> {
  const limit = pLimit(COMMIT_READ_CONCURRENCY);
  return Promise.all(
    commits.map((commit) =>
      limit(async () => {
        const bytes = await storage.read(commit.key);
        if (bytes === null) {
          throw new DeltaLogError(
            `[delta] commit ${commit.version} of ${storage.uri} disappeared while reading the log`,
            {
              context: { uri: storage.uri, version: commit.version, key: commit.key },
            },
          );
        }
        return parseCommit(new TextDecoder().decode(bytes), commit.version, storage.uri);
      }),
    ),
  );
}

/**
 * Reconciles actions into a snapshot. Apply the checkpoint's actions, then each commit's,
 * in version order; `build` gives the snapshot. Also usable to move a snapshot forward
 * by the commits that followed it (`SnapshotBuilder.from`).
 */
export class SnapshotBuilder {
  private protocol: Protocol | null = null;
  private metadata: Metadata | null = null;
  private readonly files = new Map<string, AddFile>();
  private readonly removes = new Map<string, RemoveFile>();
  private readonly txns = new Map<string, Txn>();
  private readonly domains = new Map<string, DomainMetadata>();

  constructor(private readonly uri: string) {}

  /** A builder holding the state of `snapshot`, to apply later commits to. */
  static from(snapshot: Snapshot): SnapshotBuilder {
    const builder = new SnapshotBuilder(snapshot.tableUri);
    builder.protocol = snapshot.protocol;
    builder.metadata = snapshot.metadata;
    for (const file of snapshot.files) {
      const { parsedStats: _, ...add } = file;
      builder.files.set(fileActionKey(add.path, add.deletionVector), add);
    }
    for (const remove of snapshot.removes) {
      builder.removes.set(fileActionKey(remove.path, remove.deletionVector), remove);
    }
    snapshot.txns.forEach((txn, appId) => builder.txns.set(appId, txn));
    snapshot.domains.forEach((domain, name) => builder.domains.set(name, domain));
    return builder;
  }

  /** Apply actions in order; the newest action for each key wins. */
  apply(actions: readonly Action[]): this {
    for (const action of actions) this.applyOne(action);
    return this;
  }

  private applyOne(action: Action): void {
    if ('add' in action) {
      const key = fileActionKey(action.add.path, action.add.deletionVector);
      this.files.set(key, action.add);
      this.removes.delete(key);
    } else if ('remove' in action) {
      const key = fileActionKey(action.remove.path, action.remove.deletionVector);
      this.files.delete(key);
      this.removes.set(key, action.remove);
    } else if ('metaData' in action) {
      this.metadata = action.metaData;
    } else if ('protocol' in action) {
      this.protocol = action.protocol;
    } else if ('txn' in action) {
      // The newest txn wins even when its version is lower (docs/delta-protocol.md, Replay).
      this.txns.set(action.txn.appId, action.txn);
    } else if ('domainMetadata' in action) {
      const domain = action.domainMetadata;
      if (domain.removed) this.domains.delete(domain.domain);
      else this.domains.set(domain.domain, domain);
    }
    // commitInfo and cdc do not take part in reconciliation.
  }

  /** The snapshot at `version`; throws DeltaLogError when protocol or metaData never appeared. */
  build(version: number): Snapshot {
    const { protocol, metadata } = this;
    if (!protocol || !metadata) {
      const missing = !protocol ? 'protocol' : 'metaData';
      throw new DeltaLogError(
        `[delta] table ${this.uri} has no ${missing} action at version ${version}`,
        {
          context: { uri: this.uri, version },
        },
      );
    }
    return {
      tableUri: this.uri,
      version,
      protocol,
      metadata,
      schema: this.schemaOf(metadata, version),
      partitionColumns: metadata.partitionColumns ?? [],
      files: this.liveFiles(),
      removes: [...this.removes.values()].sort((a, b) => compare(a.path, b.path)),
      txns: new Map(this.txns),
      domains: new Map(this.domains),
    };
  }

  private schemaOf(metadata: Metadata, version: number): Snapshot['schema'] {
    try {
      return parseSchema(metadata.schemaString);
    } catch (cause) {
      throw new DeltaLogError(
        `[delta] table ${this.uri} has an unreadable schemaString at version ${version}`,
        {
          context: { uri: this.uri, version },
          cause,
        },
      );
    }
  }

  private liveFiles(): LiveFile[] {
    const files = [...this.files.values()].map((add) => ({
      ...add,
      parsedStats: parseStats(add.stats),
    }));
    return files.sort((a, b) => compare(a.path, b.path));
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
