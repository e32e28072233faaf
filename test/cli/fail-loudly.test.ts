/**
 * Wrong setups fail loudly (SPEC §5: exit 0 "nothing new" never when the source is missing or
 * matches nothing the layout describes). Each case of the issue runs the CLI in process on real
 * folders, real DuckDB and, for S3, the embedded s3rver or a closed port on loopback, and asserts
 * the exit code and the message: what was expected and what was found.
 *
 * An unwritable target is made three ways, because tests may run as root, where file modes do
 * not stop writes: a target below a regular file (ENOTDIR; runs as anyone), an immutable folder
 * (`chattr +i`: EPERM even for root, where the file system supports it) and a folder of mode 0555
 * (EACCES; only when not root). EROFS needs a read-only mount, which a test cannot make; the
 * local driver maps it the same way as EACCES and EPERM.
 */
import { execFileSync } from 'node:child_process';
import { promises as fsp } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3RVER_CREDENTIALS } from '../../scripts/lib/embedded-s3.js';
import { startS3rver, type S3rverHandle } from '../helpers/s3rver.js';
import { cleanup, tempDir } from '../job/helpers.js';
import { cli } from '../helpers/cli.js';
import { configFile, isRoot, landCsv, mergeJob, reportOf } from './preflight-helpers.js';
import { runCli } from './process.js';

const dirs: string[] = [];
let s3: S3rverHandle;
const savedAws = Object.entries(process.env).filter(([k]) => k.startsWith('AWS_'));

/** Put the AWS_* variables back as they were before this file. */
function restoreAws(): void {
  for (const k of Object.keys(process.env)) if (k.startsWith('AWS_')) delete process.env[k];
  Object.assign(process.env, Object.fromEntries(savedAws));
}

beforeAll(async () => {
  s3 = await startS3rver();
});
afterAll(async () => {
  restoreAws();
  await s3?.stop();
  await cleanup(dirs);
});

/** A landing zone of daily folders 2026/11/29 and 2026/11/30, and a fresh target folder path. */
async function daily(): Promise<{ landing: string; target: string }> {
  const dir = await tempDir('loud', dirs);
  const landing = path.join(dir, 'landing');
  await landCsv(landing, ['2026/11/29/a.csv', '2026/11/30/b.csv', '2026/11/30/c.csv']);
  return { landing, target: path.join(dir, 'table') };
}

/** Hooks that record every batch that got as far as fetching: a pre-flight failure must leave it empty. */
function fetchSpy(): { fetched: number[]; hooks: { afterFetch(batch: number): void } } {
  const fetched: number[] = [];
  return { fetched, hooks: { afterFetch: (batch) => void fetched.push(batch) } };
}

