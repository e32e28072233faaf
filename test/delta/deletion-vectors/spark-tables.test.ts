/**
 * Every deletion vector in the Spark tables of fixtures/delta-tables (README tables 14, 18, 19
 * and 21) decodes, passes its size and CRC checks and has its descriptor's cardinality; the
 * DVs live after replaying the JSON commits delete exactly the row indexes the README lists,
 * and those rows hold the values the README says were deleted (read with DuckDB).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeletionVectorDescriptor } from '../../../src/delta/actions.js';
import {
  DeletionVectorCache,
  listDvFileEntries,
  loadDeletionVector,
  parseRoaringBitmapArray,
  readDvFromFile,
  resolveDeletionVector,
} from '../../../src/delta/deletion-vectors/index.js';
import { DuckSession } from '../../../src/engine/duckdb.js';
import { LocalStorage } from '../../../src/storage/local.js';
import { sharedTable } from '../../helpers/shared-tables.js';
import { liveDvs, loggedDvs } from './helpers.js';

let session: DuckSession;
beforeAll(async () => {
  session = await DuckSession.open({ threads: 1 });
});
afterAll(() => session?.close());

/** What a live file's DV must hold: its `.bin` file, offset, row indexes, and the values at them. */
interface ExpectedDv {
  /** Start of the data file's path in the log. */
  file: string;
  bin: string;
  offset: number;
  rows: number[];
  values: number[];
}

/** Load every live DV of `table` (JSON replay up to `version`), keyed by data file path. */
async function liveSets(table: string, version?: number) {
  const dir = sharedTable(table);
  const storage = new LocalStorage(dir);
  const out = [];
  for (const [path, dv] of liveDvs(dir, version)) {
    const location = resolveDeletionVector(dv, storage.uri);
    const set = await loadDeletionVector(storage, dv, storage.uri, { dataFile: path });
    out.push({ path, dv, bin: location.kind === 'file' ? location.key : '(inline)', set });
  }
  return out.sort((a, b) => a.path.localeCompare(b.path));
}

/** The values of `column` at the given physical row indexes of a data file. */
async function valuesAt(
  table: string,
  path: string,
  column: string,
  rows: number[],
): Promise<number[]> {
  const file = join(sharedTable(table), decodeURIComponent(path)).replaceAll("'", "''");
  const result = await session.allJson(
    `SELECT "${column}" AS v FROM read_parquet('${file}', file_row_number = true) WHERE file_row_number IN (${rows.join(', ')}) ORDER BY file_row_number`,
  );
  return result.map((r) => Number(r['v']));
}

async function expectLive(
  table: string,
  column: string,
  expected: ExpectedDv[],
  version?: number,
): Promise<void> {
  const live = await liveSets(table, version);
  expect(live, table).toHaveLength(expected.length);
  for (const e of expected) {
    const found = live.filter((l) => l.path.startsWith(e.file));
    expect(found, e.file).toHaveLength(1);
    const { path, dv, bin, set } = found[0]!;
    expect({ bin, offset: dv.offset, rows: set.toArray() }, path).toEqual({
      bin: e.bin,
      offset: e.offset,
      rows: e.rows,
    });
    expect(await valuesAt(table, path, column, e.rows), path).toEqual(e.values);
  }
}

/** Every DV named anywhere in the log (adds and removes) loads, with its cardinality. */
async function expectAllLoggedLoad(table: string): Promise<DeletionVectorDescriptor[]> {
  const dir = sharedTable(table);
  const storage = new LocalStorage(dir);
  const cache = new DeletionVectorCache();
  const logged = loggedDvs(dir);
  expect(logged.length).toBeGreaterThan(0);
  for (const { path, dv } of logged) {
    const set = await loadDeletionVector(storage, dv, storage.uri, { dataFile: path, cache });
    expect(set.cardinality).toBe(dv.cardinality);
  }
  return logged.map((l) => l.dv);
}

/** Every `.bin` file in the table root walks cleanly (version byte, sizes, CRCs) and each DV parses. */
function binFiles(table: string): Map<string, number[]> {
  const dir = sharedTable(table);
  const out = new Map<string, number[]>();
  for (const name of readdirSync(dir).filter((n) => n.endsWith('.bin'))) {
    const bytes = new Uint8Array(readFileSync(join(dir, name)));
    const entries = listDvFileEntries(bytes, { key: name });
    for (const entry of entries)
      expect(parseRoaringBitmapArray(readDvFromFile(bytes, entry)).cardinality).toBeGreaterThan(0);
    out.set(
      name,
      entries.map((e) => e.offset),
    );
  }
  return out;
}

describe('table 14 (deletion-vectors)', () => {
  it('every DV in the log decodes; the live one deletes rows {0, 7, 14} (ids 0, 7, 14)', async () => {
    expect(await expectAllLoggedLoad('deletion-vectors')).toHaveLength(5); // 3 adds, 2 removes of older DVs
    await expectLive('deletion-vectors', 'id', [
      {
        file: 'part-00000-90177277',
        bin: 'deletion_vector_d12e7d16-e46d-48c9-8a71-b222c26dfc3b.bin',
        offset: 1,
        rows: [0, 7, 14],
        values: [0, 7, 14],
      },
    ]);
    for (const [version, rows] of [
      [1, [0]],
      [2, [0, 7]],
    ] as const) {
      const [live] = await liveSets('deletion-vectors', version);
      expect(live!.set.toArray(), `v${version}`).toEqual(rows);
    }
  });
});

