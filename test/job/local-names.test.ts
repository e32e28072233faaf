/**
 * Local folders with names that DuckDB or a path check could take for something else.
 *
 * Local sources and targets whose paths hold `name=value` folders (a hive-style layout such as
 * `dt={yyyy}-{mm}-{dd}`, or a root below `env=prod/`). Local files are read in place, and DuckDB's
 * readers guess hive partitioning from such paths: read_json added a `dt` column that no file
 * holds (stored silently, exit 0) and read_csv failed every batch ("Expected Number of Columns:
 * 3 Found: 2"). The table must hold exactly the files' columns and rows.
 * A file or folder with a backslash in its name (legal outside Windows) was left out of the
 * listing: not loaded, not reported, exit 0.
 * Real DuckDB, real CSV/NDJSON/Parquet files, real Delta logs in local folders.
 */
import { join, sep } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, type Logger } from '../../src/log/logger.js';
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

/** A logger keeping the messages of its warnings. */
function warningsLogger(): { logger: Logger; warnings: string[] } {
  const warnings: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk
        .toString()
        .split('\n')
        .filter((l) => l !== '')) {
        const entry = JSON.parse(line) as { level: number; msg: string };
        if (entry.level === 40) warnings.push(entry.msg);
      }
      done();
    },
  });
  return { logger: createLogger({ stream, json: true, level: 'warn' }), warnings };
}

describe('paths with name=value folders', () => {
  it.each([
    ['a hive-style layout', 'land', 'dt={yyyy}-{mm}-{dd}', (d: string) => `dt=2026-11-${d}`],
    ['a root below env=prod/', 'env=prod/land', '{yyyy}/{mm}/{dd}', (d: string) => `2026/11/${d}`],
  ])(
    '%s: CSV, NDJSON and Parquet load with their own columns only',
    async (_, root, layout, folder) => {
      const base = await tempDir('hive', dirs);
      const source = new LocalStorage(join(base, root));
      await land(source, session, `${folder('01')}/a.csv`, orders([1, 'placed', 1]));
      await land(source, session, `${folder('01')}/b.ndjson`, orders([2, 'placed', 1]));
      await land(source, session, `${folder('02')}/c.parquet`, orders([3, 'placed', 1]));
      await land(source, session, `${folder('02')}/d.csv`, orders([1, 'paid', 2]));
      const setup = makeConfig({
        source: { uri: join(base, root), discover: { by: 'partition', layout } },
        target: mergeTarget(join(base, 'env=prod', 'lake')),
      });

      const { logger, warnings } = warningsLogger();
      const report = await run(setup, { logger });
      expect(report).toMatchObject({
        status: 'succeeded',
        filesLoaded: 4,
        watermark: '2026-11-02',
      });
      // The layout's own dt=… folders are not a lost column.
      expect(warnings.filter((w) => w.includes('folder name only'))).toEqual([]);
      const table = await readTarget(session, setup);
      expect(table.columns.sort()).toEqual(
        ['_source_file', '_source_modified', 'order_id', 'rid', 'seq', 'status'].sort(),
      );
      expect(table.rows.map((r) => [r.order_id, r.status]).sort()).toEqual([
        [1, 'paid'],
        [2, 'placed'],
        [3, 'placed'],
      ]);
      // A second run reads the table's own files and state back (paths below env=prod/ too).
      expect(await run(setup)).toMatchObject({ status: 'nothing-new', filesLoaded: 0 });
    },
  );
});

describe("Spark's partition folders (part=7/) below the source root", () => {
  it("the rows have the files' own columns only, and a warning names the folder column and a file, once", async () => {
    const base = await tempDir('spark-parts', dirs);
    const source = new LocalStorage(join(base, 'land'));
    await land(source, session, 'part=7/a.parquet', orders([1, 'placed', 1]));
    await land(source, session, 'part=8/b.parquet', orders([2, 'placed', 1]));
    // A folder named by a column the file holds loses nothing.
    await land(source, session, 'status=placed/c.parquet', orders([3, 'placed', 1]));
    const setup = makeConfig({
      source: { uri: join(base, 'land'), discover: { by: 'modified', settle: '0s' } },
      target: mergeTarget(join(base, 'lake')),
    });
    const { logger, warnings } = warningsLogger();
    expect(await run(setup, { logger })).toMatchObject({ status: 'succeeded', filesLoaded: 3 });
    const lost = warnings.filter((w) => w.includes('folder name only'));
    expect(lost).toHaveLength(1);
    expect(lost[0]).toMatch(
      /land\/part=[78]\/[ab]\.parquet lies below a folder part=…, and the file has no column "part"/,
    );
    const table = await readTarget(session, setup);
    expect(table.columns).not.toContain('part');
    expect(table.rows.map((r) => r.order_id).sort()).toEqual([1, 2, 3]);
  });
});

describe.skipIf(sep === '\\')('backslashes in local names', () => {
  it('a file and a folder with a backslash load like any other, once', async () => {
    const base = await tempDir('backslash', dirs);
    const source = new LocalStorage(join(base, 'land'));
    await land(source, session, '2026/11/01/d\\e.csv', orders([1, 'placed', 1]));
    await land(source, session, '2026/11/01/f\\g/h.csv', orders([2, 'placed', 1]));
    await land(source, session, '2026/11/01/plain.csv', orders([3, 'placed', 1]));
    const setup = makeConfig({
      source: {
        uri: join(base, 'land'),
        discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}' },
      },
      target: mergeTarget(join(base, 'lake')),
    });
    expect(await run(setup)).toMatchObject({
      status: 'succeeded',
      filesDiscovered: 3,
      filesLoaded: 3,
    });
    const table = await readTarget(session, setup);
    expect(table.rows.map((r) => r.order_id).sort()).toEqual([1, 2, 3]);
    expect(await run(setup)).toMatchObject({ status: 'nothing-new', filesLoaded: 0 });
  });
});
