/**
 * `kill -9` of one shard of a sharded backfill: four real `tidemark backfill --shard K/4`
 * processes at once on a local source and table (partitioned by order_date, one commit per file so
 * a shard makes several); shard 1 is killed with SIGKILL right after its first commit (watched in
 * the Delta log), while the others go on. Rerunning shard 1 resumes after its last commit, and the
 * table ends exactly as an uninterrupted backfill (unsharded, in another table) leaves it; every
 * commit of the log is valid and every shard is done.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readBackfillStates } from '../../src/job/backfill/state.js';
import { silentLogger } from '../../src/log/logger.js';
import { LocalStorage } from '../../src/storage/local.js';
import { buildFeed, daysFrom, landFeed } from '../../scripts/lib/daily-feed.js';
import { prng } from '../../scripts/lib/prng.js';
import { cli, sleep } from '../helpers/cli.js';
import { duplicateOrders, logProblems, readFeedTable } from '../job/feed-table.js';
import { cleanup, DuckSession, makeConfig, tempDir } from '../job/helpers.js';
import { runCli, spawnCli } from './process.js';

const DAYS = daysFrom('2026-03-01', 12);
let session: DuckSession;
const dirs: string[] = [];

beforeAll(async () => {
  session = await DuckSession.open();
});

afterAll(async () => {
  session?.close();
  await cleanup(dirs);
});

/** A config of one job loading `source` into `table`; the hourly run starts at the last day. */
async function configFor(root: string, table: string): Promise<string> {
  const file = path.join(root, `${table}.yaml`);
  await fsp.writeFile(
    file,
    [
      'engine: { threads: 1 }',
      'jobs:',
      '  - name: orders',
      `    source: { uri: ./landing, discover: { by: partition, layout: "{yyyy}/{mm}/{dd}", start: "${DAYS.at(-1)}" } }`,
      `    target: { uri: ./${table}, key: [order_id], orderBy: seq, partitionBy: [order_date] }`,
      '    maxFilesPerBatch: 1',
    ].join('\n') + '\n',
  );
  return file;
}

/** Files the shard has committed, from the newest commit of the table at `dir` that wrote its state (0 before any). */
async function committedFiles(dir: string, domain: string): Promise<number> {
  const log = path.join(dir, '_delta_log');
  const names = (await fsp.readdir(log).catch(() => [] as string[]))
    .filter((n) => /^\d{20}\.json$/.test(n))
    .sort()
    .reverse();
  for (const name of names) {
    const text = await fsp.readFile(path.join(log, name), 'utf8').catch(() => '');
    for (const line of text.split('\n')) {
      if (!line.includes('domainMetadata')) continue;
      const dm = (
        JSON.parse(line) as { domainMetadata?: { domain: string; configuration: string } }
      ).domainMetadata;
      if (dm?.domain === domain)
        return (JSON.parse(dm.configuration) as { totals: { filesLoaded: number } }).totals
          .filesLoaded;
    }
  }
  return 0;
}

describe('kill -9 of one shard of a sharded backfill', () => {
  it('the killed shard, run again, resumes; the table equals an uninterrupted backfill', async () => {
    const root = await tempDir('kill-shard', dirs);
    const feed = buildFeed({
      days: DAYS,
      ordersPerDay: 6,
      updatesPerDay: 4,
      updateWindowDays: 2,
      filesPerDay: 3,
      idBase: 1,
      tag: 'k',
      random: prng(11),
    });
    await landFeed(new LocalStorage(path.join(root, 'landing')), feed);
    const sharded = await configFor(root, 'sharded');
    const whole = await configFor(root, 'whole');
    const range = ['--from', DAYS[0]!, '--to', DAYS.at(-1)!];
    for (const config of [sharded, whole])
      expect((await cli(['run', '-c', config], { logger: silentLogger() })).code).toBe(0);
    expect((await cli(['backfill', '-c', whole, ...range], { logger: silentLogger() })).code).toBe(
      0,
    );

    const table = path.join(root, 'sharded');
    const procs = [0, 1, 2, 3].map((k) =>
      spawnCli(['backfill', '-c', sharded, ...range, '--shard', `${k + 1}/4`, '--json']),
    );
    // Shard 2/4 (index 1: days 4-6, nine commits of one file each) dies right after its first commit.
    const domain = 'tidemark.backfill.orders@shard-1-of-4';
    const deadline = Date.now() + 60_000;
    while ((await committedFiles(table, domain)) === 0 && Date.now() < deadline) await sleep(10);
    procs[1]!.child.kill('SIGKILL');
    const exits = await Promise.all(procs.map((p) => p.done));
    expect(exits[1]!.signal).toBe('SIGKILL');
    for (const k of [0, 2, 3]) expect(exits[k]!.code, exits[k]!.stderr.slice(-2000)).toBe(0);
    const killedAt = readBackfillStates(
      (await readFeedTable(session, setupOf(table))).snapshot,
      'orders',
    ).get(domain)!;
    expect(killedAt.status).toBe('running');
    expect(killedAt.totals.filesLoaded).toBeGreaterThan(0);
    expect(killedAt.totals.filesLoaded).toBeLessThan(9);

    const rerun = await runCli(['backfill', '-c', sharded, ...range, '--shard', '2/4', '--json']);
    expect(rerun.code, rerun.stderr.slice(-2000)).toBe(0);
    const report = JSON.parse(rerun.stdout) as Record<string, unknown>;
    expect(report).toMatchObject({
      status: 'succeeded',
      shard: '2/4',
      part: { from: DAYS[3], to: DAYS[5] },
      doneThrough: DAYS[5],
    });
    expect(Number(report['filesLoaded'])).toBe(9 - killedAt.totals.filesLoaded);

    const got = await readFeedTable(session, setupOf(table));
    const want = await readFeedTable(session, setupOf(path.join(root, 'whole')));
    expect(duplicateOrders(got.rows)).toEqual([]);
    expect(got.rows).toEqual(want.rows);
    expect(await logProblems(table)).toEqual([]);
    const states = [...readBackfillStates(got.snapshot, 'orders')].sort(([a], [b]) =>
      a < b ? -1 : 1,
    );
    expect(states.map(([, s]) => [s.status, s.totals.filesLoaded])).toEqual([
      ['done', 9],
      ['done', 9],
      ['done', 9],
      ['done', 9],
    ]);
  }, 120_000);
});

function setupOf(table: string) {
  return makeConfig({
    source: { uri: '/unused', discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}' } },
    target: { uri: table, key: ['order_id'], orderBy: 'seq' },
  });
}
