/**
 * `tidemark validate`: every problem of a config at once (config, discovery, source, target,
 * conditional writes, deleteWhen), one report per job, and the exit code of the worst kind
 * (2 config, 1 other, 4 a store that did not answer). Real folders, real DuckDB, the embedded
 * s3rver (which ignores conditional writes) and a closed port on loopback.
 */
import { randomUUID } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3RVER_CREDENTIALS } from '../../scripts/lib/embedded-s3.js';
import { startS3rver, type S3rverHandle } from '../helpers/s3rver.js';
import { cleanup, tempDir } from '../job/helpers.js';
import { cli, type CliResult } from '../helpers/cli.js';
import { configFile, landCsv, mergeJob, reportOf } from './preflight-helpers.js';

const dirs: string[] = [];
let s3: S3rverHandle;
const savedAws = Object.entries(process.env).filter(([k]) => k.startsWith('AWS_'));

beforeAll(async () => {
  process.env['AWS_ACCESS_KEY_ID'] = S3RVER_CREDENTIALS.accessKeyId;
  process.env['AWS_SECRET_ACCESS_KEY'] = S3RVER_CREDENTIALS.secretAccessKey;
  s3 = await startS3rver();
});
afterAll(async () => {
  for (const k of Object.keys(process.env)) if (k.startsWith('AWS_')) delete process.env[k];
  Object.assign(process.env, Object.fromEntries(savedAws));
  await s3?.stop();
  await cleanup(dirs);
});

interface Shown {
  job: string | null;
  status: 'ok' | 'problems';
  problems: Array<{ check: string; field?: string; message: string }>;
  warnings: Array<{ check: string; field?: string; message: string }>;
}

const reports = (r: CliResult): Shown[] =>
  r.stdout
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l) as Shown);

async function landing(): Promise<{ dir: string; landing: string }> {
  const dir = await tempDir('validate', dirs);
  const landing = path.join(dir, 'landing');
  await landCsv(landing, ['2026/11/29/a.csv', '2026/11/30/b.csv']);
  return { dir, landing };
}

