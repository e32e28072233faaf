/**
 * The real `tidemark` process (src/cli/bin.ts, compiled once per test run: ./process.ts), stdout and stderr piped as under a
 * scheduler: exit codes, and `--json` output that is exactly one JSON object per job on
 * stdout while the logs go to stderr as JSON lines.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalStorage } from '../../src/storage/local.js';
import { cleanup, DuckSession, land, makeConfig, orders, run, tempDir } from '../job/helpers.js';
import { runCli, spawnCli } from './process.js';

let session: DuckSession;
const dirs: string[] = [];

beforeAll(async () => {
  session = await DuckSession.open();
});

afterAll(async () => {
  session?.close();
  await cleanup(dirs);
});

async function configWith(jobs: unknown[]): Promise<string> {
  const file = path.join(await tempDir('bin-cfg', dirs), 'tidemark.yaml');
  await fsp.writeFile(file, JSON.stringify({ jobs }));
  return file;
}

describe('the tidemark binary', () => {
  it('run --json: one JSON object per job on stdout and nothing else; JSON log lines on stderr; exit 0', async () => {
    const root = await tempDir('bin-src', dirs);
    const source = new LocalStorage(root);
    await land(source, session, '2025/07/01/a.parquet', orders([1, 'placed', 1], [2, 'placed', 1]));
    await land(source, session, '2025/07/02/b.csv', orders([1, 'paid', 2]));
    const byDay = { by: 'partition', layout: '{yyyy}/{mm}/{dd}' };
    const config = await configWith([
      {
        name: 'latest',
        source: { uri: root, discover: byDay },
        target: { uri: await tempDir('bin-t', dirs), key: ['order_id'], orderBy: 'seq' },
        maxFilesPerBatch: 1,
      },
      {
        name: 'events',
        source: { uri: root, discover: { by: 'modified' } },
        target: { uri: await tempDir('bin-t', dirs), mode: 'append' },
      },
    ]);
    const [run, status, help, usage] = await Promise.all([
      runCli(['run', '--config', config, '--json']),
      // (status races the run: whatever version it sees, it prints one object per job)
      runCli(['status', '--config', config, '--json']),
      runCli(['run', '--help']),
      runCli(['frobnicate']),
    ]);

    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout.split('\n');
    expect(lines.at(-1)).toBe('');
    const reports = lines.slice(0, -1).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(reports.map((r) => [r['job'], r['status'], r['filesLoaded']])).toEqual([
      ['latest', 'succeeded', 2],
      ['events', 'succeeded', 2],
    ]);
    const logs = run.stderr.split('\n').filter((l) => l !== '');
    expect(logs.length).toBeGreaterThan(0);
    for (const l of logs) expect(JSON.parse(l)).toHaveProperty('msg');
    expect(logs.some((l) => (JSON.parse(l) as { msg: string }).msg === 'batch committed')).toBe(
      true,
    );

    expect(status.code, status.stderr).toBe(0);
    expect(
      status.stdout
        .trimEnd()
        .split('\n')
        .map((l) => (JSON.parse(l) as { job: string }).job),
    ).toEqual(['latest', 'events']);

    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: tidemark run');
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("unknown command 'frobnicate'");
    expect(usage.stdout).toBe('');
  });

  it('a run that fails exits 1, names the file on stdout (--json) and stderr; a bad config exits 2 naming the field', async () => {
    const root = await tempDir('bin-src', dirs);
    await fsp.mkdir(path.join(root, 'in'), { recursive: true });
    await fsp.writeFile(
      path.join(root, 'in', 'bad.ndjson'),
      '{"order_id": 1, "status": "placed"\n',
    );
    const failing = await configWith([
      {
        name: 'feed',
        source: { uri: root, discover: { by: 'modified' } },
        target: { uri: await tempDir('bin-t', dirs), mode: 'append' },
      },
    ]);
    const badConfig = await configWith([
      {
        name: 'feed',
        source: { uri: root, discover: { by: 'modified', settle: 'soon' } },
        target: { uri: '/x', mode: 'append' },
      },
    ]);
    const [failed, invalid] = await Promise.all([
      runCli(['run', '--config', failing, '--json']),
      runCli(['run', '--config', badConfig]),
    ]);

    expect(failed.code, failed.stderr).toBe(1);
    const report = JSON.parse(failed.stdout) as { status: string; error: { message: string } };
    expect(report.status).toBe('failed');
    expect(report.error.message).toContain('in/bad.ndjson');
    expect(failed.stderr).toContain('in/bad.ndjson');

    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toContain('jobs[0].source.discover.settle: expected a duration');
    expect(invalid.stdout).toBe('');
  });

  it('run --allow-large-delete lets one snapshot through that source.maxDeleteShare refused (exit 1, nothing committed); the next refusal stands', async () => {
    const root = await tempDir('bin-src', dirs);
    const source = new LocalStorage(root);
    const tableDir = await tempDir('bin-t', dirs);
    const snapshotJob = {
      name: 'extract',
      source: {
        uri: root,
        discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 3 },
        snapshot: true,
      },
      target: { uri: tableDir, key: ['order_id'], orderBy: 'seq' },
    };
    const config = await configWith([snapshotJob]);
    await land(
      source,
      session,
      '2025/03/01/part-0.csv',
      orders([1, 'placed', 1], [2, 'placed', 1], [3, 'placed', 1]),
    );
    // The first extract loads in-process (a plain run); the process runs are the ones the flag concerns.
    expect(await run(makeConfig(snapshotJob))).toMatchObject({
      status: 'succeeded',
      tableVersion: 0,
    });
    // A cut-off extract: 2 of 3 keys would go (67 % > 50 %).
    await land(source, session, '2025/03/02/part-0.csv', orders([1, 'placed', 1]));
    const refused = await runCli(['run', '--config', config, '--json']);
    expect(refused.code, refused.stderr).toBe(1);
    expect(JSON.parse(refused.stdout)).toMatchObject({
      job: 'extract',
      status: 'failed',
      tableVersion: 0,
      error: { type: 'SnapshotDeleteRefusedError' },
    });
    expect(JSON.parse(refused.stdout).error.message).toMatch(
      /would delete 2 of the 3 keys .*--allow-large-delete/,
    );
    const allowed = await runCli(['run', '--config', config, '--json', '--allow-large-delete']);
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(JSON.parse(allowed.stdout)).toMatchObject({
      job: 'extract',
      status: 'succeeded',
      deleted: 2,
      tableVersion: 1,
    });
    // The flag was for that run only: the next cut-off extract is refused again.
    await land(source, session, '2025/03/03/part-0.csv', orders([4, 'placed', 1]));
    const again = await runCli(['run', '--config', config, '--json']);
    expect(again.code, again.stderr).toBe(1);
    expect(JSON.parse(again.stdout)).toMatchObject({
      status: 'failed',
      error: { type: 'SnapshotDeleteRefusedError' },
    });
  });

  it('SIGTERM while the process is still starting (the CLI not loaded yet) exits 130 with the --json failure object, not 143 and nothing', async () => {
    const root = await tempDir('bin-src', dirs);
    await land(new LocalStorage(root), session, 'in/a.csv', orders([1, 'placed', 1]));
    const config = await configWith([
      {
        name: 'feed',
        source: { uri: root, discover: { by: 'modified' } },
        target: { uri: await tempDir('bin-t', dirs), mode: 'append' },
      },
    ]);
    // Starting takes most of `--version`'s time (loading the AWS SDK and DuckDB); the signal comes
    // halfway through it, long before any job could run. `--version` runs twice: the first start
    // of a process after a fresh clone or boot reads its modules from disk, and would put "halfway" after the CLI is loaded.
    // Timing on a shared machine still varies, so the window is searched: a signal so early that
    // Node had not started tidemark (killed by it) comes later next time; one so late that the job
    // had started (its own report, also exit 130) comes earlier.
    await runCli(['--version']);
    const { ms: startup } = await runCli(['--version']);
    let [early, late] = [0, startup];
    let delay = startup * 0.5;
    for (let attempt = 1; ; attempt++) {
      const proc = spawnCli(['run', '--config', config, '--json']);
      const timer = setTimeout(() => proc.child.kill('SIGTERM'), delay);
      const exit = await proc.done;
      clearTimeout(timer);
      const what = `signal after ${Math.round(delay)} of ${startup} ms, attempt ${attempt}`;
      if (exit.signal === 'SIGTERM' && attempt < 6) {
        [early, delay] = [delay, (delay + late) / 2];
        continue;
      }
      expect(exit.signal, what).toBeNull();
      expect(exit.code, exit.stderr).toBe(130);
      expect(exit.stderr).toContain('SIGTERM received');
      const report = JSON.parse(exit.stdout.trimEnd().split('\n').at(-1)!) as Record<
        string,
        unknown
      >;
      if ('job' in report && attempt < 6) {
        // The job had started: it reports itself interrupted; try earlier.
        expect(report, what).toMatchObject({
          job: 'feed',
          status: 'failed',
          error: { type: 'Interrupted' },
        });
        [late, delay] = [delay, (early + delay) / 2];
        continue;
      }
      // One failure object: no job had started.
      expect(exit.stdout.trimEnd().split('\n'), what).toHaveLength(1);
      expect(report, what).toEqual({
        runId: expect.any(String),
        status: 'failed',
        exitCode: 130,
        retryable: true,
        error: {
          type: 'Interrupted',
          message: expect.stringContaining('interrupted by SIGTERM'),
          retryable: true,
        },
      });
      return;
    }
  }, 60_000);
});
