/**
 * Backlog you can see (issue 25, item 4): the run JSON, `status` and the metrics file give the
 * files and bytes discovered but not loaded yet, and the age of the oldest: files of batches a
 * run did not commit (maxFilesPerBatch split the plan; the run stopped after the first commit),
 * and files waiting for their partition's `_SUCCESS` marker. Local folders, real DuckDB, real
 * NDJSON files and Delta logs.
 */
import { readFile, stat, utimes } from 'node:fs/promises';
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
  run,
  runOutcome,
  sessionPerFile,
  tempDir,
  unwrap,
} from './helpers.js';

let session: DuckSession;
const dirs = sessionPerFile((s) => (session = s));

type Setup = { job: JobConfig; storage: StorageConfig };
const statusOf = async (setup: Setup) =>
  unwrap(await jobStatus(setup.job, { storage: setup.storage, logger: silentLogger() }));

/** Gauges of a metrics file by series. */
async function gauges(file: string): Promise<Map<string, number>> {
  const text = await readFile(file, 'utf8');
  return new Map(
    text
      .split('\n')
      .filter((l) => l && !l.startsWith('#'))
      .map((l) => [l.slice(0, l.lastIndexOf(' ')), Number(l.slice(l.lastIndexOf(' ') + 1))]),
  );
}

describe('backlog', () => {
  it('a run stopped after its first of three batches reports two files outstanding, their bytes and the oldest one; status and the metrics say the same; the rerun clears it', async () => {
    const root = await tempDir('backlog', dirs);
    const source = new LocalStorage(root);
    const setup = makeConfig({
      source: { uri: source.uri, discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}' } },
      target: mergeTarget(await tempDir('backlog-t', dirs)),
      maxFilesPerBatch: 1,
    });
    const keys = ['2025/04/01/a.ndjson', '2025/04/02/b.ndjson', '2025/04/03/c.ndjson'];
    for (const [i, key] of keys.entries()) {
      await land(source, session, key, orders([i + 1, 'placed', 1], [i + 10, 'placed', 1]));
      // b is older than c: the oldest outstanding file is b, two hours old.
      const when = new Date(Date.now() - (i === 1 ? 7200_000 : 3600_000));
      await utimes(path.join(root, key), when, when);
    }
    const sizes = await Promise.all(keys.map(async (k) => (await stat(path.join(root, k))).size));
    const bOld = new Date((await stat(path.join(root, keys[1]!))).mtimeMs).toISOString();

    const stopped = await runOutcome(setup, {
      hooks: {
        afterCommit: (b) => {
          if (b === 0) throw new Error('stopped after the first commit');
        },
      },
    });
    expect(stopped.ok).toBe(false);
    expect(stopped.report).toMatchObject({ commits: 1, filesLoaded: 1 });
    const expected = { files: 2, bytes: sizes[1]! + sizes[2]!, oldest: bOld };
    expect(stopped.report.backlog).toMatchObject(expected);
    expect(Math.abs(stopped.report.backlog!.oldestAgeSeconds! - 7200)).toBeLessThan(60);

    const status = await statusOf(setup);
    expect(status.backlog).toMatchObject(expected);
    expect(Math.abs(status.backlog!.oldestAgeSeconds! - 7200)).toBeLessThan(60);

    const metrics = path.join(await tempDir('backlog-m', dirs), 'm.prom');
    await new MetricsFile(metrics).record(setup.job, stopped.report, false);
    const g = await gauges(metrics);
    expect(g.get('tidemark_backlog_files{job="orders"}')).toBe(2);
    expect(g.get('tidemark_backlog_bytes{job="orders"}')).toBe(expected.bytes);
    expect(
      Math.abs(g.get('tidemark_backlog_oldest_age_seconds{job="orders"}')! - 7200),
    ).toBeLessThan(60);

    const rerun = await run(setup);
    expect(rerun).toMatchObject({
      status: 'succeeded',
      filesLoaded: 2,
      backlog: { files: 0, bytes: 0, oldest: null, oldestAgeSeconds: null },
    });
    expect((await statusOf(setup)).backlog).toEqual({
      files: 0,
      bytes: 0,
      oldest: null,
      oldestAgeSeconds: null,
    });
    await new MetricsFile(metrics).record(setup.job, rerun, true);
    const after = await gauges(metrics);
    expect(after.get('tidemark_backlog_files{job="orders"}')).toBe(0);
    expect(after.has('tidemark_backlog_oldest_age_seconds{job="orders"}')).toBe(false);
  });

  it('files waiting for their partition marker are outstanding until it comes', async () => {
    const root = await tempDir('backlog-marker', dirs);
    const source = new LocalStorage(root);
    const setup = makeConfig({
      source: {
        uri: source.uri,
        discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}', requireSuccessMarker: true },
      },
      target: mergeTarget(await tempDir('backlog-marker-t', dirs)),
    });
    await land(source, session, '2025/06/20/a.ndjson', orders([1, 'placed', 1]));
    await source.write('2025/06/20/_SUCCESS', '');
    await land(source, session, '2025/06/21/b.ndjson', orders([2, 'placed', 1]));
    const size = (await stat(path.join(root, '2025/06/21/b.ndjson'))).size;
    const first = await run(setup);
    expect(first).toMatchObject({ filesLoaded: 1, backlog: { files: 1, bytes: size } });
    expect((await statusOf(setup)).backlog).toMatchObject({ files: 1, bytes: size });
    await source.write('2025/06/21/_SUCCESS', '');
    expect(await run(setup)).toMatchObject({ filesLoaded: 1, backlog: { files: 0, bytes: 0 } });
    expect((await statusOf(setup)).backlog).toMatchObject({ files: 0, bytes: 0, oldest: null });
  });
});
