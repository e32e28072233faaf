/**
 * The ledger's Parquet files through DuckDB: the newest batch's ETag of a key is the one last
 * loaded, a rewrite into one file keeps exactly that per key, and the anti-join names keys never
 * loaded (and, asked, those loaded in another version); a key's first load of an ETag gives its
 * place in the tie order, NULL from files written before the ledger kept it. Real DuckDB, real Parquet files.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DuckSession } from '../../src/engine/duckdb.js';
import {
  firstLoaded,
  lastLoaded,
  notInLedger,
  writeLedgerFile,
} from '../../src/engine/ledger-files.js';
import { str } from '../../src/engine/sql.js';

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
    expect(
      await writeLedgerFile(session, a, [
        { key: 'x.csv', etag: 'e1', batch: 1, modified: null },
        { key: "o'dd.csv", etag: 'e1', batch: 1, modified: null },
      ]),
    ).toBe(2);
    expect(
      await writeLedgerFile(session, b, [{ key: 'x.csv', etag: 'e2', batch: 2, modified: null }]),
    ).toBe(1);
    const before = await lastLoaded(session, [a, b], ['x.csv', "o'dd.csv", 'never.csv']);
    expect(before.sort((p, q) => p.key.localeCompare(q.key))).toEqual([
      { key: "o'dd.csv", etag: 'e1', batch: 1, modified: null },
      { key: 'x.csv', etag: 'e2', batch: 2, modified: null },
    ]);
    const merged = join(dir, 'merged.parquet');
    expect(
      await writeLedgerFile(
        session,
        merged,
        [{ key: 'y.csv', etag: 'e3', batch: 3, modified: null }],
        [a, b],
      ),
    ).toBe(3);
    const after = await lastLoaded(session, [merged], ['x.csv', "o'dd.csv", 'y.csv']);
    expect(after.sort((p, q) => p.key.localeCompare(q.key))).toEqual([
      ...before,
      { key: 'y.csv', etag: 'e3', batch: 3, modified: null },
    ]);
  });

  it('stores every key, ETag, batch and time as given, whatever characters the key holds', async () => {
    const entries = [
      {
        key: 'a "quoted" \\ back\tslash.json',
        etag: 'sha256:ab',
        batch: 7,
        modified: 1_767_225_660_020,
      },
      { key: "o'dd/ünï/日本/😀.csv", etag: '"e1"', batch: 2 ** 40, modified: null },
      { key: 'line\nbreak.csv', etag: 'e\u0001', batch: 1, modified: -1 },
      { key: 'max.csv', etag: 'e', batch: 3, modified: Number.MAX_SAFE_INTEGER },
    ];
    const file = join(dir, 'exotic.parquet');
    expect(await writeLedgerFile(session, file, entries)).toBe(entries.length);
    const rows = await session.all(
      `SELECT key, etag, batch::VARCHAR AS batch, modified::VARCHAR AS modified, typeof(modified) AS t FROM read_parquet(${str(file)})`,
    );
    expect(rows).toEqual(
      entries.map((e) => ({
        key: e.key,
        etag: e.etag,
        batch: String(e.batch),
        modified: e.modified === null ? null : String(e.modified),
        t: 'BIGINT',
      })),
    );
  });

  it('names keys never loaded, and with `changed` those last loaded in another version', async () => {
    const file = join(dir, 'c.parquet');
    await writeLedgerFile(session, file, [
      { key: 'kept.csv', etag: 'e1', batch: 1, modified: null },
      { key: 'touched.csv', etag: 'e1', batch: 1, modified: null },
    ]);
    const candidates = [
      { key: 'kept.csv', etag: 'e1' },
      { key: 'touched.csv', etag: 'e9' },
      { key: 'late.csv', etag: 'e5' },
    ];
    expect(
      await notInLedger(session, [file], candidates, {
        scratch: join(dir, 'c1.jsonl'),
        changed: false,
      }),
    ).toEqual([{ key: 'late.csv', etag: 'e5', loaded: null }]);
    expect(
      await notInLedger(session, [file], candidates, {
        scratch: join(dir, 'c2.jsonl'),
        changed: true,
      }),
    ).toEqual([
      { key: 'late.csv', etag: 'e5', loaded: null },
      { key: 'touched.csv', etag: 'e9', loaded: 'e1' },
    ]);
    expect(
      await notInLedger(session, [], candidates.slice(0, 1), {
        scratch: join(dir, 'c3.jsonl'),
        changed: true,
      }),
    ).toEqual([{ key: 'kept.csv', etag: 'e1', loaded: null }]);
  });

  it("a file's first load in its current ETag gives its time (the earliest recorded); a rewrite keeps the newest entry's; files without the column read as not recorded", async () => {
    const a = join(dir, 'first-a.parquet');
    const b = join(dir, 'first-b.parquet');
    await writeLedgerFile(session, a, [
      { key: 'x.csv', etag: 'e1', batch: 1, modified: 1000 },
      { key: 'y.csv', etag: 'e1', batch: 1, modified: 1500 },
    ]);
    // x.csv overwritten (e2), then its first content back (e1) reloaded at a later time: the first load of e1 counts.
    await writeLedgerFile(session, b, [
      { key: 'x.csv', etag: 'e2', batch: 2, modified: 2000 },
      { key: 'x.csv', etag: 'e1', batch: 3, modified: 3000 },
    ]);
    const wanted = [
      { key: 'x.csv', etag: 'e1' },
      { key: 'y.csv', etag: 'e9' },
      { key: 'z.csv', etag: 'e1' },
    ];
    expect(await firstLoaded(session, [a, b], wanted)).toEqual(new Map([['x.csv', 1000]]));
    expect(await firstLoaded(session, [a, b], [{ key: 'x.csv', etag: 'e2' }])).toEqual(
      new Map([['x.csv', 2000]]),
    );
    const merged = join(dir, 'first-merged.parquet');
    await writeLedgerFile(
      session,
      merged,
      [{ key: 'v.csv', etag: 'e1', batch: 4, modified: 4000 }],
      [a, b],
    );
    expect(await firstLoaded(session, [merged], wanted)).toEqual(new Map([['x.csv', 3000]]));
    // A ledger file of (key, etag, batch) only, as written before `modified`.
    const legacy = join(dir, 'first-legacy.parquet');
    await session.run(
      `COPY (SELECT 'w.csv' AS key, 'e1' AS etag, 1::BIGINT AS batch) TO ${str(legacy)} (FORMAT parquet)`,
    );
    expect(await firstLoaded(session, [legacy], [{ key: 'w.csv', etag: 'e1' }])).toEqual(
      new Map([['w.csv', null]]),
    );
    expect(
      await firstLoaded(
        session,
        [legacy, a],
        [
          { key: 'w.csv', etag: 'e1' },
          { key: 'y.csv', etag: 'e1' },
        ],
      ),
    ).toEqual(
      new Map([
        ['w.csv', null],
        ['y.csv', 1500],
      ]),
    );
    // Loaded again since with a time recorded: still unknown, the first load's time is not.
    const later = join(dir, 'first-later.parquet');
    await writeLedgerFile(session, later, [{ key: 'w.csv', etag: 'e1', batch: 7, modified: 9000 }]);
    expect(await firstLoaded(session, [legacy, later], [{ key: 'w.csv', etag: 'e1' }])).toEqual(
      new Map([['w.csv', null]]),
    );
    expect((await lastLoaded(session, [legacy], ['w.csv']))[0]).toEqual({
      key: 'w.csv',
      etag: 'e1',
      batch: 1,
      modified: null,
    });
  });
});
