/**
 * Scale-out on one table, ten commands at once: four shards of a backfill of job `eu`, two hourly
 * runs of each of two jobs (`eu`, `us`: one per region, disjoint keys) MERGing into the same
 * table partitioned by order_date, one `optimize` and one `vacuum --dry-run`. Each command is the
 * real CLI (`main`, in this process: in-process concurrency, every command with its own DuckDB
 * session, source and table objects) on local folders, so put-if-absent is real (`link()`), and
 * each starts after a seeded random delay. Repeated ROUNDS times on fresh folders (3 in `npm test`,
 * each run from a new base seed; TIDEMARK_SCALE_ROUNDS=10 for the figures docs/scaling.md quotes).
 *
 * The landing zones: eight days of both regions loaded before (the jobs' watermarks are the 8th);
 * then corrections re-delivered into the eight days of `eu` (what the backfill is for; the eu
 * runs' lookback also rescans the last two of them) and two new days in each region. After each
 * round: every command exited 0 (optimize may exit 3, losing to a MERGE that rewrote one of its
 * files, which the README documents; a run or shard that gave up with exit 3 is run again, as a
 * scheduler would, and counted), the table holds every landed order exactly once with its newest
 * row, every commit of the log is valid, each job's state is its own (watermark on the 10th), every
 * shard is done, and a further run of each job finds nothing new.
 *
 * The seed is printed; TIDEMARK_SCALE_SEED replays a sequence.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readBackfillStates } from '../../src/job/backfill/state.js';
import { readJobState } from '../../src/job/state.js';
import { silentLogger } from '../../src/log/logger.js';
import { LocalStorage } from '../../src/storage/local.js';
import {
  buildCorrections,
  buildFeed,
  daysFrom,
  landFeed,
  latestByOrder,
  type Feed,
  type FeedRow,
} from '../../scripts/lib/daily-feed.js';
import { prng } from '../../scripts/lib/prng.js';
import { cli, sleep } from '../helpers/cli.js';
import { duplicateOrders, logProblems, readFeedTable } from '../job/feed-table.js';
import { cleanup, DuckSession, makeConfig, tempDir } from '../job/helpers.js';

const ROUNDS = Number(process.env['TIDEMARK_SCALE_ROUNDS'] ?? 3);
const MAX_START_DELAY_MS = 300;
const DAYS = daysFrom('2026-02-01', 10);
const OLD = DAYS.slice(0, 8);
const NEW = DAYS.slice(8);

let session: DuckSession;
const dirs: string[] = [];

beforeAll(async () => {
  session = await DuckSession.open();
});

afterAll(async () => {
  session?.close();
  await cleanup(dirs);
});

/** A round's folders and config: two regions' landing zones, one table. */
async function world(): Promise<{
  config: string;
  eu: LocalStorage;
  us: LocalStorage;
  table: string;
}> {
  const root = await tempDir('scale', dirs);
  const config = path.join(root, 'tidemark.yaml');
  const job = (name: string) =>
    [
      `  - name: ${name}`,
      `    source: { uri: ./${name}, discover: { by: partition, layout: "{yyyy}/{mm}/{dd}", lookback: 2 } }`,
      `    target: { uri: ./table, key: [order_id], orderBy: seq, partitionBy: [order_date] }`,
    ].join('\n');
  // Ten DuckDB sessions share two cores here: one thread each.
  await fsp.writeFile(config, `engine: { threads: 1 }\njobs:\n${job('eu')}\n${job('us')}\n`);
  await fsp.mkdir(path.join(root, 'eu'));
  await fsp.mkdir(path.join(root, 'us'));
  return {
    config,
    eu: new LocalStorage(path.join(root, 'eu')),
    us: new LocalStorage(path.join(root, 'us')),
    table: path.join(root, 'table'),
  };
}

/** Split a feed's files into those of `days` and the rest. */
function onDays(feed: Feed, days: readonly string[]): Feed {
  const keep = new Set(days.map((d) => d.replaceAll('-', '/')));
  const files = new Map([...feed.files].filter(([key]) => keep.has(key.slice(0, 10))));
  return { files, rows: [...files.values()].flat() };
}

interface Outcome {
  label: string;
  argv: string[];
  code: number;
  report: Record<string, unknown>;
}

/** Run the CLI with --json after `delayMs`; the exit code and the (first) report. */
async function command(label: string, argv: string[], delayMs: number): Promise<Outcome> {
  await sleep(delayMs);
  const t0 = Date.now();
  const r = await cli([...argv, '--json'], { logger: silentLogger(), tty: false });
  if (process.env['TIDEMARK_SCALE_DEBUG'])
    console.log(`${label} took ${Date.now() - t0} ms after ${delayMs} ms`);
  const first = r.stdout.split('\n').find((l) => l.trim() !== '');
  return {
    label,
    argv,
    code: r.code,
    report: first ? (JSON.parse(first) as Record<string, unknown>) : {},
  };
}

