/**
 * The ledger's Parquet files through DuckDB: the newest batch's ETag of a key is the one last
 * loaded, a rewrite into one file keeps exactly that per key, and the anti-join names keys never
 * loaded (and, asked, those loaded in another version). Real DuckDB, real Parquet files.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DuckSession } from '../../src/engine/duckdb.js';
import { lastLoaded, notInLedger, writeLedgerFile } from '../../src/engine/ledger-files.js';

let session: DuckSession;
let dir: string;
beforeAll(async () => {
  session = await DuckSession.open({ threads: 1 });
  dir = await mkdtemp(join(tmpdir(), 'tidemark-ledger-files-'));
});
afterAll(async () => {
  session.close();
  await rm(dir, { recursive: true, force: true });
});

describe('ledger files', () => {
  it('a rewrite of two files into one keeps the newest ETag per key, and lookups agree before and after', async () => {
    const a = join(dir, 'a.parquet');
    const b = join(dir, 'b.parquet');
    expect(await writeLedgerFile(session, a, [{ key: 'x.csv', etag: 'e1', batch: 1 }, { key: "o'dd.csv", etag: 'e1', batch: 1 }])).toBe(2);
    expect(await writeLedgerFile(session, b, [{ key: 'x.csv', etag: 'e2', batch: 2 }])).toBe(1);
    const before = await lastLoaded(session, [a, b], ['x.csv', "o'dd.csv", 'never.csv']);
    expect(before.sort((p, q) => p.key.localeCompare(q.key))).toEqual([
      { key: "o'dd.csv", etag: 'e1', batch: 1 },
      { key: 'x.csv', etag: 'e2', batch: 2 },
    ]);
    const merged = join(dir, 'merged.parquet');
    expect(await writeLedgerFile(session, merged, [{ key: 'y.csv', etag: 'e3', batch: 3 }], [a, b])).toBe(3);
    const after = await lastLoaded(session, [merged], ['x.csv', "o'dd.csv", 'y.csv']);
    expect(after.sort((p, q) => p.key.localeCompare(q.key))).toEqual([...before, { key: 'y.csv', etag: 'e3', batch: 3 }]);
  });

  it('names keys never loaded, and with `changed` those last loaded in another version', async () => {
    const file = join(dir, 'c.parquet');
    await writeLedgerFile(session, file, [{ key: 'kept.csv', etag: 'e1', batch: 1 }, { key: 'touched.csv', etag: 'e1', batch: 1 }]);
    const candidates = [
      { key: 'kept.csv', etag: 'e1' },
      { key: 'touched.csv', etag: 'e9' },
      { key: 'late.csv', etag: 'e5' },
    ];
    expect(await notInLedger(session, [file], candidates, { scratch: join(dir, 'c1.jsonl'), changed: false })).toEqual([{ key: 'late.csv', etag: 'e5', loaded: null }]);
    expect(await notInLedger(session, [file], candidates, { scratch: join(dir, 'c2.jsonl'), changed: true })).toEqual([
      { key: 'late.csv', etag: 'e5', loaded: null },
      { key: 'touched.csv', etag: 'e9', loaded: 'e1' },
    ]);
    expect(await notInLedger(session, [], candidates.slice(0, 1), { scratch: join(dir, 'c3.jsonl'), changed: true })).toEqual([{ key: 'kept.csv', etag: 'e1', loaded: null }]);
  });
});
