/**
 * Late files behind the lookback window (issue 19, item 4): a file that lands in a partition the
 * lookback window has passed is not loaded, and the run names it (the run report's `skipped`
 * with its reason and count, and a warning saying how to load it) instead of passing it over in
 * silence; a lookback raised to reach it loads it, and nothing twice. Local folders, real DuckDB,
 * real CSV files and Delta logs.
 */
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log/logger.js';
import { formatRun } from '../../src/cli/output.js';
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
} from './helpers.js';

let session: DuckSession;
const dirs = sessionPerFile((s) => (session = s));

/** A logger whose JSON lines are kept. */
function keptLogger() {
  const stream = new PassThrough();
  const lines: Array<Record<string, unknown>> = [];
  stream.on('data', (chunk: Buffer) =>
    lines.push(
      ...chunk
        .toString('utf8')
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>),
    ),
  );
  return { logger: createLogger({ json: true, stream, level: 'warn' }), lines };
}

describe('late files behind the lookback window', () => {
  it('are named in the run report and a warning, not loaded; a lookback that reaches them loads them once', async () => {
    const root = await tempDir('late', dirs);
    const source = new LocalStorage(root);
    const target = await tempDir('late-t', dirs);
    const config = (lookback: number) =>
      makeConfig({
        source: {
          uri: source.uri,
          discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback },
        },
        target: mergeTarget(target),
      });
    const setup = config(1);
    for (const d of [10, 11, 12])
      await land(source, session, `2025/06/${d}/a.csv`, orders([d, 'placed', 1]));
    expect(await run(setup)).toMatchObject({ filesLoaded: 3, watermark: '2025-06-12' });
    await land(source, session, '2025/06/13/a.csv', orders([13, 'placed', 1]));
    expect(await run(setup)).toMatchObject({ filesLoaded: 1, watermark: '2025-06-13' });

    // The window is now days 12-13; files land in days 10 and 11 (late-checked) and 09 (beyond that).
    await land(source, session, '2025/06/11/late.csv', orders([111, 'placed', 1]));
    await land(source, session, '2025/06/10/late.csv', orders([110, 'placed', 1]));
    await land(source, session, '2025/06/09/late.csv', orders([109, 'placed', 1]));
    const { logger, lines } = keptLogger();
    const report = await run(setup, { logger });
    expect(report).toMatchObject({
      status: 'nothing-new',
      filesLoaded: 0,
      commits: 0,
      watermark: '2025-06-13',
    });
    expect(report.skipped).toEqual([
      { key: '2025/06/10/late.csv', reason: 'late, behind the lookback window' },
      { key: '2025/06/11/late.csv', reason: 'late, behind the lookback window' },
    ]);
    expect(report.skippedByReason).toMatchObject({ 'late, behind the lookback window': 2 });
    const warning = lines.find(
      (l) =>
        typeof l['msg'] === 'string' && (l['msg'] as string).includes('behind the lookback window'),
    );
    expect(warning).toMatchObject({
      files: 2,
      keys: ['2025/06/10/late.csv', '2025/06/11/late.csv'],
    });
    expect(warning!['msg']).toMatch(
      /^2 file\(s\) landed in partitions behind the lookback window \(from 2025-06-10\) .*raise source\.discover\.lookback to 3/,
    );
    expect(formatRun(report)).toContain(
      '    - 2025/06/11/late.csv: late, behind the lookback window',
    );
    expect(
      (await readTarget(session, setup)).rows.map((r) => r.order_id).sort((a, b) => a - b),
    ).toEqual([10, 11, 12, 13]);

    // Every run says it again while they wait; lookback 3 loads them, and nothing loaded before.
    expect((await run(setup)).skipped).toHaveLength(2);
    const wider = await run(config(3));
    expect(wider).toMatchObject({
      status: 'succeeded',
      filesLoaded: 2,
      inserted: 2,
      updated: 0,
      unchanged: 0,
    });
    expect(wider.skipped).toBeUndefined();
    expect(
      (await readTarget(session, setup)).rows.map((r) => r.order_id).sort((a, b) => a - b),
    ).toEqual([10, 11, 12, 13, 110, 111]);
  });

  it('lateCheck: 0 turns the check off (as before: not listed, not said)', async () => {
    const root = await tempDir('late-off', dirs);
    const source = new LocalStorage(root);
    const setup = makeConfig({
      source: {
        uri: source.uri,
        discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 1, lateCheck: 0 },
      },
      target: mergeTarget(await tempDir('late-off-t', dirs)),
    });
    for (const d of [10, 11, 12])
      await land(source, session, `2025/06/${d}/a.csv`, orders([d, 'placed', 1]));
    await run(setup);
    await land(source, session, '2025/06/10/late.csv', orders([110, 'placed', 1]));
    const report = await run(setup);
    expect(report).toMatchObject({
      status: 'nothing-new',
      partitionsListed: ['2025/06/11/', '2025/06/12/'],
    });
    expect(report.skipped).toBeUndefined();
  });
});
