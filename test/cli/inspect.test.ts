/**
 * Looking at a job's table from the command line, and the maintenance flags: `history` lists the
 * commits (runs with their batch, rows, files, duration; optimize), `show` prints rows and refuses
 * anything in --where that is not one expression, unknown columns and bad limits (exit 2);
 * `optimize --dry-run` plans without committing; `vacuum --retain` takes durations; on a terminal
 * the run's progress names the phases and "batch n/N".
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalStorage } from '../../src/storage/local.js';
import { cleanup, DuckSession, land, orders } from '../job/helpers.js';
import { cli, orderJob } from '../observe/cli-helpers.js';

let session: DuckSession;
const dirs: string[] = [];
let config: string;
let runStderr: string;

beforeAll(async () => {
  session = await DuckSession.open();
  const job = await orderJob(session, dirs);
  config = job.config;
  // A third batch of new keys only: its MERGE adds a file and removes none, leaving two small files.
  await land(new LocalStorage(job.root), session, '2025/05/03/c.csv', orders([3, 'placed', 1]));
  // On a (forced) terminal: the progress bar goes to stderr.
  const run = await cli(['run', '--config', config], { tty: true });
  if (run.code !== 0) throw new Error(run.stderr);
  runStderr = run.stderr;
});

afterAll(async () => {
  session?.close();
  await cleanup(dirs);
});

type Json = Record<string, unknown>;

describe('history, show and the maintenance flags', () => {
  it('progress on a terminal shows listing, batch n/N and the phases', () => {
    for (const text of [
      'orders listing',
      'orders batch 1/3 fetch',
      'orders batch 2/3 merge',
      'orders batch 3/3 commit',
    ])
      expect(runStderr).toContain(text);
  });

  it('optimize --dry-run plans and commits nothing; history lists the runs newest first with their counts', async () => {
    const dry = await cli(['optimize', '--config', config, '--dry-run', '--json']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(JSON.parse(dry.stdout)).toMatchObject({
      job: 'orders',
      command: 'optimize',
      status: 'dry-run',
      dryRun: true,
      version: null,
      readVersion: 2,
      filesRemoved: 2,
      filesAdded: 1,
    });
    const human = await cli(['optimize', '--config', config, '--dry-run']);
    expect(human.stdout).toMatch(
      /^orders: optimize dry-run: would compact 2 files \(.+\) into 1 in 1 partitions \(table version 2\); nothing written\n$/,
    );

    const h = await cli(['history', '--config', config, '--json']);
    expect(h.code, h.stderr).toBe(0);
    const report = JSON.parse(h.stdout) as Json & { commits: Json[] };
    expect(report).toMatchObject({ job: 'orders', status: 'ok', tableVersion: 2 });
    expect(
      report.commits.map((c) => [
        c['version'],
        c['operation'],
        c['kind'],
        c['job'],
        c['batch'],
        c['filesAdded'],
        c['rowsInserted'],
        c['rowsUpdated'],
      ]),
    ).toEqual([
      [2, 'MERGE', 'run', 'orders', 3, 1, 1, 0],
      [1, 'MERGE', 'run', 'orders', 2, 1, 0, 1],
      [0, 'CREATE TABLE AS SELECT', 'run', 'orders', 1, 1, 2, 0],
    ]);
    expect(report.commits[0]!['time']).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(report.commits[0]!['durationMs']).toEqual(expect.any(Number));

    const text = await cli(['history', '--config', config, '--limit', '2']);
    const lines = text.stdout.split('\n');
    expect(lines[0]).toContain('orders: ');
    expect(lines[1]).toMatch(
      /^version\s+time \(UTC\)\s+operation\s+by\s+files \+\/-\s+rows ins\/upd\/del\s+took$/,
    );
    expect(lines[3]).toMatch(
      /^\s+2\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+MERGE\s+run #3\s+1\/0\s+1\/0\/0\s+\S+$/,
    );
    expect(lines[4]).toMatch(
      /^\s+1\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+MERGE\s+run #2\s+1\/1\s+0\/1\/0\s+\S+$/,
    );
    expect(lines).toHaveLength(6);
  });

  it('show prints rows in key order, filtered, limited, in the columns asked', async () => {
    const all = await cli(['show', '--config', config, '--job', 'orders', '--json']);
    expect(all.code, all.stderr).toBe(0);
    const rows = all.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Json);
    // JSON-safe: BIGINT as text (no precision lost past 2^53).
    expect(rows.map((r) => [r['order_id'], r['status']])).toEqual([
      ['1', 'paid'],
      ['2', 'placed'],
      ['3', 'placed'],
    ]);

    const some = await cli([
      'show',
      '--config',
      config,
      '--job',
      'orders',
      '--where',
      "status = 'placed' AND order_id < 3",
      '--columns',
      'status,order_id',
      '--json',
    ]);
    expect(some.stdout).toBe('{"status":"placed","order_id":"2"}\n');

    const table = await cli([
      'show',
      '--config',
      config,
      '--job',
      'orders',
      '--columns',
      'order_id,status',
      '--limit',
      '1',
    ]);
    expect(table.stdout).toBe(
      'order_id  status\n--------  ------\n1         paid\n(1 row, --limit 1; table version 2)\n',
    );
  });

  it.each([
    [['--where', '1=1; DROP TABLE x'], 'syntax error'],
    [['--where', '1) AS a, (2'], 'not a single expression'],
    [['--where', 'order_id IN (SELECT 1)'], 'subqueries are not allowed'],
    [['--columns', 'order_id,nope'], 'no column "nope"'],
    [['--limit', '10; DROP'], '--limit must be a whole number'],
  ])('show %j is refused with exit 2', async (flags, message) => {
    const r = await cli(['show', '--config', config, '--job', 'orders', ...flags]);
    expect(r.code).toBe(2);
    expect(r.stdout + r.stderr).toContain(message);
  });

  it('vacuum --retain takes durations like the config (a bare number is hours)', async () => {
    const retain = async (value: string) => {
      const r = await cli(['vacuum', '--config', config, '--dry-run', '--json', '--retain', value]);
      return {
        code: r.code,
        hours: r.code === 0 ? (JSON.parse(r.stdout) as Json)['retainHours'] : r.stderr,
      };
    };
    expect(await retain('7d')).toEqual({ code: 0, hours: 168 });
    expect(await retain('168h')).toEqual({ code: 0, hours: 168 });
    expect(await retain('200')).toEqual({ code: 0, hours: 200 });
    expect((await retain('soon')).code).toBe(2);
  });
});
