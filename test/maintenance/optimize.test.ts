/**
 * OPTIMIZE end to end on local disk and on s3rver: the rows stay the same, small files of each
 * partition become one, the commit is a dataChange=false OPTIMIZE, concurrent appends pass and a
 * concurrent rewrite of a compacted file conflicts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AddFile, RemoveFile } from '../../src/delta/actions.js';
import { decodeLogPath } from '../../src/delta/partition-decode.js';
import { DuckSession } from '../../src/engine/duckdb.js';
import { CommitConflictError, ConditionalWriteUnsupportedError } from '../../src/errors.js';
import { optimizeTable } from '../../src/maintenance/optimize.js';
import { startS3rver, type S3rverHandle } from '../helpers/s3rver.js';
import { mergeAndCommit, scratchSpool } from '../../scripts/lib/tables.js';
import {
  append,
  commitActions,
  commitInfoOf,
  keysUnder,
  latest,
  localBackend,
  rowsOf,
  s3Backend,
  type Place,
} from './helpers.js';

let s3: S3rverHandle;
let session: DuckSession;
beforeAll(async () => {
  [s3, session] = await Promise.all([startS3rver(), DuckSession.open({ threads: 2 })]);
});
afterAll(async () => {
  session?.close();
  await s3?.stop();
});

/** `n` rows from id `from`, spread over the days given. */
const rows = (from: number, n: number, days: string[]) =>
  `SELECT (${from} + range)::BIGINT AS id, [${days.map((d) => `'${d}'`).join(', ')}][1 + range % ${days.length}] AS day, ` +
  `range * 1.5 AS v, 'name-' || (${from} + range) AS name FROM range(${n})`;

/** d1 and d2 get three small files each, d3 one. */
async function smallFiles(place: Place) {
  const table = place.open(session);
  await append(session, table, rows(0, 10, ['d1', 'd2']), ['day']);
  await append(session, table, rows(10, 10, ['d1', 'd2']), ['day']);
  await append(session, table, rows(20, 10, ['d1', 'd2']), ['day']);
  await append(session, table, rows(30, 3, ['d3']), ['day']);
  return table;
}

const adds = (actions: Awaited<ReturnType<typeof commitActions>>): AddFile[] =>
  actions.flatMap((a) => ('add' in a ? [a.add] : []));
const removes = (actions: Awaited<ReturnType<typeof commitActions>>): RemoveFile[] =>
  actions.flatMap((a) => ('remove' in a ? [a.remove] : []));

