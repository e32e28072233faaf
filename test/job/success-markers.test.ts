/**
 * Success markers (issue 19, item 4): with `requireSuccessMarker`, the watermark never passes a
 * partition still waiting for its `_SUCCESS` (it stays before the oldest waiting one), later
 * complete partitions still load, exactly once, and the waiting one loads when its marker comes;
 * a partition waiting longer than `discover.markerTimeout` is overdue in the run JSON, `status`
 * and the metrics. Folders that do not fit the layout are listed as skipped in the run JSON.
 * Local folders, real DuckDB, real CSV files and Delta logs.
 */
import { readFile, utimes } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { JobConfig, StorageConfig } from '../../src/config/schema.js';
import { jobStatus } from '../../src/job/status.js';
import { silentLogger } from '../../src/log/logger.js';
import { MetricsFile } from '../../src/observe/metrics.js';
import { LocalStorage } from '../../src/storage/local.js';
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
  unwrap,
} from './helpers.js';

let session: DuckSession;
const dirs = sessionPerFile((s) => (session = s));

type Setup = { job: JobConfig; storage: StorageConfig };
const day = (d: number) => `2025/06/${d}/`;

async function zone(
  discover: Record<string, unknown> = {},
): Promise<{ source: LocalStorage; setup: Setup; root: string }> {
  const root = await tempDir('markers', dirs);
  const source = new LocalStorage(root);
  const setup = makeConfig({
    source: {
      uri: source.uri,
      discover: {
        by: 'partition',
        layout: '{yyyy}/{mm}/{dd}',
        requireSuccessMarker: true,
        ...discover,
      },
    },
    target: mergeTarget(await tempDir('markers-t', dirs)),
  });
  return { source, setup, root };
}

const statusOf = async (setup: Setup) =>
  unwrap(await jobStatus(setup.job, { storage: setup.storage, logger: silentLogger() }));

describe('success markers', () => {
  it('days 20-24 land, all but day 21 with _SUCCESS: the watermark stays before day 21, the others load once, day 21 loads when its marker comes', async () => {
    const { source, setup } = await zone();
    for (const d of [20, 21, 22, 23, 24]) {
      await land(source, session, `${day(d)}part-0.csv`, orders([d, 'placed', 1]));
      if (d !== 21) await source.write(`${day(d)}_SUCCESS`, '');
    }
    const first = await run(setup);
    expect(first).toMatchObject({ status: 'succeeded', filesLoaded: 4, watermark: '2025-06-20' });
    expect(first.waitingForMarker).toEqual([
      { partition: '2025-06-21', files: 1, since: expect.any(String), overdue: false },
    ]);
    expect((await statusOf(setup)).waitingForMarker).toEqual(first.waitingForMarker);

    // Nothing new: the complete days are remembered, not loaded again.
    expect(await run(setup)).toMatchObject({
      status: 'nothing-new',
      filesLoaded: 0,
      commits: 0,
      watermark: '2025-06-20',
    });

    await source.write(`${day(21)}_SUCCESS`, '');
    const late = await run(setup);
    expect(late).toMatchObject({
      status: 'succeeded',
      filesLoaded: 1,
      inserted: 1,
      watermark: '2025-06-24',
    });
    expect(late.waitingForMarker).toBeUndefined();
    expect((await statusOf(setup)).waitingForMarker).toEqual([]);
    expect((await readTarget(session, setup)).rows.map((r) => r.order_id).sort()).toEqual([
      20, 21, 22, 23, 24,
    ]);
    expect(await run(setup)).toMatchObject({ status: 'nothing-new', filesLoaded: 0 });
  });

  it('a partition waiting longer than discover.markerTimeout is overdue in the run JSON, status and the metrics; it still holds the watermark', async () => {
    const { source, setup, root } = await zone({ markerTimeout: '1h' });
    await land(source, session, `${day(20)}a.csv`, orders([1, 'placed', 1]));
    await source.write(`${day(20)}_SUCCESS`, '');
    await land(source, session, `${day(21)}b.csv`, orders([2, 'placed', 1]));
    const twoHoursAgo = Math.floor((Date.now() - 2 * 3600_000) / 1000);
    await utimes(path.join(root, day(21), 'b.csv'), twoHoursAgo, twoHoursAgo);
    await land(source, session, `${day(22)}c.csv`, orders([3, 'placed', 1]));
    await source.write(`${day(22)}_SUCCESS`, '');

    const report = await run(setup);
    expect(report).toMatchObject({
      filesLoaded: 2,
      watermark: '2025-06-20',
      waitingForMarker: [{ partition: '2025-06-21', files: 1, overdue: true }],
    });
    expect((await statusOf(setup)).waitingForMarker).toEqual([
      {
        partition: '2025-06-21',
        files: 1,
        since: new Date(twoHoursAgo * 1000).toISOString(),
        overdue: true,
      },
    ]);
    const metrics = new MetricsFile(path.join(await tempDir('metrics', dirs), 'tidemark.prom'));
    const text = await readFile(await metrics.record(setup.job, report, true), 'utf8');
    expect(text).toContain(
      'tidemark_partitions_waiting_for_marker{job="orders",state="waiting"} 1',
    );
    expect(text).toContain(
      'tidemark_partitions_waiting_for_marker{job="orders",state="overdue"} 1',
    );
  });

  it('a partition that starts waiting while nothing else is new is recorded for status (one commit of the state alone)', async () => {
    const { source, setup } = await zone();
    await land(source, session, `${day(20)}a.csv`, orders([1, 'placed', 1]));
    await source.write(`${day(20)}_SUCCESS`, '');
    await run(setup);
    await land(source, session, `${day(21)}b.csv`, orders([2, 'placed', 1]));
    expect(await run(setup)).toMatchObject({
      filesLoaded: 0,
      commits: 1,
      waitingForMarker: [{ partition: '2025-06-21' }],
    });
    expect((await statusOf(setup)).waitingForMarker).toMatchObject([
      { partition: '2025-06-21', files: 1 },
    ]);
    expect(await run(setup)).toMatchObject({ filesLoaded: 0, commits: 0 });
  });

  it('a folder that does not fit the layout (2025/06/5/) is listed as skipped with its reason in the run JSON and the dry run', async () => {
    const { source, setup } = await zone({ requireSuccessMarker: false });
    await land(source, session, `${day(20)}a.csv`, orders([1, 'placed', 1]));
    await land(source, session, '2025/06/5/b.csv', orders([2, 'placed', 1]));
    const dry = await run(setup, { dryRun: true });
    expect(dry.skipped).toContainEqual({
      key: '2025/06/5/',
      reason: expect.stringMatching(/does not match layout level '\{dd\}'/),
    });
    const report = await run(setup);
    expect(report).toMatchObject({ filesLoaded: 1 });
    expect(report.skipped).toEqual([
      { key: '2025/06/5/', reason: expect.stringMatching(/does not match layout level '\{dd\}'/) },
    ]);
  });
});
