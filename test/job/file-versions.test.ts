/**
 * Append mode is exactly once per file version (issue 20, item 1): through the real job, with
 * sources in local folders (and one on s3rver), real DuckDB and real Delta logs.
 *   - onOverwrite: reload: an overwritten file's earlier rows are replaced in the commit that
 *     appends its new version (the table holds the new version once, the old one not at all);
 *   - a file rewritten with the same rows (a `touch`, a copy in place) appends nothing;
 *   - onOverwrite: ignore: an overwritten file is never appended again.
 */
import { chmod, readFile, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LocalStorage } from '../../src/storage/local.js';
import {
  checkTarget,
  DuckSession,
  land,
  makeConfig,
  orders,
  readTarget,
  run,
  sessionPerFile,
  tempDir,
} from './helpers.js';

let session: DuckSession;
const dirs = sessionPerFile((s) => (session = s));

const byDay = { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 2 };

async function zone(): Promise<{ dir: string; storage: LocalStorage }> {
  const dir = await tempDir('src', dirs);
  return { dir, storage: new LocalStorage(dir) };
}

/** [order_id, status] of every row, sorted. */
function contents(
  rows: ReadonlyArray<{ order_id: number; status: string }>,
): Array<[number, string]> {
  return rows
    .map((r): [number, string] => [r.order_id, r.status])
    .sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : 1));
}

describe('append mode: exactly once per file version', () => {
  it('partition discovery, onOverwrite reload: a file rewritten with corrected rows replaces its earlier rows in one commit', async () => {
    const src = await zone();
    const setup = makeConfig({
      source: { uri: src.dir, discover: byDay },
      target: { uri: await tempDir('t', dirs), mode: 'append' },
    });
    await land(src.storage, session, '2026/11/29/a.csv', orders([1, 'a', 1], [2, 'b', 1]));
    await land(src.storage, session, '2026/11/29/other.csv', orders([9, 'z', 1]));
    expect(await run(setup)).toMatchObject({ status: 'succeeded', inserted: 3 });

    await land(
      src.storage,
      session,
      '2026/11/29/a.csv',
      orders([1, 'a-fixed', 1], [2, 'b-fixed', 1], [3, 'c', 1]),
    );
    const second = await run(setup);
    expect(second).toMatchObject({
      status: 'succeeded',
      filesLoaded: 1,
      inserted: 3,
      filesReplaced: 1,
      rowsReplaced: 2,
      commits: 1,
    });
    expect(second.skippedByReason).toEqual({ 'already loaded': 1 });

    const table = await readTarget(session, setup);
    expect(contents(table.rows)).toEqual([
      [1, 'a-fixed'],
      [2, 'b-fixed'],
      [3, 'c'],
      [9, 'z'],
    ]);
    // One commit removed the old rows and added the new ones.
    const log = await checkTarget(session, setup);
    expect(log.problems).toEqual([]);
    expect(await run(setup)).toMatchObject({ status: 'nothing-new' });
  });

  it('a small file written again with the same bytes, or touched, is the same file (issue 20, item 7: known by its content)', async () => {
    const src = await zone();
    const setup = makeConfig({
      source: { uri: src.dir, discover: { by: 'modified', settle: '1h' } },
      target: { uri: await tempDir('t', dirs), mode: 'append' },
    });
    const rows = orders([1, 'a', 1], [2, 'b', 1]);
    await land(src.storage, session, 'feed/a.csv', rows);
    expect(await run(setup)).toMatchObject({ status: 'succeeded', inserted: 2 });
    // A copy in place (new inode), then a touch and a chmod: the content is the same.
    await land(src.storage, session, 'feed/a.csv', rows);
    const later = new Date(Date.now() + 5_000);
    await utimes(join(src.dir, 'feed/a.csv'), later, later);
    await chmod(join(src.dir, 'feed/a.csv'), 0o600);
    const second = await run(setup);
    expect(second).toMatchObject({ status: 'nothing-new', filesLoaded: 0 });
    expect(second.skippedByReason).toMatchObject({ 'already loaded': 1 });
    expect(contents((await readTarget(session, setup)).rows)).toEqual([
      [1, 'a'],
      [2, 'b'],
    ]);
  });

  it('a file rewritten with the same rows in other bytes (new mtime and inode) appends nothing: counted as already loaded', async () => {
    const src = await zone();
    const setup = makeConfig({
      source: { uri: src.dir, discover: { by: 'modified', settle: '1h' } },
      target: { uri: await tempDir('t', dirs), mode: 'append' },
    });
    const rows = orders([1, 'a', 1], [2, 'b', 1], [3, 'c', 1]);
    await land(src.storage, session, 'feed/a.csv', rows);
    const first = await run(setup);
    expect(first).toMatchObject({ status: 'succeeded', inserted: 3 });
    // The same rows written again with the columns in another order, with a later modification time.
    await src.storage.write(
      'feed/a.csv',
      [
        'rid,seq,status,order_id',
        ...rows.map((r) => `${r.rid},${r.seq},${r.status},${r.order_id}`),
      ].join('\n') + '\n',
    );
    const later = new Date(Date.now() + 5_000);
    await utimes(join(src.dir, 'feed/a.csv'), later, later);
    const second = await run(setup);
    expect(second).toMatchObject({ status: 'succeeded', inserted: 0, filesAlreadyLoaded: 1 });
    expect(second.filesReplaced).toBeUndefined();
    const table = await readTarget(session, setup);
    expect(contents(table.rows)).toEqual([
      [1, 'a'],
      [2, 'b'],
      [3, 'c'],
    ]);
    expect(await run(setup)).toMatchObject({ status: 'nothing-new' });
  });

  it('the earlier rows go into a deletion vector when the table takes them (target.deletionVectors: true)', async () => {
    const src = await zone();
    const target = {
      uri: await tempDir('t', dirs),
      mode: 'append',
      deletionVectors: true,
      rewriteFilesBelow: 0,
    };
    const setup = makeConfig({ source: { uri: src.dir, discover: byDay }, target });
    await land(src.storage, session, '2026/11/29/a.csv', orders([1, 'a', 1], [2, 'b', 1]));
    await land(
      src.storage,
      session,
      '2026/11/29/b.csv',
      orders([5, 'e', 1], [6, 'f', 1], [7, 'g', 1], [8, 'h', 1]),
    );
    await run(setup);
    await land(src.storage, session, '2026/11/29/a.csv', orders([1, 'a-fixed', 1]));
    const second = await run(setup);
    expect(second).toMatchObject({
      inserted: 1,
      filesReplaced: 1,
      rowsReplaced: 2,
      filesWithNewDeletionVector: 1,
      dataFilesRemoved: 0,
    });
    const table = await readTarget(session, setup);
    expect(contents(table.rows)).toEqual([
      [1, 'a-fixed'],
      [5, 'e'],
      [6, 'f'],
      [7, 'g'],
      [8, 'h'],
    ]);
    const log = await checkTarget(session, setup);
    expect(log).toMatchObject({ problems: [], filesWithDv: 1 });
  });
});