describe('scale-out: shards, two jobs, optimize and vacuum on one table at once (target: local)', () => {
  it(`${ROUNDS} seeded rounds: every landed row exactly once with its newest values, every commit valid`, async () => {
    const baseSeed = Number(
      process.env['TIDEMARK_SCALE_SEED'] ?? Math.floor(Math.random() * 2 ** 31),
    );
    const totals = {
      commits: 0,
      commitRetries: 0,
      replans: 0,
      rerunsAfterExit3: 0,
      optimizeLost: 0,
    };
    for (let round = 0; round < ROUNDS; round++) {
      const seed = baseSeed + round;
      const where = `(round ${round}, seed ${seed}; replay with TIDEMARK_SCALE_SEED=${baseSeed})`;
      const random = prng(seed);
      const w = await world();
      // Orders change within a day or two of being placed, as they do.
      const feed = {
        days: DAYS,
        ordersPerDay: 5,
        updatesPerDay: 3,
        updateWindowDays: 1,
        filesPerDay: 1,
        random,
      };
      const euFeed = buildFeed({ ...feed, idBase: 1, tag: `eu${round}` });
      const usFeed = buildFeed({ ...feed, idBase: 1_000_000, tag: `us${round}` });
      await landFeed(w.eu, onDays(euFeed, OLD));
      await landFeed(w.us, onDays(usFeed, OLD));
      const first = await Promise.all(
        ['eu', 'us'].map((job) =>
          cli(['run', '-c', w.config, '--job', job], { logger: silentLogger() }),
        ),
      );
      expect(
        first.map((r) => r.code),
        where,
      ).toEqual([0, 0]);

      const fixes = buildCorrections(euFeed, OLD, 2, `fix${round}`, random, 1);
      await landFeed(w.eu, fixes);
      await landFeed(w.eu, onDays(euFeed, NEW));
      await landFeed(w.us, onDays(usFeed, NEW));
      const landed: FeedRow[] = [...euFeed.rows, ...usFeed.rows, ...fixes.rows];

      const c = ['-c', w.config];
      const commands: Array<[string, string[]]> = [
        ...[0, 1, 2, 3].map((k): [string, string[]] => [
          `shard ${k + 1}/4`,
          [
            'backfill',
            ...c,
            '--job',
            'eu',
            '--from',
            OLD[0]!,
            '--to',
            OLD.at(-1)!,
            '--shard',
            `${k + 1}/4`,
          ],
        ]),
        ['run eu #1', ['run', ...c, '--job', 'eu']],
        ['run eu #2', ['run', ...c, '--job', 'eu']],
        ['run us #1', ['run', ...c, '--job', 'us']],
        ['run us #2', ['run', ...c, '--job', 'us']],
        ['optimize', ['optimize', ...c, '--job', 'eu']],
        ['vacuum --dry-run', ['vacuum', ...c, '--job', 'eu', '--dry-run']],
      ];
      const outcomes = await Promise.all(
        commands.map(([label, argv]) =>
          command(label, argv, Math.floor(random() * MAX_START_DELAY_MS)),
        ),
      );

      for (const o of outcomes) {
        if (o.code === 3) {
          if (o.label === 'optimize') totals.optimizeLost += 1;
          // A scheduler retries exit 3 later; so does the test, and counts it.
          else totals.rerunsAfterExit3 += 1;
          const again = await command(o.label, o.argv, 0);
          expect(
            again.code,
            `${o.label} rerun after exit 3 ${where}: ${JSON.stringify(again.report['error'])}`,
          ).toBe(0);
          continue;
        }
        expect(o.code, `${o.label} ${where}: ${JSON.stringify(o.report['error'])}`).toBe(0);
      }
      for (const o of outcomes) {
        totals.commits += Number(o.report['commits'] ?? 0);
        totals.commitRetries += Number(o.report['commitRetries'] ?? 0);
        totals.replans += Number(o.report['replans'] ?? 0);
      }
      if (process.env['TIDEMARK_SCALE_DEBUG'])
        console.log(
          outcomes
            .map(
              (o) =>
                `${o.label}: ${o.code} c${String(o.report['commits'] ?? '-')} r${String(o.report['commitRetries'] ?? '-')} p${String(o.report['replans'] ?? '-')} ${o.code ? JSON.stringify(o.report['error']).slice(0, 300) : ''}`,
            )
            .join('\n'),
        );

      const setup = makeConfig({
        name: 'eu',
        source: { uri: '/unused', discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}' } },
        target: { uri: w.table, key: ['order_id'], orderBy: 'seq' },
      });
      const table = await readFeedTable(session, setup);
      expect(duplicateOrders(table.rows), where).toEqual([]);
      expect(table.rows, where).toEqual(latestByOrder(landed));
      expect(await logProblems(w.table), where).toEqual([]);
      expect(readJobState(table.snapshot, 'eu').discovery, where).toMatchObject({
        watermark: NEW.at(-1),
      });
      expect(readJobState(table.snapshot, 'us').discovery, where).toMatchObject({
        watermark: NEW.at(-1),
      });
      const shards = [...readBackfillStates(table.snapshot, 'eu').values()];
      expect(
        shards.map((s) => s.status),
        where,
      ).toEqual(['done', 'done', 'done', 'done']);
      for (const job of ['eu', 'us']) {
        const again = await command(`run ${job} after`, ['run', ...c, '--job', job], 0);
        expect(again.report, where).toMatchObject({ status: 'nothing-new' });
      }
    }
    // What contention looked like (docs/scaling.md quotes a run of it).
    console.log(`scale-out ${ROUNDS} rounds, base seed ${baseSeed}: ${JSON.stringify(totals)}`);
  }, 180_000);
});
