/**
 * `tidemark backfill` and `tidemark reset` on the command line, in process (`main(argv, io)`):
 * help, usage errors and their exit codes (SPEC §5: 0 done, 1 failed, 2 usage or config), --json
 * reports, progress as JSON lines on stderr off a terminal. Real files, DuckDB and Delta tables.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalStorage } from '../../src/storage/local.js';
import { cleanup, DuckSession, land, orders, tempDir } from '../job/helpers.js';
import { cli } from '../helpers/cli.js';

let session: DuckSession;
const dirs: string[] = [];
let config: string;

beforeAll(async () => {
  session = await DuckSession.open();
  const root = await tempDir('cli-bf-src', dirs);
  const source = new LocalStorage(root);
  for (const d of ['01', '02', '03'])
    await land(source, session, `2025/05/${d}/a.csv`, orders([Number(d), 'placed', 1]));
  const hourly = await tempDir('cli-bf-h', dirs);
  const discover = { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 1 };
  const jobs = [
    {
      name: 'orders',
      source: { uri: root, discover },
      target: { uri: await tempDir('cli-bf-t', dirs), key: ['order_id'], orderBy: 'seq' },
    },
    {
      name: 'events',
      source: { uri: root, discover },
      target: { uri: await tempDir('cli-bf-a', dirs), mode: 'append' },
    },
    {
      name: 'hourly',
      source: { uri: hourly, discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}/{HH}' } },
      target: { uri: await tempDir('cli-bf-ht', dirs), key: ['order_id'], orderBy: 'seq' },
    },
  ];
  config = path.join(await tempDir('cli-bf-cfg', dirs), 'tidemark.yaml');
  await fsp.writeFile(config, JSON.stringify({ jobs }));
});

afterAll(async () => {
  session?.close();
  await cleanup(dirs);
});

const json = (stdout: string) =>
  stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe('tidemark backfill / reset: help and usage', () => {
  it('backfill --help explains ranges, resuming and the flags; exit 0', async () => {
    const r = await cli(['backfill', '--help']);
    expect(r.code).toBe(0);
    for (const text of [
      '--from <P>',
      '--to <P>',
      '--restart',
      '--force',
      '--dry-run',
      'Interrupted?',
      'tidemark.backfill.<job>',
      'hourly layouts',
    ])
      expect(r.stdout).toContain(text);
  });

  it('reset --help explains what --to means; exit 0', async () => {
    const r = await cli(['reset', '--help']);
    expect(r.code).toBe(0);
    for (const text of [
      '--job <name>',
      '--to <watermark>',
      'last partition (or instant) considered loaded',
      'append mode',
    ])
      expect(r.stdout).toContain(text);
  });

  it.each([
    [['backfill', '--to', '2025-05-02']],
    [['backfill', '--from', '2025-05-02']],
    [['reset', '--to', '2025-05-02']],
    [['reset', '--job', 'orders']],
  ])('%j: a missing required option is a usage error (exit 2)', async (argv) => {
    const r = await cli([...argv, '--config', config]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/required option/);
  });
});

describe('tidemark backfill', () => {
  it('--json: one report per job; status shows the backfill; a rerun of the completed range is a no-op; progress lines on stderr', async () => {
    const r = await cli([
      'backfill',
      '--config',
      config,
      '--job',
      'orders',
      '--from',
      '2025-05-01',
      '--to',
      '2025-05-02',
      '--json',
      '--log-level',
      'info',
    ]);
    expect(r.code).toBe(0);
    const [report] = json(r.stdout);
    expect(report).toMatchObject({
      job: 'orders',
      command: 'backfill',
      status: 'succeeded',
      from: '2025-05-01',
      to: '2025-05-02',
      filesLoaded: 2,
      commits: 2,
      doneThrough: '2025-05-02',
      watermark: null,
    });
    const progress = r.stderr
      .split('\n')
      .filter((l) => l.includes('"progress"'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(progress.map((p) => p['done'])).toContain(2);
    expect(progress[0]).toMatchObject({
      progress: 'orders: backfill 2025-05-01..2025-05-02',
      total: 2,
    });

    const status = await cli(['status', '--config', config, '--job', 'orders', '--json']);
    expect(json(status.stdout)[0]).toMatchObject({
      watermark: null,
      backfill: { from: '2025-05-01', to: '2025-05-02', status: 'done', doneThrough: '2025-05-02' },
    });
    expect((await cli(['status', '--config', config, '--job', 'orders'])).stdout).toContain(
      'backfill 2025-05-01..2025-05-02: done',
    );

    const again = await cli([
      'backfill',
      '--config',
      config,
      '--job',
      'orders',
      '--from',
      '2025-05-01',
      '--to',
      '2025-05-02',
    ]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('orders: backfill 2025-05-01..2025-05-02 already done');
  });

  it('a bad --to is a usage error naming the flag (exit 2); an append job needs no --force (it replaces what it reloads)', async () => {
    const bad = await cli([
      'backfill',
      '--config',
      config,
      '--job',
      'orders',
      '--from',
      '2025-05-01',
      '--to',
      '2025-05-32',
      '--json',
    ]);
    expect(bad.code).toBe(2);
    expect(json(bad.stdout)[0]).toMatchObject({
      job: 'orders',
      command: 'backfill',
      status: 'failed',
      error: { type: 'ConfigError', context: { field: 'to' } },
    });

    const append = await cli([
      'backfill',
      '--config',
      config,
      '--job',
      'events',
      '--from',
      '2025-05-01',
      '--to',
      '2025-05-01',
      '--json',
    ]);
    expect(append.code).toBe(0);
    expect(json(append.stdout)[0]).toMatchObject({
      status: 'succeeded',
      filesLoaded: 1,
      inserted: 1,
    });
    // Still accepted, and the range is not appended twice.
    const forced = await cli([
      'backfill',
      '--config',
      config,
      '--job',
      'events',
      '--from',
      '2025-05-01',
      '--to',
      '2025-05-01',
      '--force',
      '--restart',
      '--json',
    ]);
    expect(forced.code).toBe(0);
    expect(json(forced.stdout)[0]).toMatchObject({
      status: 'succeeded',
      filesLoaded: 1,
      inserted: 0,
      filesAlreadyLoaded: 1,
    });
  });

  it('--dry-run lists the files and commits nothing', async () => {
    const r = await cli([
      'backfill',
      '--config',
      config,
      '--job',
      'orders',
      '--from',
      '2025-05-03',
      '--to',
      '2025-05-03',
      '--dry-run',
      '--json',
    ]);
    expect(r.code).toBe(0);
    expect(json(r.stdout)[0]).toMatchObject({
      status: 'dry-run',
      filesPlanned: 1,
      plannedFiles: ['2025/05/03/a.csv'],
      commits: 0,
    });
  });
});

describe('tidemark reset', () => {
  it('--json: moves the watermark back; the next run reloads; status shows the new watermark', async () => {
    expect((await cli(['run', '--config', config, '--job', 'orders'])).code).toBe(0);
    const r = await cli([
      'reset',
      '--config',
      config,
      '--job',
      'orders',
      '--to',
      '2025-05-01',
      '--json',
    ]);
    expect(r.code).toBe(0);
    expect(json(r.stdout)[0]).toMatchObject({
      job: 'orders',
      command: 'reset',
      status: 'reset',
      watermarkBefore: '2025-05-03',
      watermark: '2025-05-01',
      rewound: true,
    });
    const status = await cli(['status', '--config', config, '--job', 'orders', '--json']);
    expect(json(status.stdout)[0]).toMatchObject({ watermark: '2025-05-01' });
    const rerun = await cli(['run', '--config', config, '--job', 'orders', '--json']);
    expect(json(rerun.stdout)[0]).toMatchObject({
      status: 'succeeded',
      inserted: 0,
      updated: 0,
      watermark: '2025-05-03',
    });
  });

  it('a watermark that does not fit the layout is a usage error naming --to (exit 2); so is a table that does not exist', async () => {
    const r = await cli([
      'reset',
      '--config',
      config,
      '--job',
      'hourly',
      '--to',
      '2025-05-01',
      '--json',
    ]);
    expect(r.code).toBe(2);
    expect(json(r.stdout)[0]).toMatchObject({
      command: 'reset',
      status: 'failed',
      error: { type: 'ConfigError', context: { field: 'to' } },
    });
    expect(JSON.stringify(json(r.stdout)[0])).toContain('hour partitions');

    const missing = await cli([
      'reset',
      '--config',
      config,
      '--job',
      'hourly',
      '--to',
      '2025-05-01T05',
    ]);
    expect(missing.code).toBe(2);
    expect(missing.stdout).toContain('does not exist yet');
  });

  it('an unknown job is a usage error (exit 2)', async () => {
    const r = await cli(['reset', '--config', config, '--job', 'nope', '--to', '2025-05-01']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('no job named "nope"');
  });
});
