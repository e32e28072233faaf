/**
 * The job's state lives in the target table itself, committed with the data:
 * - a `domainMetadata` action, domain `tidemark.job.<name>`, whose configuration is this JSON
 *   state (watermark, the bounded set of recently loaded files, quarantined files, counters,
 *   the files holding recent deletes' tombstones: see ./tombstones/plan.ts);
 * - a `txn` action, appId `tidemark.job.<name>`, whose version is the batch sequence number,
 *   so any Delta tool sees how far the job got and two runs of one job conflict on commit.
 * Both survive checkpoints, so the state is always the one of the snapshot's version.
 * The format is documented in docs/job-state.md.
 */
import type { BacklogState } from './backlog.js';
import type { DeliveryMark } from './deliveries.js';
import type { Action } from '../delta/actions.js';
import type { Snapshot } from '../delta/snapshot.js';
import { upgradeState as upgradeDiscoveryState, type DiscoveryState } from '../discovery/index.js';
import { DeltaLogError } from '../errors.js';
import { backfillTombstones, readBackfillStates } from './backfill/state.js';
import type { JobConfig } from '../config/schema.js';
import { acceptedBefore, type ConfiguredAs } from './config-change.js';
import type { DiscoveredFile } from '../discovery/index.js';
import { recordInLedger, type LedgerState } from './ledger.js';
import type { ClearedFile, QuarantinedFile } from './quarantine.js';
import type { JobScope } from './scope.js';
import type { FormerSource } from './former-sources.js';
import type { TombstoneState } from './tombstones/plan.js';
import type { StateOwner } from './write-batch.js';

export const STATE_VERSION = 1;

export interface JobState {
  stateVersion: number;
  job: string;
  /** Batch sequence number; also the `txn` version. */
  batch: number;
  /** Discovery's own state (watermark + recently loaded files); owned by src/discovery. */
  discovery: DiscoveryState | null;
  lastRunAt: string | null;
  quarantined: QuarantinedFile[];
  /** Files its backfill had quarantined that the job loaded since (absent: none; ./quarantine-list.ts). */
  cleared?: ClearedFile[];
  totals: { filesLoaded: number; rowsLoaded: number };
  /** Partitions waiting for their success marker when the state was committed (absent: none). */
  waiting?: WaitingPartitionState[];
  /** Tombstone files of recent deletes (merge mode); absent in states written before them = none. */
  tombstones?: TombstoneState;
  /** Files loaded, kept after they left the settle window (jobs discovering by modification time: ./ledger.ts); absent: none. */
  ledger?: LedgerState;
  /** The settings the job committed this state with (./config-change.ts); absent in states written before them. */
  configuredAs?: ConfiguredAs;
  /** The sources the job loaded from before source.uri was edited to an unrelated folder (./source-moved.ts); absent: none. */
  formerSources?: FormerSource[];
  /** Files discovered and not loaded as of this commit (./backlog.ts); absent in states written before it. */
  backlog?: BacklogState;
  /** Replace mode: the newest delivery applied (./deliveries.ts); an older one found later is never loaded. */
  delivery?: DeliveryMark;
  /**
   * scd2 snapshot sources: the as-of (`source.snapshotAsOf`) of the newest extract applied, as
   * text in orderBy's type; an older extract closes no key (./snapshot-deletes.ts). Absent: none yet.
   */
  snapshotAsOf?: string;
}

/** A partition waiting for its `_SUCCESS`, as the state records it. */
export interface WaitingPartitionState {
  partition: string;
  files: number;
  /** The oldest LastModified of its waiting files (ISO). */
  since: string;
}

/** Domain and txn appId of a job. */
export function jobAppId(job: string): string {
  return `tidemark.job.${job}`;
}

/** The state of a job that has never run. */
export function initialState(job: string): JobState {
  return {
    stateVersion: STATE_VERSION,
    job,
    batch: 0,
    discovery: null,
    lastRunAt: null,
    quarantined: [],
    totals: { filesLoaded: 0, rowsLoaded: 0 },
  };
}

/** Upgrade older state layouts to the current one (there is only v1 so far); the discovery part is discovery's. */
export function upgradeState(raw: Record<string, unknown>, job: string, uri: string): JobState {
  const version = Number(raw['stateVersion']);
  if (version !== STATE_VERSION) {
    throw new DeltaLogError(
      `[job] state of job ${job} in ${uri} has stateVersion ${raw['stateVersion']}, this tidemark reads ${STATE_VERSION}`,
      {
        context: { uri, job },
      },
    );
  }
  const state = { ...initialState(job), ...(raw as Partial<JobState>) } as JobState;
  return {
    ...state,
    discovery: state.discovery === null ? null : upgradeDiscoveryState(state.discovery),
  };
}