describe('a missing or wrong source is a config error (exit 2), not "nothing new"', () => {
  it('the source folder does not exist: exit 2 naming the URI, what was found and a folder with a close name', async () => {
    const { landing, target } = await daily();
    const file = await configFile(dirs, {
      jobs: [mergeJob(path.join(path.dirname(landing), 'landin'), target)],
    });
    const r = await cli(['run', '--config', file, '--json']);
    expect(r.code).toBe(2);
    const report = reportOf(r);
    expect(report).toMatchObject({
      status: 'failed',
      filesLoaded: 0,
      commits: 0,
      error: { type: 'ConfigError' },
    });
    expect(report.error!.message).toBe(
      `[preflight] job orders: source file://${path.dirname(landing)}/landin/ does not exist: ` +
        `expected a folder of landed files, found no such folder ${path.dirname(landing)}/landin (did you mean ${landing}?)`,
    );
    expect(report.error!.context).toMatchObject({ field: 'source.uri', found: 'nothing' });
    const human = await cli(['run', '--config', file]);
    expect(human.code).toBe(2);
    expect(human.stdout).toMatch(
      /^orders: failed: \[preflight\] job orders: source .* does not exist/,
    );
  });

  it('the source is a file: exit 2, "expected a folder … found a file"', async () => {
    const { landing, target } = await daily();
    const file = await configFile(dirs, {
      jobs: [mergeJob(path.join(landing, '2026/11/30/b.csv'), target)],
    });
    const r = await cli(['run', '--config', file, '--json']);
    expect(r.code).toBe(2);
    expect(reportOf(r).error!.message).toMatch(
      new RegExp(
        `source file://.*/b\\.csv/ is not a folder: expected a folder of landed files, found a file at ${landing}/2026/11/30/b\\.csv$`,
      ),
    );
  });

  it('a layout that matches none of the folders (dt={yyyy}-{mm}-{dd} over 2026/11/30/): exit 2 naming the layout, the folders found and a hint', async () => {
    const { landing, target } = await daily();
    const spy = fetchSpy();
    const file = await configFile(dirs, {
      jobs: [mergeJob(landing, target, { by: 'partition', layout: 'dt={yyyy}-{mm}-{dd}' })],
    });
    const r = await cli(['run', '--config', file, '--json'], { hooks: spy.hooks });
    expect(r.code).toBe(2);
    const report = reportOf(r);
    expect(report.error!.message).toBe(
      `[preflight] job orders: source file://${landing}/: layout 'dt={yyyy}-{mm}-{dd}' matches no partition folder: ` +
        "it expects folders named like 'dt={yyyy}-{mm}-{dd}' at the source root, but found 1 folder (2026/); those look like '{yyyy}'",
    );
    expect(report.error!.context).toMatchObject({
      field: 'source.discover.layout',
      layout: 'dt={yyyy}-{mm}-{dd}',
      found: ['2026/'],
    });
    expect(spy.fetched).toEqual([]);
    // --dry-run fails the same way: its plan would be empty for the wrong reason.
    expect((await cli(['run', '--config', file, '--dry-run'])).code).toBe(2);
  });

  it('an hourly layout over daily folders: exit 2, "the folders stop at the day level", the daily layout suggested', async () => {
    const { landing, target } = await daily();
    const file = await configFile(dirs, {
      jobs: [mergeJob(landing, target, { by: 'partition', layout: '{yyyy}/{mm}/{dd}/{HH}' })],
    });
    const r = await cli(['run', '--config', file, '--json']);
    expect(r.code).toBe(2);
    expect(reportOf(r).error!.message).toBe(
      `[preflight] job orders: source file://${landing}/: layout '{yyyy}/{mm}/{dd}/{HH}' matches no partition folder: ` +
        "it expects folders named like '{HH}' in 2026/11/30/, but found 2 files and no folder (2026/11/30/b.csv, 2026/11/30/c.csv): " +
        "the folders stop at the day level; for daily folders use layout '{yyyy}/{mm}/{dd}'",
    );
  });

  it('an unexpanded ${VAR} in source.uri: exit 2 naming the variable and the field', async () => {
    const { target } = await daily();
    delete process.env['TIDEMARK_TEST_UNSET_LANDING'];
    const file = await configFile(dirs, {
      jobs: [mergeJob('${TIDEMARK_TEST_UNSET_LANDING}/orders', target)],
    });
    const r = await cli(['run', '--config', file]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      'jobs[0].source.uri: environment variable TIDEMARK_TEST_UNSET_LANDING is not set',
    );
    expect(r.stdout).toBe('');
  });

  it('backfill and reset check the source before anything else: exit 2', async () => {
    const { landing, target } = await daily();
    const missing = await configFile(dirs, {
      jobs: [mergeJob(path.join(landing, 'nope'), target)],
    });
    const backfill = await cli([
      'backfill',
      '--config',
      missing,
      '--from',
      '2026-11-29',
      '--to',
      '2026-11-30',
      '--json',
    ]);
    expect(backfill.code).toBe(2);
    expect(reportOf(backfill).error!.message).toMatch(/source .*\/nope\/ does not exist/);
    const hourly = await configFile(dirs, {
      jobs: [mergeJob(landing, target, { by: 'partition', layout: '{yyyy}/{mm}/{dd}/{HH}' })],
    });
    const reset = await cli([
      'reset',
      '--config',
      hourly,
      '--job',
      'orders',
      '--to',
      '2026-11-29T23',
      '--json',
    ]);
    expect(reset.code).toBe(2);
    expect(reportOf(reset).error!.message).toContain('the folders stop at the day level');
  });

  it('the real process: exit 2 and the message on stdout and in the JSON log on stderr', async () => {
    const { landing, target } = await daily();
    const file = await configFile(dirs, { jobs: [mergeJob(path.join(landing, 'nope'), target)] });
    const r = await runCli(['run', '--config', file]);
    expect(r.code).toBe(2);
    expect(r.stdout).toMatch(
      /^orders: failed: \[preflight\] job orders: source .*\/nope\/ does not exist/,
    );
    const logged = r.stderr
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as { msg: string; error?: { message: string } });
    expect(logged.find((l) => l.msg === 'run failed')?.error?.message).toContain(
      'found no such folder',
    );
  });
});

