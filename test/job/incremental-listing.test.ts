/**
 * Incremental listing (issue 25, item 3): with `discover.incrementalListing` (keys sort by time),
 * a run lists only the keys after the newest key an earlier load found older than its window
 * (S3 StartAfter), recorded in the job state as `listAfter`. What that means for the user: a file
 * whose key sorts before it is never listed, even when its LastModified is new (the promise the
 * option makes), where a full listing loads it. Local folders, real DuckDB, NDJSON, Delta logs.
 */
import { utimes } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { LocalStorage } from '../../src/storage/local.js';
import {
  DuckSession,
  land,
  makeConfig,
  mergeTarget,
  orders,
  readTarget,
  run,
  runOutcome,
  sessionPerFile,
  tempDir,
} from './helpers.js';

let session: DuckSession;
const dirs = sessionPerFile((s) => (session = s));

async function zone(incrementalListing: boolean) {
  const root = await tempDir('incr', dirs);
  const source = new LocalStorage(root);
  const setup = makeConfig({
    source: { uri: source.uri, discover: { by: 'modified', settle: '1m', incrementalListing } },
    target: mergeTarget(await tempDir('incr-t', dirs)),
  });
  const put = async (key: string, id: number, hoursAgo: number) => {
    await land(source, session, key, orders([id, 'placed', 1]));
    const when = new Date(Date.now() - hoursAgo * 3600_000);
    await utimes(path.join(root, key), when, when);
  };
  return { setup, put };
}

describe('incremental listing', () => {
  it('lists after the newest key found older than the window: a file sorting before it is not listed; a full listing loads it', async () => {
    for (const incremental of [true, false]) {
      const { setup, put } = await zone(incremental);
      await put('2026/12/01/00/a.ndjson', 1, 3);
      await put('2026/12/01/01/b.ndjson', 2, 2);
      await put('2026/12/01/02/c.ndjson', 3, 1);
      expect(await run(setup)).toMatchObject({ status: 'succeeded', filesLoaded: 3 });
      await put('2026/12/01/03/d.ndjson', 4, 0);
      // The window is now [c's time - 1m, …): a and b are older; b is the newest key of them.
      expect(await run(setup)).toMatchObject({
        status: 'succeeded',
        filesLoaded: 1,
        listRequests: expect.any(Number),
      });
      const state = (await readTarget(session, setup)).state;
      expect((state?.discovery as { listAfter?: string } | null)?.listAfter).toBe(
        incremental ? '2026/12/01/01/b.ndjson' : undefined,
      );

      // A file breaking the promise: its key sorts before b, its LastModified is new.
      await put('2026/12/01/00/late.ndjson', 5, 0);
      const third = await run(setup);
      expect(third).toMatchObject(
        incremental
          ? { status: 'nothing-new', filesLoaded: 0 }
          : { status: 'succeeded', filesLoaded: 1 },
      );
      expect((await readTarget(session, setup)).rows.map((r) => Number(r.order_id)).sort()).toEqual(
        incremental ? [1, 2, 3, 4] : [1, 2, 3, 4, 5],
      );
    }
  });
});

describe('incremental listing across a crash', () => {
  // Found by an operator's bug hunt: kill -9 after the first of two batches; the rerun listed after
  // b/x.csv, so a/y.csv (planned for the second batch) was never listed again, and never named.
  it('a planned file whose key sorts before the newest key older than the window still loads after a crash between batches', async () => {
    const root = await tempDir('incr', dirs);
    const source = new LocalStorage(root);
    const setup = makeConfig({
      source: {
        uri: source.uri,
        discover: { by: 'modified', settle: '15m', incrementalListing: true },
      },
      target: { uri: await tempDir('incr-t', dirs), mode: 'append' },
      maxFilesPerBatch: 1,
    });
    const put = async (key: string, id: number, minutesAgo: number) => {
      await land(source, session, key, orders([id, 'placed', 1]));
      const when = new Date(Date.now() - minutesAgo * 60_000);
      await utimes(path.join(root, key), when, when);
    };
    await put('b/x.ndjson', 1, 20);
    await put('d/w.ndjson', 2, 1);
    expect(await run(setup)).toMatchObject({ status: 'succeeded', filesLoaded: 2 });
    // x is now older than the window; y sorts before it, 10 minutes newer (within settle).
    await put('a/y.ndjson', 3, 10);
    await put('c/z.ndjson', 4, 12);
    const crashed = await runOutcome(setup, {
      onFilesCommitted: () => {
        throw new Error('killed after the first commit');
      },
    });
    expect(crashed.ok).toBe(false);
    expect(await run(setup)).toMatchObject({ status: 'succeeded', filesLoaded: 1 });
    expect(await run(setup)).toMatchObject({ status: 'nothing-new' });
    const ids = (await readTarget(session, setup)).rows.map((r) => Number(r.order_id));
    expect(ids.sort()).toEqual([1, 2, 3, 4]);
  });
});

