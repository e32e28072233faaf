/**
 * The command line in process (`main(argv, io)`): help, usage errors, config errors, --json,
 * --dry-run, status, a failed run and a lost commit race, each with its exit code (SPEC §5:
 * 0 done, 1 failed, 2 usage or config, 3 lost the race after retries). Real files, real DuckDB,
 * real Delta tables; the process-level behaviour (stdout/stderr of the real binary) is in
 * bin.test.ts.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunContext } from '../../src/job/context.js';
import { runJob } from '../../src/job/run-job.js';
import { silentLogger } from '../../src/log/logger.js';
import { LocalStorage } from '../../src/storage/local.js';
import {
  cleanup,
  DuckSession,
  duplicateRids,
  land,
  makeConfig,
  orders,
  readTarget,
  sortRows,
  tempDir,
  type OrderRow,
} from '../job/helpers.js';
import { cli } from '../helpers/cli.js';

let session: DuckSession;
const dirs: string[] = [];

beforeAll(async () => {
  session = await DuckSession.open();
});

afterAll(async () => {
  session?.close();
  await cleanup(dirs);
});

/** A config file (JSON is YAML) with the given jobs. */
async function configFile(jobs: unknown[], storage: unknown = {}): Promise<string> {
  const dir = await tempDir('cli-cfg', dirs);
  const file = path.join(dir, 'tidemark.yaml');
  await fsp.writeFile(file, JSON.stringify({ storage, jobs }, null, 2));
  return file;
}

/** A local landing zone with two days of order files; returns its folder and the rows landed. */
async function landingZone(): Promise<{ root: string; landed: OrderRow[] }> {
  const root = await tempDir('cli-src', dirs);
  const source = new LocalStorage(root);
  const landed = [...orders([1, 'placed', 1], [2, 'placed', 1]), ...orders([1, 'paid', 2])];
  await land(source, session, '2025/05/01/a.csv', landed.slice(0, 2));
  await land(source, session, '2025/05/02/b.ndjson', landed.slice(2));
  return { root, landed };
}

const byDay = { by: 'partition', layout: '{yyyy}/{mm}/{dd}' };

function appendJob(
  name: string,
  source: string,
  target: string,
  extra: Record<string, unknown> = {},
) {
  return {
    name,
    source: { uri: source, discover: byDay },
    target: { uri: target, mode: 'append' },
    ...extra,
  };
}

function mergeJob(name: string, source: string, target: string) {
  return {
    name,
    source: { uri: source, discover: byDay },
    target: { uri: target, key: ['order_id'], orderBy: 'seq' },
  };
}

describe('tidemark CLI: help and usage', () => {
  it.each([[['--help']], [['run', '--help']], [['status', '--help']], [['help', 'run']]])(
    '%j prints usage on stdout and exits 0',
    async (argv) => {
      const r = await cli(argv);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/^Usage: tidemark/m);
      expect(r.stderr).toBe('');
    },
  );

  it('run --help lists every option of the command', async () => {
    const r = await cli(['run', '--help']);
    for (const flag of ['--config', '--job', '--dry-run', '--json', '--log-level'])
      expect(r.stdout).toContain(flag);
  });

  it('show --help says --json prints rows, not one object per job', async () => {
    const r = await cli(['show', '--help']);
    expect(r.stdout.replace(/\s+/g, ' ')).toContain(
      '--json print each row as one JSON object per line',
    );
    expect(r.stdout).not.toContain('one JSON object per job');
  });

  it.each([
    [['bogus']],
    [['run', '--bogus']],
    [['status', '--dry-run']],
    [['run', '--log-level', 'loud']],
    [['run', '--config']],
  ])('%j is a usage error: exit 2, message on stderr, nothing on stdout', async (argv) => {
    const r = await cli(argv);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/error: /);
    expect(r.stdout).toBe('');
  });
});

