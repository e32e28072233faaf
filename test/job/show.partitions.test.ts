/**
 * `tidemark show --where` on a partitioned table reads only the partitions the condition can keep
 * by the AND terms that name partition columns only (typed as the scan types them, physical keys
 * under column mapping); terms on other columns prune nothing. Proven by deleting the other partitions'
 * files from disk: a pruned show still answers, an unpruned one fails on the missing file.
 * Source and target in local folders.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { showJob, type ShowOptions } from '../../src/cli/commands/show.js';
import { silentLogger } from '../../src/log/logger.js';
import { LocalStorage } from '../../src/storage/local.js';
import { DuckSession, makeConfig, readTarget, run, sessionPerFile, tempDir } from './helpers.js';

type Setup = ReturnType<typeof makeConfig>;

let session: DuckSession;
const dirs = sessionPerFile((s) => (session = s), { threads: 2 });

/** Three days of orders, partitioned by their DATE column (and mapped by name when asked). */
async function threeDays(columnMapping?: 'name'): Promise<Setup> {
  const root = await tempDir('prune-src', dirs);
  const source = new LocalStorage(root);
  const setup = makeConfig({
    source: { uri: root, discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}' } },
    target: {
      uri: await tempDir('prune-t', dirs),
      key: ['order_id'],
      orderBy: 'seq',
      partitionBy: ['order_date'],
      ...(columnMapping ? { columnMapping } : {}),
    },
  });
  await source.write(
    '2025/06/03/a.csv',
    'order_id,order_date,status,seq\n1,2025-06-01,placed,1\n2,2025-06-02,placed,1\n3,2025-06-02,paid,1\n4,2025-06-03,placed,1\n',
  );
  expect(await run(setup)).toMatchObject({ status: 'succeeded', inserted: 4 });
  return setup;
}

async function show(setup: Setup, opts: Omit<ShowOptions, 'limit'>) {
  const outcome = await showJob(
    setup.job,
    { storage: setup.storage, logger: silentLogger(), tty: false },
    { limit: 20, ...opts },
  );
  return outcome;
}

/** Delete the data files of every partition but `keep` (values as the log writes them). */
async function deleteOtherPartitions(setup: Setup, keep: string): Promise<void> {
  const { snapshot } = await readTarget(session, setup);
  for (const f of snapshot!.files) {
    if (Object.values(f.partitionValues).includes(keep)) continue;
    await fsp.rm(path.join(setup.job.target.uri, decodeURIComponent(f.path)));
  }
}

describe('show --where on a partitioned table', () => {
  it.each([[undefined], ['name' as const]])(
    'columnMapping %s: reads only the partitions a partition-only condition keeps',
    async (columnMapping) => {
      const setup = await threeDays(columnMapping);
      const all = await show(setup, { columns: ['order_id', 'status'] });
      expect(all.ok && all.report).toMatchObject({ filesRead: 3, tableFiles: 3 });

      const day = await show(setup, {
        where: "order_date = DATE '2025-06-02'",
        columns: ['order_id', 'status'],
      });
      expect(day.ok && day.report).toMatchObject({
        filesRead: 1,
        tableFiles: 3,
        rows: [
          { order_id: '2', status: 'placed' },
          { order_id: '3', status: 'paid' },
        ],
      });
      // Typed comparison, not text: a range over dates keeps two partitions.
      const range = await show(setup, {
        where: "order_date >= '2025-06-02'",
        columns: ['order_id'],
      });
      expect(range.ok && range.report).toMatchObject({
        filesRead: 2,
        rows: [{ order_id: '2' }, { order_id: '3' }, { order_id: '4' }],
      });
      const none = await show(setup, { where: "order_date > '2030-01-01'" });
      expect(none.ok && none.report).toMatchObject({ status: 'ok', filesRead: 0, rows: [] });
      // AND terms on other columns leave the partition terms to prune; OR with another column cannot.
      const mixed = await show(setup, {
        where: "order_date = '2025-06-02' AND status = 'paid' AND order_date <> '2025-06-03'",
        columns: ['order_id'],
      });
      expect(mixed.ok && mixed.report).toMatchObject({ filesRead: 1, rows: [{ order_id: '3' }] });
      const either = await show(setup, {
        where: "order_date = '2025-06-02' OR status = 'placed'",
        columns: ['order_id'],
      });
      expect(either.ok && either.report).toMatchObject({
        filesRead: 3,
        rows: [{ order_id: '1' }, { order_id: '2' }, { order_id: '3' }, { order_id: '4' }],
      });
      // A random term is not evaluated per partition: every file is read (and the row filter decides).
      const sampled = await show(setup, { where: 'random() < 0', columns: ['order_id'] });
      expect(sampled.ok && sampled.report).toMatchObject({ filesRead: 3, rows: [] });
      const other = await show(setup, { where: "status = 'paid'", columns: ['order_id'] });
      expect(other.ok && other.report).toMatchObject({ filesRead: 3, rows: [{ order_id: '3' }] });

      // With the other days' files gone, the pruned show still answers; the unpruned one needs them.
      await deleteOtherPartitions(setup, '2025-06-02');
      const pruned = await show(setup, {
        where: "order_date = '2025-06-02' AND status = 'placed'",
        columns: ['order_id'],
      });
      expect(pruned.ok && pruned.report.rows).toEqual([{ order_id: '2' }]);
      const unpruned = await show(setup, { where: "status = 'paid'" });
      expect(unpruned.ok).toBe(false);
    },
  );
});