describe('incremental listing and the quarantine', () => {
  // Found by an operator's bug hunt: a quarantined a/bad.csv, fixed by an overwrite in place after
  // listAfter had passed its key, never loaded (the listing started after it).
  it('a quarantined file sorting before listAfter, overwritten with fixed content, loads on the next run', async () => {
    const root = await tempDir('incr', dirs);
    const source = new LocalStorage(root);
    const setup = makeConfig({
      source: {
        uri: source.uri,
        format: 'csv',
        discover: { by: 'modified', settle: '15m', incrementalListing: true },
      },
      target: mergeTarget(await tempDir('incr-t', dirs)),
      onBadFile: 'quarantine',
    });
    const put = async (key: string, text: string, minutesAgo: number) => {
      await source.write(key, text);
      const when = new Date(Date.now() - minutesAgo * 60_000);
      await utimes(path.join(root, key), when, when);
    };
    const header = 'order_id,status,seq\n';
    await put('a/bad.csv', `${header}1,placed,1,extra\n`, 20);
    await put('b/ok.csv', `${header}2,placed,1\n`, 1);
    expect(await run(setup)).toMatchObject({ status: 'succeeded', filesLoaded: 1 });
    await put('c/new.csv', `${header}3,placed,1\n`, 0);
    expect(await run(setup)).toMatchObject({ status: 'succeeded', filesLoaded: 1 });
    const state = (await readTarget(session, setup)).state;
    expect((state?.discovery as { listAfter?: string } | null)?.listAfter).toBe('a/bad.csv');
    await put('a/bad.csv', `${header}1,placed,1\n`, 0);
    expect(await run(setup)).toMatchObject({ status: 'succeeded', filesLoaded: 1 });
    const table = await readTarget(session, setup);
    expect(table.rows.map((r) => Number(r.order_id)).sort()).toEqual([1, 2, 3]);
    expect(table.state?.quarantined ?? []).toEqual([]);
  });
});

describe('incremental listing and an edited source.uri', () => {
  // Found by an operator's bug hunt: listAfter is a key relative to the source, so after
  // ./land -> ./land/sub the run listed after `sub/a/x.csv` and never saw `b/y.csv`.
  it('narrowed: the key to list after is re-keyed, a new file sorting before the old key loads; widened: the source is listed in full', async () => {
    const root = await tempDir('incr', dirs);
    const source = new LocalStorage(root);
    const target = mergeTarget(await tempDir('incr-t', dirs));
    const at = (uri: string) =>
      makeConfig({
        source: { uri, discover: { by: 'modified', settle: '15m', incrementalListing: true } },
        target,
      });
    const put = async (key: string, id: number, minutesAgo: number) => {
      await land(source, session, key, orders([id, 'placed', 1]));
      const when = new Date(Date.now() - minutesAgo * 60_000);
      await utimes(path.join(root, key), when, when);
    };
    await put('sub/a/x.ndjson', 1, 20);
    await put('sub/d/w.ndjson', 2, 1);
    expect(await run(at(root))).toMatchObject({ status: 'succeeded', filesLoaded: 2 });
    await put('sub/e/n.ndjson', 3, 0);
    expect(await run(at(root))).toMatchObject({ status: 'succeeded', filesLoaded: 1 });
    const listAfter = (s: { discovery: unknown } | null) =>
      (s?.discovery as { listAfter?: string } | null)?.listAfter;
    expect(listAfter((await readTarget(session, at(root))).state)).toBe('sub/a/x.ndjson');

    const narrow = at(path.join(root, 'sub'));
    await put('sub/b/y.ndjson', 4, 0);
    expect(await run(narrow)).toMatchObject({ status: 'succeeded', filesLoaded: 1 });
    expect(listAfter((await readTarget(session, narrow)).state)).toBe('a/x.ndjson');

    await put('c/z.ndjson', 5, 0); // outside the old source, sorting before `sub/…`
    expect(await run(at(root))).toMatchObject({ status: 'succeeded', filesLoaded: 1 });
    const ids = (await readTarget(session, narrow)).rows.map((r) => Number(r.order_id));
    expect(ids.sort()).toEqual([1, 2, 3, 4, 5]);
  });
});
