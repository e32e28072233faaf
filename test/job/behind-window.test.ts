/**
 * Nothing dropped quietly (issue 20, item 5): in modification-time discovery a file that arrives
 * with an old LastModified (`cp -p`, `rsync -t`, `mv`) lies behind the settle window, where no run
 * ever takes it. The job's ledger knows every file it loaded, so such a file is named: a skip
 * decision in the plan, counted and listed in the run report, and a warning with the backfill that
 * loads it. Through the real job: local folders, real DuckDB and Delta logs.
 */
import { utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { openTarget } from '../../src/job/open.js';
import { jobAppId, stateActions, type JobState } from '../../src/job/state.js';
import { createLogger, type Logger } from '../../src/log/logger.js';
import { LocalStorage } from '../../src/storage/local.js';
import { openTable } from '../../scripts/lib/tables.js';
import { backfill, reset } from './backfill-helpers.js';
import {
  DuckSession,
  land,
  makeConfig,
  mergeTarget,
  orders,
  readTarget,
  run,
  sessionPerFile,
  tempDir,
} from './helpers.js';

let session: DuckSession;
const dirs = sessionPerFile((s) => (session = s));

const NEVER = 'late, behind the settle window';
const CHANGED = 'overwritten behind the settle window';
const HOUR = 3_600_000;

/** A logger keeping the warnings it is given (message and fields). */
function warnings(): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString('utf8').split('\n'))
        if (l.trim() !== '') lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { logger: createLogger({ level: 'warn', json: true, stream }), lines };
}

/** Set a local file's modification time `agoMs` before now. */
async function age(dir: string, key: string, agoMs: number): Promise<Date> {
  const t = new Date(Date.now() - agoMs);
  await utimes(join(dir, key), t, t);
  return t;
}

/** Commit the job's state as a tidemark before the ledger wrote it (no `ledger`), as `SET TRANSACTION`. */
async function dropLedger(setup: ReturnType<typeof makeConfig>): Promise<void> {
  const table = openTable(openTarget(setup.job, setup.storage), session);
  const snapshot = (await table.snapshot())!;
  const { ledger: _l, ...rest } = (await readTarget(session, setup)).state;
  const state: JobState = { ...rest, batch: rest.batch + 1 };
  await table.commit({
    actions: stateActions(state),
    operation: 'SET TRANSACTION',
    operationParameters: {},
    operationMetrics: {},
    read: {
      readVersion: snapshot.version,
      partitions: [],
      files: [],
      appIds: [jobAppId(setup.job.name)],
    },
    isBlindAppend: true,
  });
}

async function zone(mode: 'merge' | 'append', discover: Record<string, unknown> = {}) {
  const dir = await tempDir('src', dirs);
  const target = await tempDir('t', dirs);
  const setup = makeConfig({
    source: { uri: dir, discover: { by: 'modified', settle: '1m', ...discover } },
    target: mode === 'merge' ? mergeTarget(target) : { uri: target, mode: 'append' },
  });
  return { dir, src: new LocalStorage(dir), setup };
}