describe('"nothing new" stays exit 0 when the source is there', () => {
  it('an existing source that matches the layout, with nothing new: exit 0, status nothing-new', async () => {
    const { landing, target } = await daily();
    const file = await configFile(dirs, { jobs: [mergeJob(landing, target)] });
    expect(reportOf(await cli(['run', '--config', file, '--json']))).toMatchObject({
      status: 'succeeded',
      filesLoaded: 3,
    });
    const again = await cli(['run', '--config', file, '--json']);
    expect(again.code).toBe(0);
    expect(reportOf(again)).toMatchObject({
      status: 'nothing-new',
      filesLoaded: 0,
      watermark: '2026-11-30',
    });
  });

  it('an existing empty folder (a new landing zone): exit 0, and a warning in the log', async () => {
    const dir = await tempDir('loud', dirs);
    await fsp.mkdir(path.join(dir, 'landing'));
    const file = await configFile(dirs, {
      jobs: [mergeJob(path.join(dir, 'landing'), path.join(dir, 'table'))],
    });
    const r = await cli(['run', '--config', file, '--json']);
    expect(r.code).toBe(0);
    expect(reportOf(r)).toMatchObject({ status: 'nothing-new' });
    expect(r.stderr).toContain('the source holds nothing yet');
  });

  it('an empty S3 prefix in a reachable bucket is a new landing zone too: exit 0 with the warning', async () => {
    process.env['AWS_ACCESS_KEY_ID'] = S3RVER_CREDENTIALS.accessKeyId;
    process.env['AWS_SECRET_ACCESS_KEY'] = S3RVER_CREDENTIALS.secretAccessKey;
    const zone = s3.landingZone('empty');
    const file = await configFile(dirs, {
      storage: zone.storageConfig,
      jobs: [mergeJob(zone.uri, path.join(await tempDir('loud', dirs), 'table'))],
    });
    const r = await cli(['run', '--config', file, '--json']);
    expect(r.code).toBe(0);
    expect(reportOf(r)).toMatchObject({ status: 'nothing-new' });
    expect(r.stderr).toContain('the source holds nothing yet');
  });
});