describe('tidemark validate on local folders', () => {
  it('reports every mistake of a config in one run: unknown field, time zone, layout token, deleteWhen, missing source, unwritable target (exit 2)', async () => {
    const { dir, landing: good } = await landing();
    await fsp.writeFile(path.join(dir, 'a-file'), 'not a folder');
    const orders = {
      ...mergeJob(
        './landin',
        './a-file/table',
        { by: 'partition', layout: '{yyyy}/{mm}/{dd}', timezone: 'Europe/Pariss' },
        { deleteWhen: "Op = 'D' AND" },
      ),
      maxFilesPerBath: 10,
    };
    const clicks = {
      name: 'clicks',
      source: { uri: good, discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}/{hh}' } },
      target: { uri: './clicks', mode: 'append' },
    };
    const file = path.join(dir, 'tidemark.yaml');
    await fsp.writeFile(file, JSON.stringify({ jobs: [orders, clicks] }));

    const r = await cli(['validate', '--config', file, '--json']);
    expect(r.code).toBe(2);
    const [o, c] = reports(r);
    expect(o!.job).toBe('orders');
    expect(o!.status).toBe('problems');
    const byCheck = Object.fromEntries(o!.problems.map((p) => [p.field, p]));
    expect(byCheck['jobs[0].maxFilesPerBath']).toEqual({
      check: 'config',
      field: 'jobs[0].maxFilesPerBath',
      message: 'jobs[0].maxFilesPerBath: unknown field; did you mean maxFilesPerBatch?',
    });
    expect(byCheck['jobs[0].source.discover.timezone']).toMatchObject({
      check: 'discovery',
      message: expect.stringContaining('unknown time zone "Europe/Pariss"'),
    });
    expect(byCheck['jobs[0].source.uri']).toMatchObject({
      check: 'source',
      message: `[preflight] job orders: source file://${dir}/landin/ does not exist: expected a folder of landed files, found no such folder ${dir}/landin (did you mean ${dir}/landing?)`,
    });
    expect(byCheck['jobs[0].target.uri']).toMatchObject({
      check: 'target',
      message: expect.stringMatching(
        /target file:\/\/.*\/a-file\/table\/ is not writable: .*a parent path is a file/,
      ),
    });
    expect(byCheck['jobs[0].target.deleteWhen']).toMatchObject({
      check: 'deleteWhen',
      message: expect.stringContaining(
        `invalid deleteWhen expression "Op = 'D' AND": syntax error`,
      ),
    });
    expect(o!.problems).toHaveLength(5);
    // The time zone is wrong, so the layout could not be checked against the folders: said, not hidden.
    expect(o!.warnings).toEqual([
      {
        check: 'source',
        field: 'jobs[0].source.uri',
        message: 'the layout was not checked: fix source.discover first',
      },
    ]);
    expect(c).toMatchObject({
      job: 'clicks',
      status: 'problems',
      problems: [
        {
          check: 'discovery',
          field: 'jobs[1].source.discover.layout',
          message: expect.stringContaining('unknown placeholder {hh}'),
        },
      ],
    });

    const human = await cli(['validate', '--config', file]);
    expect(human.code).toBe(2);
    expect(human.stdout).toMatch(
      /^orders: 5 problems\n {2}discovery {2}jobs\[0\]\.source\.discover\.timezone: unknown time zone/,
    );
    expect(human.stdout).toContain('\nclicks: 1 problem\n');
  });

  it('before the first run, reads a sample of its first batch: a text key is a warning, an orderBy compared as text a problem (exit 2), as the run would say', async () => {
    const dir = await tempDir('validate-types', dirs);
    const source = path.join(dir, 'landing');
    await fsp.mkdir(path.join(source, '2026', '11', '30'), { recursive: true });
    await fsp.writeFile(
      path.join(source, '2026', '11', '30', 'a.csv'),
      'order_id,status,seq\nA-1,placed,v1\nA-2,placed,v2\n',
    );
    const file = await configFile(dirs, { jobs: [mergeJob(source, path.join(dir, 'table'))] });
    const r = await cli(['validate', '--config', file, '--json']);
    expect(r.code).toBe(2);
    const [o] = reports(r);
    expect(o!.problems).toEqual([
      {
        check: 'source',
        field: 'jobs[0].target.orderBy',
        message: expect.stringMatching(
          /^the first run would fail: .*orderBy column "seq" would be compared as text .*\(read 1 of the 1 files the first run loads first\)$/,
        ),
      },
    ]);
    expect(await fsp.readdir(path.join(dir, 'table'))).toEqual([]);

    // With a numeric version, the text key is what the run would warn about.
    await fsp.writeFile(
      path.join(source, '2026', '11', '30', 'a.csv'),
      'order_id,status,seq\nA-1,placed,1\nA-2,placed,2\n',
    );
    const warned = await cli(['validate', '--config', file, '--json']);
    expect(warned.code).toBe(0);
    expect(reports(warned)[0]!.warnings).toEqual([
      {
        check: 'source',
        field: 'jobs[0].source.columns',
        message: expect.stringMatching(
          /^the first run would warn: key column "order_id" is inferred as text \(VARCHAR\)/,
        ),
      },
    ]);

    // Declared: what the user means, nothing to say.
    const declared = await configFile(dirs, {
      jobs: [
        {
          ...mergeJob(source, path.join(dir, 'table')),
          source: {
            uri: source,
            discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}' },
            columns: { order_id: 'string', seq: 'string' },
          },
        },
      ],
    });
    const ok = await cli(['validate', '--config', declared, '--json']);
    expect(reports(ok)).toEqual([{ job: 'orders', status: 'ok', problems: [], warnings: [] }]);
    expect(ok.code).toBe(0);
  });

  it('a good config: exit 0, status ok for every job, and no probe object left behind', async () => {
    const { dir, landing: source } = await landing();
    const file = await configFile(dirs, {
      jobs: [
        mergeJob(source, path.join(dir, 'table')),
        { ...mergeJob(source, path.join(dir, 't2')), name: 'copy' },
      ],
    });
    const r = await cli(['validate', '--config', file, '--json']);
    expect(r.code).toBe(0);
    expect(reports(r)).toEqual([
      { job: 'orders', status: 'ok', problems: [], warnings: [] },
      { job: 'copy', status: 'ok', problems: [], warnings: [] },
    ]);
    expect(await fsp.readdir(path.join(dir, 'table'))).toEqual([]);
    const human = await cli(['validate', '--config', file, '--job', 'copy']);
    expect(human).toMatchObject({ code: 0, stdout: 'copy: ok\n' });
  });

  it('the layout checked against the folders: an hourly layout over daily folders (exit 2)', async () => {
    const { dir, landing: source } = await landing();
    const file = await configFile(dirs, {
      jobs: [
        mergeJob(source, path.join(dir, 'table'), {
          by: 'partition',
          layout: '{yyyy}/{mm}/{dd}/{HH}',
        }),
      ],
    });
    const r = await cli(['validate', '--config', file, '--json']);
    expect(r.code).toBe(2);
    expect(reports(r)[0]!.problems).toEqual([
      {
        check: 'source',
        field: 'jobs[0].source.discover.layout',
        message: expect.stringContaining(
          "the folders stop at the day level; for daily folders use layout '{yyyy}/{mm}/{dd}'",
        ),
      },
    ]);
  });

  it('deleteWhen is checked against the columns of an existing table, with "did you mean"', async () => {
    const { dir, landing: source } = await landing();
    const target = path.join(dir, 'table');
    const loaded = await configFile(dirs, { jobs: [mergeJob(source, target)] });
    expect((await cli(['run', '--config', loaded])).code).toBe(0);
    const file = await configFile(dirs, {
      jobs: [
        mergeJob(source, target, undefined, {
          deleteWhen: "stauts = 'cancelled' OR list_any(list_filter([seq], s -> s < 0))",
        }),
      ],
    });
    const r = await cli(['validate', '--config', file, '--json']);
    expect(r.code).toBe(2);
    // The lambda's parameter `s` is not a column reference.
    expect(reports(r)[0]!.problems).toEqual([
      {
        check: 'deleteWhen',
        field: 'jobs[0].target.deleteWhen',
        message: `deleteWhen "stauts = 'cancelled' OR list_any(list_filter([seq], s -> s < 0))" names column "stauts", which the target table does not have; did you mean status? (its columns: order_id, status, seq, rid, _source_file, _source_modified)`,
      },
    ]);
  });

  it('settings for a new table held against the existing one: columnMapping a problem (exit 2), partitionBy and changeDataFeed warnings; a run fails before loading', async () => {
    const { dir, landing: source } = await landing();
    const target = path.join(dir, 'table');
    expect(
      (await cli(['run', '--config', await configFile(dirs, { jobs: [mergeJob(source, target)] })]))
        .code,
    ).toBe(0);
    await landCsv(source, ['2026/12/01/c.csv']);
    const file = await configFile(dirs, {
      jobs: [
        mergeJob(source, target, undefined, {
          columnMapping: 'name',
          partitionBy: ['status'],
          changeDataFeed: true,
        }),
      ],
    });
    const r = await cli(['validate', '--config', file, '--json']);
    expect(r.code).toBe(2);
    const [shown] = reports(r);
    expect(shown!.problems).toEqual([
      {
        check: 'target',
        field: 'jobs[0].target.columnMapping',
        message:
          "jobs[0].target.columnMapping is 'name', but the table has column mapping mode 'none': tidemark never changes a table's mode (remove the setting or make it 'none')",
      },
    ]);
    expect(shown!.warnings.map((w) => w.field)).toEqual([
      'jobs[0].target.partitionBy',
      'jobs[0].target.changeDataFeed',
    ]);
    expect(shown!.warnings[0]!.message).toContain('but the table is not partitioned');

    // The run refuses at once: exit 2, nothing downloaded or loaded, the table as it was.
    const run = await cli(['run', '--config', file, '--json']);
    expect(run.code).toBe(2);
    expect(reportOf(run)).toMatchObject({
      status: 'failed',
      filesLoaded: 0,
      commits: 0,
      tableVersion: 0,
      error: { type: 'ConfigError', context: { field: 'target.columnMapping' } },
    });
    expect(reportOf(run).error!.message).toContain("but the table has column mapping mode 'none'");
  });

  it("a key, orderBy or deleteWhen column the existing table lacks: validate names it and the table's columns, a run and a backfill refuse before loading (exit 2)", async () => {
    const { dir, landing: source } = await landing();
    const target = path.join(dir, 'table');
    expect(
      (await cli(['run', '--config', await configFile(dirs, { jobs: [mergeJob(source, target)] })]))
        .code,
    ).toBe(0);
    // A new day whose file carries an op column, as a CDC feed's would: only the config is at fault.
    await fsp.mkdir(path.join(source, '2026/12/01'), { recursive: true });
    await fsp.writeFile(
      path.join(source, '2026/12/01/c.csv'),
      'order_id,order_no,status,seq,version,rid,op\n1,1,paid,5,5,c-1,U\n',
    );
    const columns = 'order_id, status, seq, rid, _source_file, _source_modified';
    const cases = [
      {
        settings: { key: ['order_no'] },
        field: 'target.key',
        message: `names key column "order_no", which the table does not have (its columns: ${columns})`,
      },
      {
        settings: { orderBy: 'version' },
        field: 'target.orderBy',
        message: `names orderBy column "version", which the table does not have (its columns: ${columns})`,
      },
      {
        settings: { deleteWhen: "op = 'D'" },
        field: 'target.deleteWhen',
        message: `deleteWhen "op = 'D'" names column "op", which the target table does not have (its columns: ${columns})`,
      },
    ];
    for (const c of cases) {
      const file = await configFile(dirs, {
        jobs: [mergeJob(source, target, undefined, c.settings)],
      });
      const v = await cli(['validate', '--config', file, '--json']);
      expect(v.code).toBe(2);
      expect(reports(v)[0]!.problems).toEqual([
        {
          check: c.field === 'target.deleteWhen' ? 'deleteWhen' : 'target',
          field: `jobs[0].${c.field}`,
          message: expect.stringContaining(c.message),
        },
      ]);

      const run = await cli(['run', '--config', file, '--json']);
      expect(run.code).toBe(2);
      expect(reportOf(run)).toMatchObject({
        status: 'failed',
        filesLoaded: 0,
        commits: 0,
        tableVersion: 0,
        error: { type: 'ConfigError', context: { field: c.field } },
      });
      expect(reportOf(run).error!.message).toContain(c.message);
      const backfill = await cli([
        'backfill',
        '--config',
        file,
        '--from',
        '2026-11-29',
        '--to',
        '2026-12-01',
        '--json',
      ]);
      expect(backfill.code).toBe(2);
      expect(reportOf(backfill).error!.message).toContain(c.message);
    }
    // Nothing was committed: the table is still the first run's version 0, its columns unchanged.
    const status = await cli([
      'status',
      '--config',
      await configFile(dirs, { jobs: [mergeJob(source, target)] }),
      '--json',
    ]);
    expect(reportOf(status)).toMatchObject({ tableVersion: 0, files: 1 });
  });

  it('problems of the file as a whole come first (job null); --job names only existing jobs', async () => {
    const { dir, landing: source } = await landing();
    const file = await configFile(dirs, {
      storage: { endpont: 'http://127.0.0.1:9' },
      jobs: [mergeJob(source, path.join(dir, 'table'))],
    });
    const r = await cli(['validate', '--config', file, '--json']);
    expect(r.code).toBe(2);
    const [general, orders] = reports(r);
    expect(general).toMatchObject({
      job: null,
      status: 'problems',
      problems: [
        {
          check: 'config',
          field: 'storage.endpont',
          message: 'storage.endpont: unknown field; did you mean endpoint?',
        },
      ],
    });
    expect(orders).toMatchObject({ job: 'orders', status: 'ok' }); // local paths need no storage settings
    const unknown = await cli(['validate', '--config', file, '--job', 'nope']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no job named "nope"');
  });

  it('an unreadable config file: exit 2, one problem', async () => {
    const r = await cli(['validate', '--config', '/nonexistent/tidemark.yaml', '--json']);
    expect(r.code).toBe(2);
    expect(reports(r)).toEqual([
      {
        job: null,
        status: 'problems',
        problems: [
          {
            check: 'config',
            message: expect.stringContaining('/nonexistent/tidemark.yaml: no such file'),
          },
        ],
        warnings: [],
      },
    ]);
  });
});

