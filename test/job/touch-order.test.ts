/**
 * A touch is not a new statement (issue 20): a file's place in the tie order (orderBy, then its
 * LastModified, key, row position) is the LastModified at which its current content was first
 * loaded, as the ledger records it. So a file touched (same bytes, a new mtime) and loaded again by
 * a backfill or a run after `reset` never makes its rows win a tie they lost before. Where the
 * ledger holds the content but not the time (ledger files written before it was kept), a backfill
 * leaves the file out as 'already loaded, unchanged'. Through the real job, on local folders (a
 * small file's ETag digests its bytes), real DuckDB and real Delta logs.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { str } from '../../src/engine/sql.js';
import { readJobState } from '../../src/job/state.js';
import { openTarget } from '../../src/job/open.js';
import { withTableScan } from '../../src/engine/scan.js';
import { openTable, scanSource } from '../../scripts/lib/tables.js';
import { backfill, reset } from './backfill-helpers.js';
import { tableRows } from './drift-helpers.js';
import { DuckSession, makeConfig, run, sessionPerFile, tempDir } from './helpers.js';

let session: DuckSession;
const dirs = sessionPerFile((s) => (session = s), { threads: 2 });

const T1 = Date.parse('2026-03-25T10:00:00Z');
const DAY = '2026/03/25';

async function write(landing: string, key: string, lines: string[], atMs: number): Promise<void> {
  const file = path.join(landing, ...key.split('/'));
  await fsp.mkdir(path.dirname(file), { recursive: true });
  await fsp.writeFile(file, ['id,seq,note', ...lines].join('\n') + '\n');
  await touch(landing, key, atMs);
}

async function touch(landing: string, key: string, atMs: number): Promise<void> {
  const at = new Date(atMs);
  await fsp.utimes(path.join(landing, ...key.split('/')), at, at);
}

/**
 * A landing zone where a.csv (T1) and b.csv (T1 + 1 min) both say id 1 at seq 5: b is later, it
 * wins the tie. Loaded once by `first`; then a.csv is touched to T1 + 1 h, same bytes.
 */
async function tiedThenTouched(
  discover: Record<string, unknown>,
  first: (setup: ReturnType<typeof makeConfig>) => Promise<void>,
) {
  const dir = await tempDir('touch', dirs);
  const landing = path.join(dir, 'landing');
  await write(landing, `${DAY}/a.csv`, ['1,5,from-a', '2,1,only-a'], T1);
  await write(landing, `${DAY}/b.csv`, ['1,5,from-b'], T1 + 60_000);
  const setup = makeConfig({
    source: { uri: landing, discover },
    target: { uri: path.join(dir, 'table'), key: ['id'], orderBy: 'seq' },
  });
  await first(setup);
  expect(await notes(setup)).toEqual(['from-b', 'only-a']);
  await touch(landing, `${DAY}/a.csv`, T1 + 3_600_000);
  return { setup, landing };
}

async function notes(setup: ReturnType<typeof makeConfig>): Promise<string[]> {
  return (await tableRows(session, setup, 'id')).map((r) => String(r['note']));
}

const byDay = { by: 'partition', layout: '{yyyy}/{mm}/{dd}', start: '2026-03-25' };
const byTime = { by: 'modified', settle: '1s', start: '2026-03-25T00:00:00Z' };
const dayRange = { from: '2026-03-25', to: '2026-03-25', restart: true };
const timeRange = { from: '2026-03-25T00:00:00Z', to: '2026-03-26T00:00:00Z', restart: true };

