/**
 * A job whose target sets table properties (`target.tableProperties`): the table it creates has
 * row tracking, in-commit timestamps and V2 checkpoints, and every later run honours them: row ids
 * kept across updates, commitInfo first with monotonic timestamps that status and history report,
 * and a V2 checkpoint when one is due.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { TableConfig } from '../../src/delta/table-config.js';
import { jobHistory } from '../../src/job/history.js';
import { jobStatus } from '../../src/job/status.js';
import { silentLogger } from '../../src/log/logger.js';
import { LocalStorage } from '../../src/storage/local.js';
import { checkRowIdInvariants, commitActions, trackedRows } from '../helpers/row-tracking.js';
import {
  checkTarget,
  DuckSession,
  land,
  makeConfig,
  mergeTarget,
  orders,
  readTarget,
  run,
  sessionPerFile,
  tempDir,
  unwrap,
} from './helpers.js';

let session: DuckSession;
const dirs = sessionPerFile((s) => (session = s), { threads: 2 });

const PROPERTIES = {
  'delta.enableRowTracking': true,
  'delta.enableInCommitTimestamps': true,
  'delta.checkpointPolicy': 'v2',
  'delta.checkpointInterval': 2,
};

describe('a job creating a table with row tracking, in-commit timestamps and V2 checkpoints', () => {
  it('three runs: row ids kept across updates, timestamps first and monotonic (status and history use them), a V2 checkpoint at version 2', async () => {
    const landing = await tempDir('features-src', dirs);
    const target = await tempDir('features-t', dirs);
    const source = new LocalStorage(landing);
    const setup = makeConfig({
      source: {
        uri: landing,
        discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 1 },
      },
      target: { ...mergeTarget(target), tableProperties: PROPERTIES },
    });
    await land(source, session, '2025/05/01/a.csv', orders([1, 'placed', 1], [2, 'placed', 1]));
    await run(setup);
    await land(source, session, '2025/05/02/b.csv', orders([1, 'paid', 2], [3, 'placed', 1]));
    await run(setup);
    await land(source, session, '2025/05/03/c.csv', orders([2, 'cancelled', 2]));
    const last = await run(setup);
    expect(last).toMatchObject({ status: 'succeeded', tableVersion: 2, updated: 1 });

    const table = await readTarget(session, setup);
    const byOrder = table.rows
      .map((r) => [r.order_id, r.status])
      .sort((a, b) => Number(a[0]) - Number(b[0]));
    expect(byOrder).toEqual([
      [1, 'paid'],
      [2, 'cancelled'],
      [3, 'placed'],
    ]);
    const snapshot = table.snapshot!;
    expect(TableConfig.of(snapshot.protocol, snapshot.metadata).writerFeatures).toEqual(
      expect.arrayContaining([
        'rowTracking',
        'domainMetadata',
        'inCommitTimestamp',
        'v2Checkpoint',
      ]),
    );

    // Orders 1 and 2 keep the ids of their first insert through their updates; 3 got a fresh one.
    const storage = new LocalStorage(target);
    const tracked = await trackedRows(session, storage, snapshot, 'order_id');
    checkRowIdInvariants(snapshot, tracked);
    expect(tracked.map((t) => [Number(t.value), t.rowId, t.version])).toEqual([
      [1, 0, 1],
      [2, 1, 2],
      [3, expect.any(Number), 1],
    ]);
    expect(tracked[2]!.rowId).toBeGreaterThan(1);

    const stamps: number[] = [];
    for (const v of [0, 1, 2]) {
      const first = (await commitActions(storage, v))[0]!;
      expect(first, `commitInfo is the first action of v${v}`).toHaveProperty(
        'commitInfo.inCommitTimestamp',
      );
      stamps.push(
        Number((first as { commitInfo: Record<string, unknown> }).commitInfo['inCommitTimestamp']),
      );
    }
    expect(stamps[1]!).toBeGreaterThan(stamps[0]!);
    expect(stamps[2]!).toBeGreaterThan(stamps[1]!);

    const ctx = { storage: setup.storage, logger: silentLogger() };
    const status = unwrap(await jobStatus(setup.job, ctx));
    expect(status.lastRunAt).toBe(new Date(stamps[2]!).toISOString());
    const history = unwrap(await jobHistory(setup.job, ctx, { limit: 3 }));
    expect(history.commits.map((c) => c.time)).toEqual(
      [...stamps].reverse().map((t) => new Date(t).toISOString()),
    );

    expect((await checkTarget(session, setup)).problems).toEqual([]);
    const log = await readdir(join(target, '_delta_log'));
    expect(log.filter((n) => n.includes('.checkpoint.'))).toEqual([
      expect.stringMatching(/^00000000000000000002\.checkpoint\.[0-9a-f-]{36}\.json$/),
    ]);
  });
});
