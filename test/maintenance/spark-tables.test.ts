/**
 * OPTIMIZE and VACUUM on copies of the real Spark and delta-rs tables (fixtures/delta-tables):
 * a table tidemark can write reads the same after compaction, with one file per partition when
 * anything was compacted (the fixtures' files are all small), and VACUUM with no retention then
 * deletes exactly the files the log no longer references. Tables tidemark cannot read or write
 * are refused by both, with nothing changed.
 */
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeLogPath } from '../../src/delta/partition-decode.js';
import { DuckSession } from '../../src/engine/duckdb.js';
import { UnsupportedFeatureError } from '../../src/errors.js';
import { optimizeTable } from '../../src/maintenance/optimize.js';
import { vacuumTable } from '../../src/maintenance/vacuum.js';
import { LocalStorage } from '../../src/storage/local.js';
import { copySharedTable, sharedTableNames } from '../helpers/shared-tables.js';
import { keysUnder, rowsOf } from './helpers.js';
import { openTable, scratchSpool } from '../../scripts/lib/tables.js';
import { resolveDeletionVector } from '../../src/delta/deletion-vectors/index.js';
import { assertWritable } from '../../src/delta/features.js';

let session: DuckSession;
beforeAll(async () => {
  session = await DuckSession.open({ threads: 2 });
});
afterAll(() => session?.close());

/** In a folder or file VACUUM never touches: `_`/`.` names other than partition folders. */
const hiddenIn = (partitionColumns: string[]) => (key: string) =>
  key
    .split('/')
    .some(
      (segment) =>
        /^[_.]/.test(segment) && !partitionColumns.some((c) => segment.startsWith(`${c}=`)),
    );

describe.each(sharedTableNames())('maintenance on the shared table %s', (name) => {
  it('compacts without changing the rows and vacuums exactly the unreferenced files, or refuses and changes nothing', async () => {
    const dir = await copySharedTable(name);
    const storage = new LocalStorage(dir);
    const table = openTable(storage, session);
    const keysBefore = await keysUnder(storage);
    const writable = await table
      .snapshot()
      .then((s) => (s ? assertWritable(s.protocol, s.metadata, s.tableUri) : undefined))
      .catch((e: unknown) => e);
    if (writable instanceof UnsupportedFeatureError) {
      // Features tidemark cannot read or write (v2 checkpoints, unknown writer features): both refuse.
      await expect(optimizeTable(table, session, { spool: scratchSpool() })).rejects.toBeInstanceOf(
        UnsupportedFeatureError,
      );
      await expect(
        vacuumTable(table, { retainHours: 0, unsafeAllowShortRetention: true }),
      ).rejects.toBeInstanceOf(UnsupportedFeatureError);
      expect(await keysUnder(storage)).toEqual(keysBefore);
      return void (await rm(dir, { recursive: true, force: true }));
    }
    const rowsBefore = await rowsOf(session, table);

    const result = await optimizeTable(table, session, { spool: scratchSpool() });
    expect(await rowsOf(session, table)).toEqual(rowsBefore);
    const after = (await table.snapshot())!;
    const perPartition = new Map<string, number>();
    for (const f of after.files)
      perPartition.set(
        JSON.stringify(f.partitionValues),
        (perPartition.get(JSON.stringify(f.partitionValues)) ?? 0) + 1,
      );
    if (result.version !== null) expect(Math.max(...perPartition.values())).toBe(1);

    const hidden = hiddenIn(after.partitionColumns);
    // Live: the data files, and the deletion-vector files they point into.
    const live = new Set(
      after.files.flatMap((f) => {
        const dv = f.deletionVector
          ? resolveDeletionVector(f.deletionVector, after.tableUri)
          : null;
        return [decodeLogPath(f.path), ...(dv?.kind === 'file' ? [dv.key] : [])];
      }),
    );
    const keysBeforeVacuum = await keysUnder(storage);
    const vacuum = await vacuumTable(table, {
      retainHours: 0,
      unsafeAllowShortRetention: true,
      now: () => Date.now() + 1000,
    });
    expect(vacuum.filesDeleted).toEqual(keysBeforeVacuum.filter((k) => !hidden(k) && !live.has(k)));
    const keysAfter = await keysUnder(storage);
    expect(keysAfter.filter((k) => !hidden(k))).toEqual([...live].sort());
    expect(keysAfter.filter(hidden)).toEqual(keysBeforeVacuum.filter(hidden));
    expect(await rowsOf(session, table)).toEqual(rowsBefore);
    await rm(dir, { recursive: true, force: true });
  });
});