/** The job's state in a snapshot (initial state when the table or the domain does not exist). */
export function readJobState(snapshot: Snapshot | null, job: string): JobState {
  const domain = snapshot?.domains.get(jobAppId(job));
  if (!snapshot || !domain) return initialState(job);
  let raw: unknown;
  try {
    raw = JSON.parse(domain.configuration);
  } catch (cause) {
    throw new DeltaLogError(
      `[job] state of job ${job} in ${snapshot.tableUri} at version ${snapshot.version} is not valid JSON`,
      {
        context: { uri: snapshot.tableUri, version: snapshot.version, job },
        cause,
      },
    );
  }
  return upgradeState(raw as Record<string, unknown>, job, snapshot.tableUri);
}

/** The actions that commit `state` (with its batch number) in the same commit as the data. */
export function stateActions(state: JobState, now = Date.now()): Action[] {
  return [
    { txn: { appId: jobAppId(state.job), version: state.batch, lastUpdated: now } },
    {
      domainMetadata: {
        domain: jobAppId(state.job),
        configuration: JSON.stringify(state),
        removed: false,
      },
    },
  ];
}

/** The job's tombstones, for another owner's MERGE (its backfill) to read. */
export function jobTombstones(
  snapshot: Snapshot | null,
  job: string,
): Array<{ folder: string; state: TombstoneState | undefined }> {
  return [{ folder: job, state: readJobState(snapshot, job).tombstones }];
}

/**
 * The ledgers in a snapshot where the first loads of `job`'s source files are recorded
 * (./ledger.ts): the job's and its backfills' (every shard's), and those of every other job whose
 * recorded source is the same (a job started `--fresh` beside it loads the same files).
 */
export function jobLedgers(snapshot: Snapshot | null, job: JobConfig): LedgerState[] {
  const names = [job.name, ...sourceJobs(snapshot, job.source.uri).filter((n) => n !== job.name)];
  return names.flatMap((name) => {
    const own = readJobState(snapshot, name).ledger;
    const backfills = [...readBackfillStates(snapshot, name).values()].flatMap((s) =>
      s.ledger ? [s.ledger] : [],
    );
    return [...(own ? [own] : []), ...backfills];
  });
}

/** The names of the jobs whose state the table holds and whose recorded source (`configuredAs`) is `uri`. */
export function sourceJobs(snapshot: Snapshot | null, uri: string): string[] {
  if (!snapshot) return [];
  const names: string[] = [];
  const prefix = jobAppId('');
  for (const domain of snapshot.domains.keys()) {
    if (!domain.startsWith(prefix)) continue;
    const name = domain.slice(prefix.length);
    let recorded: string | undefined;
    try {
      recorded = readJobState(snapshot, name).configuredAs?.source.uri;
    } catch {
      continue; // another job's unreadable state is that job's problem
    }
    if (recorded !== undefined && sameUri(recorded, uri)) names.push(name);
  }
  return names.sort();
}

function sameUri(a: string, b: string): boolean {
  const norm = (u: string) => u.replace(/\/+$/, '');
  return norm(a) === norm(b);
}

/** The job as the owner of the state a batch commits; it also reads the tombstones of its backfill (every shard's). */
export function jobOwner(config: JobConfig, snapshot: Snapshot | null): StateOwner<JobState> {
  const job = config.name;
  return {
    appId: jobAppId(job),
    tombstoneFolder: job,
    actions: (state) => stateActions(state),
    parameters: (state) => ({ job, batch: state.batch }),
    others: backfillTombstones(snapshot, job),
    configAccepted: acceptedBefore(readJobState(snapshot, job).configuredAs, config),
    ledgers: jobLedgers(snapshot, config),
    prepare: withLedger,
  };
}

/** The state with the batch's loaded files recorded in the job's ledger (./ledger.ts). */
async function withLedger(
  scope: JobScope,
  before: JobState,
  state: JobState,
  loaded: readonly DiscoveredFile[],
): Promise<JobState> {
  const { ledger: _old, ...rest } = state;
  const ledger = await recordInLedger(scope, state.ledger, loaded, state.batch, before.discovery);
  return ledger ? { ...rest, ledger } : rest;
}