describe('local folders: a rewrite in place is seen', () => {
  it('same size, same inode, the modification time set back: the new content loads (merge mode)', async () => {
    const src = await zone();
    const setup = makeConfig({
      source: { uri: src.dir, discover: byDay },
      target: { uri: await tempDir('t', dirs), mode: 'merge', key: ['order_id'], orderBy: 'seq' },
    });
    const file = join(src.dir, '2026/11/29/a.csv');
    await land(src.storage, session, '2026/11/29/a.csv', orders([1, 'aaaa', 1]));
    const second = Math.floor(Date.now() / 1000) - 60; // whole seconds: utimes restores them exactly
    await utimes(file, second, second);
    const before = await stat(file, { bigint: true });
    await run(setup);
    // Rewritten in place (writeFile truncates: same inode), same length, the mtime restored (`cp -p`, `touch -d`).
    await writeFile(
      file,
      (await readFile(file, 'utf8')).replace('aaaa', 'bbbb').replace(',1,', ',2,'),
    );
    await utimes(file, second, second);
    const after = await stat(file, { bigint: true });
    expect([after.ino, after.size, after.mtimeNs]).toEqual([
      before.ino,
      before.size,
      before.mtimeNs,
    ]);
    expect(await run(setup)).toMatchObject({ status: 'succeeded', filesLoaded: 1, updated: 1 });
    expect(contents((await readTarget(session, setup)).rows)).toEqual([[1, 'bbbb']]);
  });
});