describe('tidemark validate against S3', () => {
  function s3Job(source: string, target: string, extra: Record<string, unknown> = {}) {
    return { ...mergeJob(source, target), ...extra };
  }

  it('a good config on s3rver with singleWriter: true validates (exit 0)', async () => {
    const zone = s3.landingZone('orders');
    await zone.source.write('2026/11/30/a.csv', 'order_id,status,seq,rid\n1,placed,1,x\n');
    const target = `s3://${s3.bucket}/lake-${randomUUID()}/orders`;
    const file = await configFile(dirs, {
      storage: { ...zone.storageConfig, singleWriter: true },
      jobs: [s3Job(zone.uri, target)],
    });
    const r = await cli(['validate', '--config', file, '--json']);
    expect(reports(r)).toEqual([{ job: 'orders', status: 'ok', problems: [], warnings: [] }]);
    expect(r.code).toBe(0);
    // The probes left nothing in the table's prefix.
    expect(
      (await s3.makeStorage(target.slice(`s3://${s3.bucket}/`.length) + '/').listAll()).objects,
    ).toEqual([]);
  });

  it('without singleWriter, a store that ignores conditional writes is a problem (exit 2)', async () => {
    const zone = s3.landingZone('orders');
    await zone.source.write('2026/11/30/a.csv', 'order_id,status,seq,rid\n1,placed,1,x\n');
    const file = await configFile(dirs, {
      storage: zone.storageConfig,
      jobs: [s3Job(zone.uri, `s3://${s3.bucket}/lake-${randomUUID()}/orders`)],
    });
    const r = await cli(['validate', '--config', file, '--json']);
    expect(r.code).toBe(2);
    expect(reports(r)[0]!.problems).toEqual([
      {
        check: 'commits',
        field: 'jobs[0].target.storage.singleWriter',
        message: expect.stringContaining('ignores conditional writes (If-None-Match: *)'),
      },
    ]);
  });

  it('an empty source prefix is a warning (a new landing zone?), with the prefix next to it of a close name', async () => {
    const base = `vt-${randomUUID()}/`;
    await s3.makeStorage(base).write('orders/2026/11/30/a.csv', 'order_id\n1\n');
    const file = await configFile(dirs, {
      storage: {
        endpoint: s3.endpoint,
        region: s3.region,
        forcePathStyle: true,
        singleWriter: true,
      },
      jobs: [
        s3Job(
          `s3://${s3.bucket}/${base}ordres/`,
          path.join(await tempDir('validate', dirs), 'table'),
        ),
      ],
    });
    const r = await cli(['validate', '--config', file, '--json']);
    expect(r.code).toBe(0);
    expect(reports(r)[0]).toEqual({
      job: 'orders',
      status: 'ok',
      problems: [],
      warnings: [
        {
          check: 'source',
          field: 'jobs[0].source.uri',
          message: `source s3://${s3.bucket}/${base}ordres/ holds nothing yet: a new landing zone, or the wrong place (did you mean s3://${s3.bucket}/${base}orders/?)`,
        },
      ],
    });
  });

  it('an S3 source that does not answer (closed port): exit 4, naming the endpoint', async () => {
    const endpoint = `http://127.0.0.1:${await closedPort()}`;
    const file = await configFile(dirs, {
      storage: { endpoint, region: 'us-east-1', forcePathStyle: true },
      jobs: [s3Job('s3://nowhere/landing/', path.join(await tempDir('validate', dirs), 'table'))],
    });
    const r = await cli(['validate', '--config', file, '--json']);
    expect(r.code).toBe(4);
    expect(reports(r)[0]!.problems).toEqual([
      {
        check: 'source',
        field: 'jobs[0].source.uri',
        message: expect.stringContaining(
          `s3://nowhere/landing/ (endpoint ${endpoint}): ECONNREFUSED`,
        ),
      },
    ]);
  });
});

/** A TCP port with nothing listening. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