describe('a touch is not a new statement: the tie order keeps a file where its content first loaded', () => {
  it('partition mode: a backfill reloading a touched file keeps its rows behind the tie they lost, and its lineage time is the first load', async () => {
    const { setup } = await tiedThenTouched(
      byDay,
      async (s) => void expect(await run(s)).toMatchObject({ status: 'succeeded' }),
    );
    expect(await backfill(setup, dayRange)).toMatchObject({ status: 'succeeded', filesLoaded: 2 });
    expect(await notes(setup)).toEqual(['from-b', 'only-a']);
    // The lineage says when a.csv's content first loaded, not when it was touched.
    const storage = openTarget(setup.job, setup.storage);
    const snapshot = (await openTable(storage, session).snapshot())!;
    const lineage = await withTableScan(session, scanSource(storage), snapshot, (r) =>
      session.allJson(`SELECT epoch_ms(_source_modified) AS at FROM (${r}) WHERE id = 2`),
    );
    expect(Number(lineage[0]!['at'])).toBe(T1);
  });

  it('partition mode: a run after reset reloads the touched file in its first place', async () => {
    const { setup } = await tiedThenTouched(
      byDay,
      async (s) => void expect(await run(s)).toMatchObject({ status: 'succeeded' }),
    );
    await reset(setup, { to: '2026-03-24' });
    expect(await run(setup)).toMatchObject({ status: 'succeeded', filesLoaded: 2 });
    expect(await notes(setup)).toEqual(['from-b', 'only-a']);
  });

  it('modification-time mode: a backfill over the touched file keeps it in its first place', async () => {
    const { setup } = await tiedThenTouched(
      byTime,
      async (s) => void expect(await run(s)).toMatchObject({ status: 'succeeded' }),
    );
    // The run sees the touched file as already loaded (its ETag is its content's).
    expect(await run(setup)).toMatchObject({ status: 'nothing-new' });
    expect(await backfill(setup, timeRange)).toMatchObject({ status: 'succeeded', filesLoaded: 2 });
    expect(await notes(setup)).toEqual(['from-b', 'only-a']);
  });

  it('a file first loaded by a backfill keeps that place when a later backfill reloads it touched', async () => {
    const { setup } = await tiedThenTouched(
      byDay,
      async (s) =>
        void expect(await backfill(s, dayRange)).toMatchObject({
          status: 'succeeded',
          filesLoaded: 2,
        }),
    );
    expect(await backfill(setup, dayRange)).toMatchObject({ status: 'succeeded', filesLoaded: 2 });
    expect(await notes(setup)).toEqual(['from-b', 'only-a']);
  });

  it('a ledger that holds the content but not its first time (written before it was kept): the backfill skips the file as already loaded, unchanged', async () => {
    const { setup, landing } = await tiedThenTouched(
      byDay,
      async (s) => void expect(await run(s)).toMatchObject({ status: 'succeeded' }),
    );
    // The job's ledger files as an older tidemark wrote them: key, etag, batch, no time.
    const storage = openTarget(setup.job, setup.storage);
    const state = readJobState(await openTable(storage, session).snapshot(), 'orders');
    expect(state.ledger?.files.length).toBe(1);
    for (const f of state.ledger!.files) {
      const file = path.join(setup.job.target.uri, f.path);
      await session.run(
        `COPY (SELECT key, etag, batch FROM read_parquet(${str(file)})) TO ${str(file + '.old')} (FORMAT parquet)`,
      );
      await fsp.rename(file + '.old', file);
    }
    const report = await backfill(setup, dayRange);
    expect(report).toMatchObject({ status: 'succeeded', filesLoaded: 0 });
    expect(report.skippedByReason).toEqual({ 'already loaded, unchanged': 2 });
    expect(await notes(setup)).toEqual(['from-b', 'only-a']);
    // A file of new content is not held by the ledger: it loads.
    await write(landing, `${DAY}/a.csv`, ['1,5,from-a-2', '2,1,only-a'], T1 + 7_200_000);
    expect(await backfill(setup, dayRange)).toMatchObject({
      status: 'succeeded',
      filesLoaded: 1,
      skippedByReason: { 'already loaded, unchanged': 1 },
    });
    expect(await notes(setup)).toEqual(['from-a-2', 'only-a']);
  });
});