describe('tidemark CLI: config errors', () => {
  it('a config that breaks the schema exits 2 and names each field and what was expected', async () => {
    const file = await configFile([
      {
        name: 'orders',
        source: { uri: '/x', discover: { by: 'partition' } },
        target: { uri: '/y', mode: 'upsert' },
      },
    ]);
    const r = await cli(['run', '--config', file, '--json']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('jobs[0].source.discover.layout');
    expect(r.stderr).toMatch(/jobs\[0\]\.target\.mode: .*merge.*append/);
    // With --json, stdout holds one failure object for the scheduler (no job report).
    expect(JSON.parse(r.stdout)).toMatchObject({
      status: 'failed',
      exitCode: 2,
      retryable: false,
      error: { type: 'ConfigError' },
    });
  });

  it('a missing config file exits 2 naming the path', async () => {
    const r = await cli(['status', '--config', '/nonexistent/tidemark.yaml']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('/nonexistent/tidemark.yaml');
  });

  it('credentials in the config file are refused (exit 2): they come from the AWS default chain', async () => {
    const file = await configFile([mergeJob('orders', '/x', '/y')], { secretAccessKey: 'abc' });
    const r = await cli(['run', '--config', file]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('storage.secretAccessKey: credentials are not allowed');
    expect(r.stderr).not.toContain('abc');
  });

  it('--job naming no job of the config exits 2 and lists the jobs', async () => {
    const file = await configFile([mergeJob('orders', '/x', '/y')]);
    const r = await cli(['run', '--config', file, '--job', 'nope']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('no job named "nope"');
    expect(r.stderr).toContain('orders');
  });
});

describe('tidemark CLI: run and status', () => {
  it('run --json prints exactly one JSON object per job on stdout; status --json reports each job', async () => {
    const { root, landed } = await landingZone();
    const [t1, t2] = [await tempDir('cli-t', dirs), await tempDir('cli-t', dirs)];
    const file = await configFile([mergeJob('latest', root, t1), appendJob('events', root, t2)]);

    const r = await cli(['run', '--config', file, '--json']);
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    const reports = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(reports[0]).toMatchObject({
      job: 'latest',
      status: 'succeeded',
      filesLoaded: 2,
      rowsRead: 3,
      rowsAfterDedupe: 2,
      inserted: 2,
      tableVersion: 0,
      watermark: '2025-05-02',
    });
    expect(reports[1]).toMatchObject({
      job: 'events',
      status: 'succeeded',
      filesLoaded: 2,
      inserted: 3,
      tableVersion: 0,
    });
    for (const field of ['filesDiscovered', 'updated', 'deleted', 'skippedStale', 'durationMs'])
      expect(reports[0]).toHaveProperty(field);
    // Logs went to stderr, as JSON lines (stderr is not a terminal here).
    const logLines = r.stderr.trimEnd().split('\n');
    expect(logLines.length).toBeGreaterThan(0);
    for (const l of logLines) expect(() => JSON.parse(l)).not.toThrow();

    const status = await cli(['status', '--config', file, '--json', '--job', 'events']);
    expect(status.code).toBe(0);
    const statusLines = status.stdout.trimEnd().split('\n');
    expect(statusLines).toHaveLength(1);
    expect(JSON.parse(statusLines[0]!)).toMatchObject({
      job: 'events',
      discovery: 'partition',
      watermark: '2025-05-02',
      tableVersion: 0,
      rows: 3,
      files: 1,
    });
    expect(JSON.parse(statusLines[0]!).lastRunAt).toEqual(expect.any(String));

    const again = await cli(['run', '--config', file, '--json', '--job', 'events']);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({
      job: 'events',
      status: 'nothing-new',
      tableVersion: 0,
    });
    const events = await readTarget(session, makeConfig(appendJob('events', root, t2)));
    expect(events.rows).toEqual(sortRows(landed));
  });

  it('run --dry-run shows the plan and changes nothing', async () => {
    const { root } = await landingZone();
    const target = await tempDir('cli-t', dirs);
    const file = await configFile([mergeJob('orders', root, target)]);
    const r = await cli(['run', '--config', file, '--dry-run', '--json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      status: 'dry-run',
      plannedFiles: ['2025/05/01/a.csv', '2025/05/02/b.ndjson'],
      watermarkAfter: '2025-05-02',
      commits: 0,
      tableVersion: null,
    });
    expect(await fsp.readdir(target)).toEqual([]);

    const human = await cli(['run', '--config', file, '--dry-run']);
    expect(human.stdout).toContain('+ 2025/05/02/b.ndjson');
    expect(human.stdout).toContain('watermark after: 2025-05-02');
  });

  it('a run that fails on a bad file exits 1; the report and the log name the file', async () => {
    const { root } = await landingZone();
    await fsp.writeFile(path.join(root, '2025/05/02/broken.parquet'), 'this is not parquet');
    const target = await tempDir('cli-t', dirs);
    const file = await configFile([mergeJob('orders', root, target)]);
    const r = await cli(['run', '--config', file, '--json']);
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout) as {
      status: string;
      error: { type: string; message: string; context: Record<string, unknown> };
    };
    expect(report.status).toBe('failed');
    expect(report.error.type).toBe('BadFileError');
    expect(report.error.message).toContain('2025/05/02/broken.parquet');
    expect(r.stderr).toContain('2025/05/02/broken.parquet');
    expect((await cli(['run', '--config', file])).stdout).toMatch(
      /^orders: failed: .*broken\.parquet/,
    );
  });
});

describe('tidemark CLI: concurrent writers of one job', () => {
  /**
   * Hooks that, at the first commit of this run, let a whole second run of the same job commit
   * first: this run's commit then loses the race (fault injection: hook runs a rival run).
   */
  function rivalRunAtFirstCommit(job: ReturnType<typeof makeConfig>): RunContext['hooks'] {
    let done = false;
    return {
      async beforeCommit() {
        if (done) return;
        done = true;
        const rival = await runJob(job.job, {
          storage: job.storage,
          logger: silentLogger(),
          tty: false,
        });
        expect(rival.report.status).toBe('succeeded');
      },
    };
  }

  it.each([
    ['the table does not exist yet', false],
    ['the table exists', true],
  ])(
    'a run that loses the commit race re-plans on the winner commit and loads nothing twice (%s) (fault injection: hook runs a rival run)',
    async (_, existing) => {
      const { root, landed } = await landingZone();
      const target = await tempDir('cli-t', dirs);
      const jobConfig = appendJob('events', root, target, { maxFilesPerBatch: 1 });
      const file = await configFile([jobConfig]);
      const setup = makeConfig(jobConfig);
      if (existing) {
        expect((await cli(['run', '--config', file])).code).toBe(0);
        const more = orders([3, 'placed', 1]);
        await land(new LocalStorage(root), session, '2025/05/03/c.csv', more);
        landed.push(...more);
      }
      const r = await cli(['run', '--config', file, '--json'], {
        hooks: rivalRunAtFirstCommit(setup),
      });
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ status: 'nothing-new', commits: 0 });
      expect(r.stderr).toContain('another writer committed first');
      const table = await readTarget(session, setup);
      expect(duplicateRids(table.rows)).toEqual([]);
      expect(table.rows).toEqual(sortRows(landed));
      expect(table.state.totals.filesLoaded).toBe(existing ? 3 : 2);
    },
  );

  it('with no re-plans allowed, a lost commit race exits 3 and commits nothing of its own (fault injection: hook runs a rival run)', async () => {
    const { root, landed } = await landingZone();
    const target = await tempDir('cli-t', dirs);
    const jobConfig = appendJob('events', root, target);
    const file = await configFile([jobConfig]);
    const setup = makeConfig(jobConfig);
    const r = await cli(['run', '--config', file, '--json'], {
      hooks: rivalRunAtFirstCommit(setup),
      maxReplans: 0,
    });
    expect(r.code).toBe(3);
    const report = JSON.parse(r.stdout) as {
      status: string;
      error: { type: string; message: string };
    };
    expect(report).toMatchObject({
      status: 'failed',
      error: { type: 'CommitRetriesExhaustedError' },
    });
    expect(report.error.message).toContain('lost');
    const table = await readTarget(session, setup);
    expect(table.snapshot!.version).toBe(0); // the rival's commit only
    expect(table.rows).toEqual(sortRows(landed));
  });
});
