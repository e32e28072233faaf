/**
 * Writing new deletion vectors: plan a packed `.bin` file (pure), then write it once under a
 * fresh UUID name with put-if-absent. A `.bin` file is never rewritten or appended to, and
 * never created for zero DVs (PROTOCOL.md#Deletion-Vector-File-Storage-Format). Like data files, it is written
 * before the commit; a failed commit leaves it as an orphan for VACUUM.
 */
import { randomUUID } from 'node:crypto';
import { StorageError } from '../../errors.js';
import type { DeletionVectorDescriptor } from '../actions.js';
import type { Storage } from '../../storage/storage.js';
import { dvFileKey, fileDescriptor } from './descriptor.js';
import { packDvFile } from './dv-file.js';
import { serializeRowIndexSet } from './roaring.js';
import type { RowIndexSet } from './row-index-set.js';

/** A planned `.bin` file: its key, bytes, and one `u` descriptor per DV, in input order. */
export interface DvFilePlan {
  uuid: string;
  /** Relative to the table root. */
  key: string;
  bytes: Uint8Array;
  descriptors: DeletionVectorDescriptor[];
}

/** Options for planning a `.bin` file. */
export interface DvFileOptions {
  /** The file's UUID; random when omitted. */
  uuid?: string;
  /** Folder prefix (alphanumeric), as Spark writes with `delta.randomizeFilePrefixes`. */
  prefix?: string;
}

/**
 * Lay out one `.bin` file holding `sets` (each a non-empty DV: a file with no deleted rows
 * gets no DV). Throws RangeError for no sets, an empty set, or a file of 2 GiB or more.
 */
export function planDvFile(sets: readonly RowIndexSet[], opts: DvFileOptions = {}): DvFilePlan {
  sets.forEach((set, i) => {
    if (set.cardinality === 0)
      throw new RangeError(`deletion vector ${i} is empty; a file with no deleted rows gets no DV`);
  });
  const uuid = opts.uuid ?? randomUUID();
  const key = dvFileKey(uuid, opts.prefix ?? '');
  const { bytes, entries } = packDvFile(sets.map(serializeRowIndexSet));
  const descriptors = entries.map((entry, i) =>
    fileDescriptor({ uuid, prefix: opts.prefix, entry, cardinality: sets[i]!.cardinality }),
  );
  return { uuid, key, bytes, descriptors };
}

/**
 * Plan and write one `.bin` file for `sets` below the table root `storage`; returns the plan
 * with a descriptor per set. The write is put-if-absent: an existing key is an error, never
 * overwritten.
 */
export async function writeDeletionVectorFile(
  storage: Storage,
  sets: readonly RowIndexSet[],
  opts: DvFileOptions = {},
): Promise<DvFilePlan> {
  const plan = planDvFile(sets, opts);
  const created = await storage.writeIfAbsent(plan.key, plan.bytes, {
    contentType: 'application/octet-stream',
  });
  if (!created) {
    throw new StorageError(
      `[delta] deletion vector file ${JSON.stringify(plan.key)} already exists in ${storage.uri}; it is never overwritten`,
      {
        kind: 'terminal',
        context: { key: plan.key, uri: storage.uri },
      },
    );
  }
  return plan;
}