describe.each([localBackend, s3Backend(() => s3)])('optimizeTable on $name', (backend) => {
  it('compacts each partition into one file; the rows, stats and partitions stay right', async () => {
    const place = await backend.place();
    const table = await smallFiles(place);
    const before = await latest(table);
    const rowsBefore = await rowsOf(session, table);
    expect(before.files).toHaveLength(7);

    const result = await optimizeTable(table, session, { spool: scratchSpool() });
    expect(result).toMatchObject({
      version: 4,
      readVersion: 3,
      filesRemoved: 6,
      filesAdded: 2,
      partitionsCompacted: 2,
    });

    const after = await latest(table);
    expect(await rowsOf(session, table)).toEqual(rowsBefore);
    const byDay = (day: string) => after.files.filter((f) => f.partitionValues['day'] === day);
    expect(byDay('d1')).toHaveLength(1);
    expect(byDay('d2')).toHaveLength(1);
    expect(byDay('d3').map((f) => f.path)).toEqual(
      before.files.filter((f) => f.partitionValues['day'] === 'd3').map((f) => f.path),
    );
    for (const day of ['d1', 'd2']) {
      const [f] = byDay(day);
      expect(decodeLogPath(f!.path)).toMatch(new RegExp(`^day=${day}/part-[^/]+\\.parquet$`));
      const ids = rowsBefore.filter((r) => r['day'] === day).map((r) => Number(r['id']));
      expect(f!.parsedStats).toMatchObject({
        numRecords: 15,
        minValues: { id: Math.min(...ids), name: `name-${Math.min(...ids)}` },
        maxValues: { id: Math.max(...ids) },
        nullCount: { id: 0, v: 0, name: 0 },
      });
    }
    expect(result.bytesAdded).toBe(byDay('d1')[0]!.size + byDay('d2')[0]!.size);
    await place.cleanup();
  });

  it('commits OPTIMIZE with dataChange=false on every add and remove and Delta metric names', async () => {
    const place = await backend.place();
    const table = await smallFiles(place);
    const before = await latest(table);
    const result = await optimizeTable(table, session, { spool: scratchSpool() });
    const actions = await commitActions(place.storage, result.version!);
    const info = await commitInfoOf(place.storage, result.version!);
    expect(info).toMatchObject({
      operation: 'OPTIMIZE',
      operationParameters: { predicate: '[]', zOrderBy: '[]' },
      readVersion: 3,
      isBlindAppend: false,
    });
    expect(info['operationMetrics']).toMatchObject({
      numRemovedFiles: '6',
      numAddedFiles: '2',
      numRemovedBytes: String(result.bytesRemoved),
      numAddedBytes: String(result.bytesAdded),
    });
    const metrics = info['operationMetrics'] as Record<string, string>;
    for (const key of ['minFileSize', 'p25FileSize', 'p50FileSize', 'p75FileSize', 'maxFileSize'])
      expect(Number(metrics[key])).toBeGreaterThan(0);
    expect([...adds(actions), ...removes(actions)].map((a) => a.dataChange)).toEqual(
      Array(8).fill(false),
    );
    const compacted = before.files.filter((f) => f.partitionValues['day'] !== 'd3');
    expect(
      removes(actions)
        .map((r) => r.path)
        .sort(),
    ).toEqual(compacted.map((f) => f.path).sort());
    expect(removes(actions).every((r) => r.size !== undefined && r.extendedFileMetadata)).toBe(
      true,
    );
    await place.cleanup();
  });

  it('does nothing, without a commit, when no partition has two small files', async () => {
    const place = await backend.place();
    const table = await smallFiles(place);
    expect(
      await optimizeTable(table, session, { spool: scratchSpool(), targetFileBytes: 100 }),
    ).toMatchObject({ version: null, filesAdded: 0 });
    await optimizeTable(table, session, { spool: scratchSpool() });
    expect(await optimizeTable(table, session, { spool: scratchSpool() })).toMatchObject({
      version: null,
      readVersion: 4,
      filesRemoved: 0,
    });
    expect((await latest(table)).version).toBe(4);
    await place.cleanup();
  });
});

describe('optimizeTable on a store that ignores conditional writes (s3rver)', () => {
  it('is refused before any file is rewritten or uploaded, unless singleWriter', async () => {
    const place = await s3Backend(() => s3).place();
    await smallFiles(place);
    const before = await keysUnder(place.storage);
    const shared = place.open(session, { singleWriter: false });
    const err = await optimizeTable(shared, session, { spool: scratchSpool() }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConditionalWriteUnsupportedError);
    // The probe object under _tidemark/ is deleted again; no compacted file is left behind.
    expect(await keysUnder(place.storage)).toEqual(before);
  });
});