describe('a target that cannot be written fails at the start, naming the real error', () => {
  it('a target below a regular file (runs as root too): exit 1 before anything is fetched', async () => {
    const { landing } = await daily();
    const dir = await tempDir('loud', dirs);
    await fsp.writeFile(path.join(dir, 'a-file'), 'not a folder');
    const spy = fetchSpy();
    const file = await configFile(dirs, {
      jobs: [mergeJob(landing, path.join(dir, 'a-file', 'table'))],
    });
    const r = await cli(['run', '--config', file, '--json'], { hooks: spy.hooks });
    expect(r.code).toBe(1);
    const report = reportOf(r);
    expect(report).toMatchObject({
      status: 'failed',
      filesLoaded: 0,
      commits: 0,
      error: { type: 'StorageError' },
    });
    expect(report.error!.message).toMatch(
      new RegExp(
        `^\\[preflight\\] job orders: target file://${dir}/a-file/table/ is not writable: \\[storage\\] cannot write "_tidemark/write-probe-[0-9a-f-]+" in .*: a parent path is a file`,
      ),
    );
    expect(spy.fetched).toEqual([]);
  });

  it('an immutable target folder (chattr +i: EPERM even for root): exit 1 naming EPERM and the path', async (ctx) => {
    const { landing } = await daily();
    const target = path.join(await tempDir('loud', dirs), 'table');
    await fsp.mkdir(target);
    if (!immutable(target)) ctx.skip(); // chattr missing, or a file system without the attribute
    try {
      const spy = fetchSpy();
      const file = await configFile(dirs, { jobs: [mergeJob(landing, target)] });
      const r = await cli(['run', '--config', file, '--json'], { hooks: spy.hooks });
      expect(r.code).toBe(1);
      expect(reportOf(r).error!.message).toMatch(
        new RegExp(
          `target file://${target}/ is not writable: \\[storage\\] write failed for .*: operation not permitted \\(EPERM\\) at ${target}/_tidemark`,
        ),
      );
      expect(spy.fetched).toEqual([]);
    } finally {
      execFileSync('chattr', ['-i', target]);
    }
  });

  it.skipIf(isRoot)(
    'a read-only target folder (mode 0555; skipped as root, where modes do not stop writes): exit 1 naming EACCES',
    async () => {
      const { landing } = await daily();
      const target = path.join(await tempDir('loud', dirs), 'table');
      await fsp.mkdir(target, { mode: 0o555 });
      try {
        const file = await configFile(dirs, { jobs: [mergeJob(landing, target)] });
        const r = await cli(['run', '--config', file, '--json']);
        expect(r.code).toBe(1);
        expect(reportOf(r).error!.message).toMatch(
          /is not writable: .*permission denied \(EACCES\) at .*\/table\/_tidemark/,
        );
      } finally {
        await fsp.chmod(target, 0o755);
      }
    },
  );

  it('a target store that ignores conditional writes (s3rver) without singleWriter: exit 2 before anything is fetched or uploaded', async () => {
    process.env['AWS_ACCESS_KEY_ID'] = S3RVER_CREDENTIALS.accessKeyId;
    process.env['AWS_SECRET_ACCESS_KEY'] = S3RVER_CREDENTIALS.secretAccessKey;
    const { landing } = await daily();
    const prefix = `lake-${Date.now()}/orders/`;
    const spy = fetchSpy();
    const file = await configFile(dirs, {
      storage: { ...s3.landingZone('unused').storageConfig, singleWriter: false },
      jobs: [mergeJob(landing, `s3://${s3.bucket}/${prefix}`)],
    });
    const r = await cli(['run', '--config', file, '--json'], { hooks: spy.hooks });
    expect(r.code).toBe(2);
    const report = reportOf(r);
    expect(report).toMatchObject({
      status: 'failed',
      commits: 0,
      error: { type: 'ConditionalWriteUnsupportedError' },
    });
    expect(report.error!.message).toMatch(
      /ignores conditional writes \(If-None-Match: \*\).*storage\.singleWriter: true/,
    );
    expect(spy.fetched).toEqual([]);
    // Only the probes' own objects were ever written: no data file, no commit.
    const left = (await s3.makeStorage(prefix).listAll({ prefix: '' })).objects.map((o) => o.key);
    expect(left.filter((k) => !k.startsWith('_tidemark/'))).toEqual([]);
  });

  it('--dry-run writes no probe: the target folder is not even created', async () => {
    const { landing, target } = await daily();
    const file = await configFile(dirs, { jobs: [mergeJob(landing, target)] });
    expect((await cli(['run', '--config', file, '--dry-run'])).code).toBe(0);
    await expect(fsp.stat(target)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('a run leaves no probe object behind', async () => {
    const { landing, target } = await daily();
    const file = await configFile(dirs, { jobs: [mergeJob(landing, target)] });
    expect((await cli(['run', '--config', file])).code).toBe(0);
    const entries = await fsp.readdir(target);
    expect(entries).toContain('_delta_log');
    // The probe's object goes; `_tidemark/` holds only the job's ledger of loaded files.
    expect(await fsp.readdir(path.join(target, '_tidemark'))).toEqual(['ledger']);
  });
});

describe('S3 errors that say where and why', () => {
  it('an S3 source on a closed port: exit 4 (retry later), naming the endpoint URL and the bucket', async () => {
    process.env['AWS_ACCESS_KEY_ID'] = S3RVER_CREDENTIALS.accessKeyId;
    process.env['AWS_SECRET_ACCESS_KEY'] = S3RVER_CREDENTIALS.secretAccessKey;
    const endpoint = `http://127.0.0.1:${await closedPort()}`;
    const file = await configFile(dirs, {
      storage: { endpoint, region: 'us-east-1', forcePathStyle: true },
      jobs: [mergeJob('s3://nowhere/landing/', path.join(await tempDir('loud', dirs), 'table'))],
    });
    const r = await cli(['run', '--config', file, '--json']);
    expect(r.code).toBe(4);
    const message = reportOf(r).error!.message;
    expect(message).toContain(`s3://nowhere/landing/ (endpoint ${endpoint})`);
    expect(message).toContain('ECONNREFUSED');
  });

  it('status of a table on a closed port: exit 4, and its text says it failed rather than "last run: never, 0 rows"', async () => {
    process.env['AWS_ACCESS_KEY_ID'] = S3RVER_CREDENTIALS.accessKeyId;
    process.env['AWS_SECRET_ACCESS_KEY'] = S3RVER_CREDENTIALS.secretAccessKey;
    const endpoint = `http://127.0.0.1:${await closedPort()}`;
    const file = await configFile(dirs, {
      storage: { endpoint, region: 'us-east-1', forcePathStyle: true, maxAttempts: 1 },
      jobs: [mergeJob('s3://nowhere/landing/', 's3://nowhere/lake/orders')],
    });
    const r = await cli(['status', '--config', file]);
    expect(r.code).toBe(4);
    expect(r.stdout).toMatch(/^orders: status failed: .*ECONNREFUSED/);
    expect(r.stdout).not.toContain('never');
  });

  it("missing credentials keep the SDK's explanation", async () => {
    for (const k of Object.keys(process.env))
      if (
        /^AWS_(ACCESS_KEY_ID|SECRET_ACCESS_KEY|SESSION_TOKEN|PROFILE|CONTAINER_|WEB_IDENTITY|ROLE_)/.test(
          k,
        )
      )
        delete process.env[k];
    Object.assign(process.env, {
      AWS_CONFIG_FILE: '/nonexistent/config',
      AWS_SHARED_CREDENTIALS_FILE: '/nonexistent/credentials',
      AWS_EC2_METADATA_DISABLED: 'true',
    });
    try {
      const file = await configFile(dirs, {
        storage: { endpoint: s3.endpoint, region: s3.region, forcePathStyle: true },
        jobs: [
          mergeJob(`s3://${s3.bucket}/landing/`, path.join(await tempDir('loud', dirs), 'table')),
        ],
      });
      const r = await cli(['run', '--config', file, '--json']);
      expect(r.code).toBe(1);
      expect(reportOf(r).error!.message).toMatch(
        /S3 list failed for "" in s3:\/\/tidemark-test\/landing\/: CredentialsProviderError: Could not load credentials from any providers \(credentials come from the AWS default chain/,
      );
    } finally {
      restoreAws();
    }
  });
});

/** Make `dir` immutable with chattr +i and prove a write in it fails; false when that is not possible here. */
function immutable(dir: string): boolean {
  try {
    execFileSync('chattr', ['+i', dir], { stdio: 'ignore' });
  } catch {
    return false;
  }
  try {
    execFileSync('touch', [path.join(dir, 'probe')], { stdio: 'ignore' });
    execFileSync('chattr', ['-i', dir]);
    return false; // the attribute did not stop the write
  } catch {
    return true;
  }
}

/** A TCP port with nothing listening. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