describe('modification-time discovery: a file behind the window the job never loaded', () => {
  it('merge: a file copied in with a two-hour-old time is named in the report and a warning, and the backfill it names loads it', async () => {
    const { dir, src, setup } = await zone('merge');
    await land(src, session, 'feed/a.csv', orders([1, 'a', 1]));
    expect(await run(setup)).toMatchObject({ status: 'succeeded', inserted: 1 });

    await land(src, session, 'feed/late.csv', orders([2, 'late', 1]));
    const kept = await age(dir, 'feed/late.csv', 2 * HOUR);
    const dry = await run(setup, { dryRun: true });
    expect(dry.skipped).toContainEqual({ key: 'feed/late.csv', reason: NEVER });

    const seen = warnings();
    const second = await run(setup, { logger: seen.logger });
    expect(second).toMatchObject({ status: 'nothing-new', filesLoaded: 0 });
    expect(second.skippedByReason).toMatchObject({ [NEVER]: 1 });
    expect(second.skipped).toEqual([{ key: 'feed/late.csv', reason: NEVER }]);
    const warning = seen.lines.find((l) => String(l['msg']).includes('behind the settle window'));
    expect(warning).toMatchObject({ files: 1, keys: ['feed/late.csv'] });
    // The range is the file's LastModified as the store lists it (utimes may round the last millisecond).
    const from = String(warning?.['from']);
    expect(Math.abs(Date.parse(from) - kept.getTime())).toBeLessThan(1000);
    expect(warning?.['to']).toBe(from);
    expect(String(warning?.['msg'])).toContain(
      `tidemark backfill --job orders --from ${from} --to ${from}`,
    );
    expect((await readTarget(session, setup)).rows.map((r) => r.order_id)).toEqual([1]);

    // The backfill the warning names loads it; the job then names it no more.
    expect(await backfill(setup, { from, to: from })).toMatchObject({ filesLoaded: 1 });
    expect((await readTarget(session, setup)).rows.map((r) => r.order_id).sort()).toEqual([1, 2]);
    const third = await run(setup);
    expect(third.skippedByReason?.[NEVER]).toBeUndefined();
    expect(third.skipped).toBeUndefined();
  });

  it('append: a loaded file rewritten with its old time kept is named as changed (reload), not under onOverwrite: ignore', async () => {
    for (const onOverwrite of ['reload', 'ignore'] as const) {
      const { dir, src, setup } = await zone('append', { onOverwrite });
      await land(src, session, 'feed/a.csv', orders([1, 'a', 1]));
      const old = await age(dir, 'feed/a.csv', 2 * HOUR);
      await land(src, session, 'feed/b.csv', orders([2, 'b', 1]));
      expect(await run(setup)).toMatchObject({ inserted: 2 });
      // rsync -t of a corrected a.csv: new content, the old modification time.
      await land(src, session, 'feed/a.csv', orders([1, 'a-fixed', 2]));
      await utimes(join(dir, 'feed/a.csv'), old, old);
      const second = await run(setup);
      if (onOverwrite === 'reload') {
        expect(second.skippedByReason).toMatchObject({ [CHANGED]: 1 });
        expect(second.skipped).toEqual([{ key: 'feed/a.csv', reason: CHANGED }]);
      } else {
        expect(second.skipped).toBeUndefined();
      }
      expect((await readTarget(session, setup)).rows).toHaveLength(2);
    }
  });

  it('a loaded file copied in place with its old time kept (cp -p, same bytes) is not named: discovery lists by stats, the check compares content', async () => {
    const { dir, src, setup } = await zone('append');
    const rows = orders([1, 'a', 1]);
    await land(src, session, 'feed/a.csv', rows);
    const old = await age(dir, 'feed/a.csv', 2 * HOUR);
    await land(src, session, 'feed/b.csv', orders([2, 'b', 1]));
    expect(await run(setup)).toMatchObject({ inserted: 2 });
    // New inode and ctime, so other stats; the same bytes and modification time.
    await land(src, session, 'feed/a.csv', rows);
    await utimes(join(dir, 'feed/a.csv'), old, old);
    const second = await run(setup);
    expect(second).toMatchObject({ status: 'nothing-new' });
    expect(second.skipped).toBeUndefined();
  });

  it('a file before discover.start, or before a watermark reset forward, is not named: it was left out on purpose', async () => {
    const { dir, src, setup } = await zone('merge', {
      start: new Date(Date.now() - 4 * HOUR).toISOString(),
    });
    await land(src, session, 'feed/before-start.csv', orders([1, 'x', 1]));
    await age(dir, 'feed/before-start.csv', 5 * HOUR);
    await land(src, session, 'feed/a.csv', orders([2, 'a', 1]));
    await age(dir, 'feed/a.csv', 3 * HOUR);
    expect(await run(setup)).toMatchObject({ inserted: 1 });
    await land(src, session, 'feed/b.csv', orders([3, 'b', 1]));
    await age(dir, 'feed/b.csv', 3.5 * HOUR);
    // b.csv lies after start and behind the window: named, until a reset forward skips it on purpose.
    expect((await run(setup)).skipped).toEqual([{ key: 'feed/b.csv', reason: NEVER }]);
    expect(await reset(setup, { to: new Date(Date.now() - 2 * HOUR).toISOString() })).toMatchObject(
      { rewound: false },
    );
    expect((await run(setup)).skipped).toBeUndefined();
    expect((await readTarget(session, setup)).rows.map((r) => r.order_id)).toEqual([2]);
  });

  it('a job whose state predates the ledger: the ledger starts with its next batch, seeded with the files the state remembers', async () => {
    const { dir, src, setup } = await zone('merge');
    await land(src, session, 'feed/a.csv', orders([1, 'a', 1]));
    await age(dir, 'feed/a.csv', 3 * HOUR);
    expect(await run(setup)).toMatchObject({ inserted: 1 });
    await dropLedger(setup);
    expect((await readTarget(session, setup)).state.ledger).toBeUndefined();
    await land(src, session, 'feed/c.csv', orders([3, 'c', 1]));
    expect(await run(setup)).toMatchObject({ inserted: 1 });
    expect((await readTarget(session, setup)).state.ledger?.since).toEqual(expect.any(Number));
    // a.csv (remembered when the ledger started) is known; a file arriving now with an old time is named.
    await land(src, session, 'feed/late.csv', orders([2, 'late', 1]));
    await age(dir, 'feed/late.csv', 2 * HOUR);
    expect((await run(setup)).skipped).toEqual([{ key: 'feed/late.csv', reason: NEVER }]);
  });
});
