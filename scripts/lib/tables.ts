/**
 * Delta tables for the tests, the benchmarks and the demo, handled the way the job handles them:
 * a DuckDB session for checkpoints, one scratch spool per process (removed when it exits), and
 * MERGEs and appends staged by the engine and committed with the caller's extra actions.
 */
import type { Action } from '../../src/delta/actions.js';
import type { Snapshot } from '../../src/delta/snapshot.js';
import type { DeltaTable, DeltaTableOptions } from '../../src/delta/table.js';
import type { CheckpointIO } from '../../src/delta/checkpoint-io.js';
import { duckCheckpointIO } from '../../src/engine/checkpoint-io.js';
import { openTable as openEngineTable } from '../../src/engine/table.js';
import type { DuckSession } from '../../src/engine/duckdb.js';
import type { StagedMerge } from '../../src/engine/merge/results.js';
import { stageScd2, type Scd2Options } from '../../src/engine/merge/scd2.js';
import {
  stageAppend,
  stageMerge,
  type AppendOptions,
  type DeletedKeys,
  type MergeOptions,
  type StagedWrite,
  type WriteSummary,
} from '../../src/engine/merge/index.js';
import { Spool } from '../../src/spool/spool.js';
import type { Storage } from '../../src/storage/storage.js';

let spool: Spool | null = null;

/** The process's scratch spool. */
export function scratchSpool(): Spool {
  spool ??= Spool.createSync('scratch');
  return spool;
}

/** Checkpoints read and written by `session`, with scratch files in the test spool. */
export function checkpointIO(session: DuckSession): CheckpointIO {
  return duckCheckpointIO(session, scratchSpool());
}

/** The table at `storage`'s root, its checkpoints handled by `session`. */
export function openTable(
  storage: Storage,
  session: DuckSession,
  opts: Omit<DeltaTableOptions, 'checkpointIO'> = {},
): DeltaTable {
  return openEngineTable(storage, { session, spool: scratchSpool() }, opts);
}

/** What a test adds to a staged write before committing it (what the job does with its state). */
export interface CommitExtras {
  /** Actions committed in the same version (a txn, a domain). */
  extraActions?: Action[];
  /** Plan on this snapshot instead of the latest. */
  snapshot?: Snapshot | null;
  /** Called with the batch's deletes before the commit; its actions join the commit. */
  onDeletes?(deletes: DeletedKeys): Promise<Action[]>;
}

/** A committed MERGE: its summary, the version (null: nothing committed) and the commit's time. */
export type CommittedMerge = WriteSummary & {
  version: number | null;
  durations: WriteSummary['durations'] & { commit: number };
};

type EngineOptions<O> = Omit<O, 'session' | 'storage' | 'snapshot' | 'spool'> &
  CommitExtras & { spool?: Spool };

/**
 * Stage a MERGE and commit it with the extras, as the job does; the version is null when the
 * MERGE changed nothing and there were no extras (nothing committed).
 */
export function mergeAndCommit(
  table: DeltaTable,
  session: DuckSession,
  opts: EngineOptions<MergeOptions>,
): Promise<CommittedMerge> {
  return stageAndCommit(table, session, opts, stageMerge);
}

/** Stage an scd2 write (`stageScd2`) and commit it with the extras, as `mergeAndCommit` does. */
export function scd2AndCommit(
  table: DeltaTable,
  session: DuckSession,
  opts: EngineOptions<Scd2Options>,
): Promise<CommittedMerge> {
  return stageAndCommit(table, session, opts, stageScd2);
}

type Stage<O> = (
  opts: O & { session: DuckSession; storage: Storage; snapshot: Snapshot | null; spool: Spool },
) => Promise<StagedMerge>;

async function stageAndCommit<O>(
  table: DeltaTable,
  session: DuckSession,
  opts: EngineOptions<O>,
  stage: Stage<O>,
): Promise<CommittedMerge> {
  const { extraActions = [], onDeletes, snapshot, spool, ...rest } = opts;
  const staged = await stage({
    ...(rest as unknown as O),
    session,
    storage: table.storage,
    snapshot: snapshot !== undefined ? snapshot : await table.snapshot(),
    spool: spool ?? scratchSpool(),
  });
  try {
    const extra = [...extraActions, ...(onDeletes ? await onDeletes(staged.deletes) : [])];
    const started = performance.now();
    const version = await commitStaged(table, staged, extra);
    const commit = Math.round(performance.now() - started);
    const { durations } = staged.summary;
    return {
      ...staged.summary,
      version,
      durations: { ...durations, commit, total: durations.total + commit },
    };
  } finally {
    await staged.dispose();
  }
}

/** Stage an append and commit it with the extras; version null when nothing was committed. */
export async function appendAndCommit(
  table: DeltaTable,
  session: DuckSession,
  opts: EngineOptions<AppendOptions>,
): Promise<WriteSummary & { version: number | null }> {
  const { extraActions = [], snapshot, spool, onDeletes: _unused, ...rest } = opts;
  const staged = await stageAppend({
    ...rest,
    session,
    storage: table.storage,
    snapshot: snapshot !== undefined ? snapshot : await table.snapshot(),
    spool: spool ?? scratchSpool(),
  });
  return { ...staged.summary, version: await commitStaged(table, staged, extraActions) };
}

async function commitStaged(
  table: DeltaTable,
  staged: StagedWrite,
  extra: Action[],
): Promise<number | null> {
  if (!staged.changesTable && extra.length === 0) return null;
  const { request } = staged;
  return (await table.commit({ ...request, actions: [...request.actions, ...extra] })).version;
}

/** `withTableScan`'s source for a table's storage, with the test spool. */
export function scanSource(storage: Storage): { storage: Storage; spool: Spool } {
  return { storage, spool: scratchSpool() };
}
