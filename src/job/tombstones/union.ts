/**
 * The tombstones one MERGE reads: its owner's (opened for writing: the batch's deletes are recorded
 * there) plus those of the other owners of the table's state (the job and its backfill), opened
 * read-only, each a temp table of its own (the engine names them). A key deleted by either buries older rows; only the
 * owner's files are ever written, compacted or purged.
 */
import type { DuckSession } from '../../engine/duckdb.js';
import type { Relation } from '../../engine/relation.js';
import { tombstoneUnion } from '../../engine/tombstone-files.js';
import type { Spool } from '../../spool/spool.js';
import type { Storage } from '../../storage/storage.js';
import { JobTombstones } from './files.js';
import type { TombstoneSpec, TombstoneState } from './plan.js';

/** What opening needs: the owner's spec and state, and the other owners' states. */
export interface UnionTombstonesOptions {
  session: DuckSession;
  storage: Storage;
  /** The owner's spec (`job` = its tombstone folder name). */
  spec: TombstoneSpec;
  state: TombstoneState | undefined;
  /** Other owners: their folder names and states (read only). */
  others: ReadonlyArray<{ folder: string; state: TombstoneState | undefined }>;
  now: number;
  spool: Spool;
  signal?: AbortSignal;
}

/** The owner's tombstones plus the relation the MERGE reads (undefined when none is live). */
export interface UnionTombstones {
  own: JobTombstones;
  relation: Relation | undefined;
  dispose(): Promise<void>;
}

/** Open the owner's tombstones and the others'; see the module comment. */
export async function unionTombstones(opts: UnionTombstonesOptions): Promise<UnionTombstones> {
  const { others, ...base } = opts;
  const own = await JobTombstones.open(base);
  const opened: JobTombstones[] = [own];
  const disposeOpened = async () => {
    for (const t of opened) await t.dispose();
  };
  try {
    for (const other of others) {
      if (!other.state) continue;
      opened.push(
        await JobTombstones.open({
          ...base,
          spec: { ...opts.spec, job: other.folder },
          state: other.state,
        }),
      );
    }
    const relations = opened.flatMap((t) => (t.relation ? [t.relation] : []));
    if (relations.length <= 1) return { own, relation: relations[0], dispose: disposeOpened };
    const union = await tombstoneUnion(opts.session, relations);
    const dispose = async () => {
      await union.dispose();
      await disposeOpened();
    };
    return { own, relation: union, dispose };
  } catch (err) {
    await disposeOpened();
    throw err;
  }
}