// s3rver ignores If-None-Match, so two writers would overwrite each other's commits there:
// races run on local disk, whose put-if-absent is real.
describe('optimizeTable racing other writers (local)', () => {
  it('does not conflict with an append committed while it ran', async () => {
    const place = await localBackend.place();
    await smallFiles(place);
    const other = place.open(session);
    const table = place.open(session);
    // Planned and rewritten on version 3; the append commits version 4 before OPTIMIZE commits.
    const planned = await latest(table);
    const appended = await append(session, other, rows(100, 4, ['d1', 'd2']));
    const result = await optimizeTable(table, session, {
      spool: scratchSpool(),
      snapshot: planned,
    });
    expect(appended).toBe(4);
    expect(result).toMatchObject({ version: 5, readVersion: 3, filesRemoved: 6, filesAdded: 2 });
    const ids = (await rowsOf(session, table)).map((r) => Number(r['id']));
    expect(ids.sort((a, b) => a - b)).toEqual([
      ...Array.from({ length: 33 }, (_, i) => i),
      100,
      101,
      102,
      103,
    ]);
    // The appended files are live next to the compacted ones.
    expect((await latest(table)).files).toHaveLength(5);
    await place.cleanup();
  });

  it('fails with CommitConflictError when a concurrent MERGE rewrote a file it compacted; a rerun succeeds', async () => {
    const place = await localBackend.place();
    await smallFiles(place);
    const other = place.open(session);
    await session.run(
      `CREATE OR REPLACE TABLE maint_update AS SELECT 0::BIGINT AS id, 'd1' AS day, 99.0 AS v, 'updated' AS name`,
    );
    const table = place.open(session);
    // Planned on version 3; the MERGE rewrites one of its files in version 4 before OPTIMIZE commits.
    const planned = await latest(table);
    await mergeAndCommit(other, session, {
      batch: 'maint_update',
      keyColumns: ['id'],
      orderBy: 'v',
    });
    const err = await optimizeTable(table, session, {
      spool: scratchSpool(),
      snapshot: planned,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CommitConflictError);
    expect((err as CommitConflictError).conflict).toBe('ConcurrentDeleteRead');
    expect((await latest(other)).version).toBe(4); // only the MERGE committed

    const rerun = await optimizeTable(place.open(session), session, { spool: scratchSpool() });
    expect(rerun).toMatchObject({ version: 5, readVersion: 4, filesAdded: 2 });
    const rowsAfter = await rowsOf(session, other);
    expect(rowsAfter).toHaveLength(33);
    const updated = rowsAfter.find((r) => Number(r['id']) === 0)!;
    expect([updated['name'], Number(updated['v'])]).toEqual(['updated', 99]);
    await place.cleanup();
  });
});

describe('optimizeTable on an unpartitioned table (local)', () => {
  it('packs bins up to the target, keeps arrival order inside a file and leaves large files', async () => {
    const place = await localBackend.place();
    const table = place.open(session);
    await append(
      session,
      table,
      `SELECT range::BIGINT AS id, md5(range::VARCHAR) AS s FROM range(20000)`,
    );
    for (let i = 0; i < 5; i++)
      await append(
        session,
        table,
        `SELECT (100000 + ${i} * 10 + range)::BIGINT AS id, md5(range::VARCHAR) AS s FROM range(10)`,
      );
    const before = await latest(table);
    const large = before.files.reduce((a, b) => (a.size > b.size ? a : b));
    const small = before.files.filter((f) => f !== large);
    const avg = small.reduce((n, f) => n + f.size, 0) / small.length;
    const rowsBefore = await rowsOf(session, table);

    const result = await optimizeTable(table, session, {
      spool: scratchSpool(),
      targetFileBytes: Math.floor(avg * 2.5),
      smallFileBytes: Math.ceil(avg * 2),
    });
    expect(result).toMatchObject({ filesRemoved: 4, filesAdded: 2, partitionsCompacted: 1 });
    const after = await latest(table);
    expect(after.files.map((f) => f.path)).toContain(large.path);
    expect(after.files).toHaveLength(4);
    expect(await rowsOf(session, table)).toEqual(rowsBefore);
    const added = after.files.filter((f) => !before.files.some((b) => b.path === f.path));
    for (const f of added) {
      const local = place.storage.localPath(decodeLogPath(f.path))!;
      const ids = (await session.allJson(`SELECT id FROM read_parquet('${local}')`)).map((r) =>
        Number(r['id']),
      );
      expect(ids).toEqual([...ids].sort((a, b) => a - b));
      expect(ids).toHaveLength(20);
    }
    await place.cleanup();
  });
});