describe('table 18 (dv-partitioned-with-checkpoint)', () => {
  const table = 'dv-partitioned-with-checkpoint';

  it('every DV in the log decodes, and all 15 .bin files (5 orphans) walk cleanly at offset 1', async () => {
    const logged = await expectAllLoggedLoad(table);
    const files = binFiles(table);
    expect(files.size).toBe(15);
    expect([...files.values()].every((offsets) => offsets.join() === '1')).toBe(true);
    const storage = new LocalStorage(sharedTable(table));
    const named = new Set(
      logged.map((dv) => (resolveDeletionVector(dv, storage.uri) as { key: string }).key),
    );
    expect(named.size).toBe(10);
    expect([...files.keys()].filter((f) => !named.has(f))).toHaveLength(5);
  });

  it('at v15 the two live DVs delete row 0 of part=6 and part=8 (col1 26 and 28)', async () => {
    await expectLive(table, 'col1', [
      {
        file: 'part=6/part-00001-6fc16401',
        bin: 'deletion_vector_f34fad76-197a-4fd7-9382-f7773fc8eff9.bin',
        offset: 1,
        rows: [0],
        values: [26],
      },
      {
        file: 'part=8/part-00001-7c58de64',
        bin: 'deletion_vector_179561f5-946c-40d8-b088-0d890e8c854c.bin',
        offset: 1,
        rows: [0],
        values: [28],
      },
    ]);
  });

  it('at v10 (the checkpoint) parts 0, 2 and 4 carry DVs of cardinality 2 (col1 0/10, 2/12, 4/14)', async () => {
    const live = await liveSets(table, 10);
    expect(live.map((l) => [l.path.slice(0, 18), l.dv.cardinality])).toEqual([
      ['part=0/part-00000-', 2],
      ['part=2/part-00000-', 2],
      ['part=4/part-00000-', 2],
    ]);
    const values = await Promise.all(
      live.map((l) => valuesAt(table, l.path, 'col1', l.set.toArray())),
    );
    expect(values).toEqual([
      [0, 10],
      [2, 12],
      [4, 14],
    ]);
  });
});

describe('table 19 (dv-with-columnmapping)', () => {
  const table = 'dv-with-columnmapping';
  const col1 = 'col-9f0743fd-a52e-44a7-92e0-72a3d34231b1';

  it('every DV in the log decodes, and all 15 .bin files walk cleanly', async () => {
    await expectAllLoggedLoad(table);
    expect(binFiles(table).size).toBe(15);
  });

  it('at v15 the two live DVs delete row 0 of the physical partitions 6 and 8 (col1 26 and 28)', async () => {
    await expectLive(table, col1, [
      {
        file: 'col-60c949ca-b8bc-4330-b931-b73fb4c60037=6/part-00001-8c38a718',
        bin: 'deletion_vector_d1a8fb85-3abb-4956-ac4a-1c7fcd9ec4c1.bin',
        offset: 1,
        rows: [0],
        values: [26],
      },
      {
        file: 'col-60c949ca-b8bc-4330-b931-b73fb4c60037=8/part-00001-0878dadb',
        bin: 'deletion_vector_db3372bc-617e-4c95-a81a-b1a9f8df8417.bin',
        offset: 1,
        rows: [0],
        values: [28],
      },
    ]);
  });
});

describe('table 21 (table-with-dv-large)', () => {
  const table = 'table-with-dv-large';
  const A = 'deletion_vector_44ccbf3f-b223-4581-9cd8-a7e569120ada.bin';
  const B = 'deletion_vector_afcbf9f8-7558-4a5a-b1e2-7432c30bf452.bin';

  it('every DV in the log decodes, and both packed files walk at the offsets Spark wrote', async () => {
    await expectAllLoggedLoad(table);
    expect(Object.fromEntries(binFiles(table))).toEqual({
      [A]: [1, 43, 85, 127, 169],
      [B]: [1, 43, 87, 131, 173, 215],
    });
  });

  it('at v4 the eight live DVs, read at their own offsets, delete the rows and values the README lists', async () => {
    await expectLive(table, 'value', [
      { file: 'part-00003-0e842060', bin: A, offset: 169, rows: [32], values: [300] },
      { file: 'part-00015-f2f141bb', bin: A, offset: 43, rows: [21], values: [0] },
      { file: 'part-00000-51219d56', bin: B, offset: 173, rows: [0], values: [300] },
      { file: 'part-00001-5dbf0ba2', bin: B, offset: 43, rows: [70, 81], values: [1800, 1353] },
      { file: 'part-00012-9b83c213', bin: B, offset: 87, rows: [26, 40], values: [700, 900] },
      { file: 'part-00014-41a4f51e', bin: B, offset: 131, rows: [19], values: [350] },
      { file: 'part-00018-9d74a51b', bin: B, offset: 1, rows: [51], values: [1567] },
      { file: 'part-00019-a9bb3ce8', bin: B, offset: 215, rows: [6, 43], values: [180, 250] },
    ]);
    const live = await liveSets(table);
    expect(live.reduce((n, l) => n + l.set.cardinality, 0)).toBe(11);
  });
});
