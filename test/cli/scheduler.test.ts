/**
 * What a scheduler sees of the real `tidemark` process: SIGINT mid-run exits 130 with a JSON
 * report saying it was interrupted, removes the spool, and the rerun loads the rest exactly once;
 * a config error with --json is one JSON object on stdout (exit 2); every log line and report
 * carries the invocation's runId and an ISO time; --version is tidemark's own, whatever folder
 * it runs in.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalStorage } from '../../src/storage/local.js';
import { cleanup, DuckSession, land, orders, tempDir } from '../job/helpers.js';
import { runCli, spawnCli } from './process.js';

let session: DuckSession;
const dirs: string[] = [];
const FILES = 12;

beforeAll(async () => {
  session = await DuckSession.open();
});

afterAll(async () => {
  session?.close();
  await cleanup(dirs);
});

type Json = Record<string, unknown>;

describe('tidemark under a scheduler', () => {
  it('SIGINT mid-run: exit 130, a JSON report saying interrupted, no spool left; the rerun loads the rest once', async () => {
    const root = await tempDir('sig-src', dirs);
    const source = new LocalStorage(root);
    for (let i = 1; i <= FILES; i++)
      await land(
        source,
        session,
        `2025/06/${String(i).padStart(2, '0')}/f.csv`,
        orders([i, 'placed', 1]),
      );
    const job = {
      name: 'feed',
      source: { uri: root, discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}' } },
      target: { uri: await tempDir('sig-t', dirs), key: ['order_id'], orderBy: 'seq' },
      maxFilesPerBatch: 1,
    };
    const config = path.join(await tempDir('sig-cfg', dirs), 'tidemark.yaml');
    await fsp.writeFile(config, JSON.stringify({ jobs: [job] }));
    const tmp = await tempDir('sig-tmp', dirs);

    const proc = spawnCli(['run', '--config', config, '--json'], { TMPDIR: tmp });
    let stderr = '';
    await new Promise<void>((resolve) => {
      proc.child.stderr!.on('data', (c: Buffer) => {
        stderr += c.toString('utf8');
        if (stderr.includes('"batch committed"')) resolve();
      });
    });
    proc.child.kill('SIGINT');
    const exit = await proc.done;

    expect(exit.code, exit.stderr).toBe(130);
    const report = JSON.parse(exit.stdout) as Json & { error: Json };
    expect(report).toMatchObject({
      job: 'feed',
      status: 'failed',
      error: { type: 'Interrupted', retryable: true },
    });
    expect(report['filesLoaded']).toBeGreaterThanOrEqual(1);
    expect(report['filesLoaded']).toBeLessThan(FILES);
    // (only the run's own folders: other tools keep caches in TMPDIR too)
    expect((await fsp.readdir(tmp)).filter((n) => n.startsWith('tidemark-'))).toEqual([]);

    const rerun = await runCli(['run', '--config', config, '--json'], { TMPDIR: tmp });
    expect(rerun.code, rerun.stderr).toBe(0);
    const second = JSON.parse(rerun.stdout) as Json;
    expect(Number(report['filesLoaded']) + Number(second['filesLoaded'])).toBe(FILES);
    expect(second['rowsRead']).toBe(FILES - Number(report['filesLoaded']));
  });

  it('--json: a config error is one JSON object on stdout (exit 2); runId and ISO time in every log line and the report', async () => {
    const root = await tempDir('rid-src', dirs);
    await land(new LocalStorage(root), session, '2025/06/01/a.csv', orders([1, 'placed', 1]));
    const config = path.join(await tempDir('rid-cfg', dirs), 'tidemark.yaml');
    await fsp.writeFile(
      config,
      JSON.stringify({
        jobs: [
          {
            name: 'a',
            source: { uri: root, discover: { by: 'modified' } },
            target: { uri: await tempDir('rid-t', dirs), mode: 'append' },
          },
        ],
      }),
    );
    const [missing, usage, run] = await Promise.all([
      runCli(['run', '--config', '/nonexistent/tidemark.yaml', '--json']),
      runCli(['run', '--frobnicate', '--json']),
      runCli(['run', '--config', config, '--json', '--log-level', 'debug']),
    ]);

    expect(missing.code).toBe(2);
    const failure = JSON.parse(missing.stdout) as Json & { error: Json };
    expect(failure).toMatchObject({
      status: 'failed',
      exitCode: 2,
      retryable: false,
      error: { type: 'ConfigError' },
    });
    expect(String(failure.error['message'])).toContain('/nonexistent/tidemark.yaml');
    expect(failure['runId']).toMatch(/^[0-9a-f-]{36}$/);

    expect(usage.code).toBe(2);
    expect(JSON.parse(usage.stdout)).toMatchObject({
      status: 'failed',
      exitCode: 2,
      error: { type: 'CommanderError' },
    });

    expect(run.code, run.stderr).toBe(0);
    const runId = (JSON.parse(run.stdout) as Json)['runId'];
    expect(runId).toMatch(/^[0-9a-f-]{36}$/);
    const lines = run.stderr
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Json);
    expect(lines.length).toBeGreaterThan(2);
    for (const l of lines) {
      expect(l['runId']).toBe(runId);
      expect(l['time']).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
  });

  it("--version prints tidemark's own version, not the working directory's package.json", async () => {
    const dir = await tempDir('ver', dirs);
    await fsp.writeFile(
      path.join(dir, 'package.json'),
      JSON.stringify({ name: 'other', version: '9.9.9' }),
    );
    const own = (
      JSON.parse(await fsp.readFile(new URL('../../package.json', import.meta.url), 'utf8')) as {
        version: string;
      }
    ).version;
    const r = await runCli(['--version'], { npm_package_version: '9.9.9' }, dir);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe(own);
  });
});
