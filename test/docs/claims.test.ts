/**
 * What the docs show, checked claim by claim against what tidemark does (the markers and the
 * comparison are in ./claims.ts). Every marked block or table row has a scenario here that sets up
 * the situation the docs describe, runs the command in process (the CLI's `main`), and compares
 * its output, error message or exit code with the docs' text; a marker without a scenario, or a
 * scenario whose marker is gone, fails too. Paths the docs show (`/data/landing`) stand for the
 * test's temp folders.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalStorage } from '../../src/storage/local.js';
import { cli, type CliResult } from '../helpers/cli.js';
import { cleanup, DuckSession, land, orders, tempDir } from '../job/helpers.js';
import { claimsOf, mismatch, readClaims, type Claim, type MatchOptions } from './claims.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

let session: DuckSession;
const dirs: string[] = [];
let claims: Claim[];

beforeAll(async () => {
  session = await DuckSession.open();
  claims = await readClaims(ROOT);
});
afterAll(async () => {
  session?.close();
  await cleanup(dirs);
});

type Json = Record<string, unknown>;

/** What a scenario found: the text to compare with the claim, and for a row claim the exit code. */
interface Found {
  text: string;
  exit?: number;
  options?: MatchOptions;
}

/** A folder standing for `/data` of the docs, with a config file `tidemark.yaml` in it. */
interface World {
  dir: string;
  config: string;
  /** Run `tidemark <argv> --config <config>`. */
  run(argv: string[], signal?: AbortSignal): Promise<CliResult>;
  /** `text` with the world's folder written as the docs write it. */
  asDocs(text: string): string;
}

async function world(jobs: (dir: string) => unknown[]): Promise<World> {
  const dir = await fsp.realpath(await tempDir('claims', dirs));
  const config = path.join(dir, 'tidemark.yaml');
  await fsp.writeFile(config, JSON.stringify({ jobs: jobs(dir) }, null, 2));
  return {
    dir,
    config,
    run: (argv, signal) => cli([...argv, '--config', config], { tty: false }, signal),
    asDocs: (text) => text.replaceAll(config, 'tidemark.yaml').replaceAll(dir, '/data'),
  };
}

const byDay = { by: 'partition', layout: '{yyyy}/{mm}/{dd}' };

/** A merge job `orders` over `<dir>/landing` into `<dir>/lake/orders`. */
function ordersJob(
  dir: string,
  source: Record<string, unknown> = {},
  target: Record<string, unknown> = {},
) {
  return {
    name: 'orders',
    source: { uri: path.join(dir, 'landing'), discover: byDay, ...source },
    target: { uri: path.join(dir, 'lake', 'orders'), key: ['order_id'], orderBy: 'seq', ...target },
  };
}

/** Land order files (`key: rows`) under `<dir>/landing`. */
async function landing(
  dir: string,
  files: Record<string, ReturnType<typeof orders>>,
): Promise<void> {
  const source = new LocalStorage(path.join(dir, 'landing'));
  for (const [key, rows] of Object.entries(files)) await land(source, session, key, rows);
}

/** The config file of `w` holding the one job `job` now (edited between runs). */
async function rewrite(w: World, job: unknown): Promise<void> {
  await fsp.writeFile(w.config, JSON.stringify({ jobs: [job] }, null, 2));
}

/** Land a CSV of orders with a second version column and a delete flag (region: EU unless given) under `<dir>/landing`. */
async function feed(
  dir: string,
  key: string,
  rows: Array<[number, string, number, number, boolean, string?]>,
): Promise<void> {
  const lines = rows.map(([id, status, seq, seq2, deleted, region]) =>
    [id, status, seq, seq2, deleted, region ?? 'EU'].join(','),
  );
  await new LocalStorage(path.join(dir, 'landing')).write(
    key,
    ['order_id,status,seq,seq2,deleted,region', ...lines].join('\n') + '\n',
  );
}

/** The message of the failed job's --json report, and the exit code. */
async function failedRun(w: World, argv = ['run']): Promise<Found> {
  const r = await w.run([...argv, '--json']);
  const report = JSON.parse(r.stdout.trimEnd().split('\n').at(-1)!) as {
    error?: { message: string };
  };
  expect(report.error, r.stdout).toBeDefined();
  return { text: w.asDocs(report.error!.message), exit: r.code };
}

const scenarios: Record<string, () => Promise<Found>> = {
  'missing-source': async () => {
    const w = await world((dir) => [ordersJob(dir, { uri: path.join(dir, 'landin') })]);
    await landing(w.dir, { '2026/11/30/a.csv': orders([1, 'placed', 1]) });
    const r = await w.run(['run']);
    expect(r.code).toBe(2);
    return { text: w.asDocs(r.stdout) };
  },
  'missing-source-json': async () => {
    const w = await world((dir) => [ordersJob(dir, { uri: path.join(dir, 'landin') })]);
    await landing(w.dir, { '2026/11/30/a.csv': orders([1, 'placed', 1]) });
    const r = await w.run(['run', '--json']);
    const { error } = JSON.parse(r.stdout) as { error: Json };
    return { text: w.asDocs(`"error": ${JSON.stringify(error)}`), options: { json: true } };
  },
  'layout-mismatch-root': async () => {
    const w = await world((dir) => [
      ordersJob(dir, { discover: { by: 'partition', layout: 'dt={yyyy}-{mm}-{dd}' } }),
    ]);
    await landing(w.dir, { '2026/11/30/a.csv': orders([1, 'placed', 1]) });
    return failedRun(w);
  },
  'layout-mismatch-hourly': async () => {
    const w = await world((dir) => [
      ordersJob(dir, { discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}/{HH}' } }),
    ]);
    await landing(w.dir, {
      '2026/11/30/b.csv': orders([1, 'placed', 1]),
      '2026/11/30/c.csv': orders([2, 'placed', 1]),
    });
    return failedRun(w);
  },
  'unset-variable': async () => {
    const w = await world((dir) => [ordersJob(dir, { uri: '${LANDING}/orders/' })]);
    delete process.env['LANDING'];
    const r = await w.run(['run']);
    expect(r.code).toBe(2);
    return { text: w.asDocs(r.stderr.split('\n')[0]!) };
  },
  'unset-variable-json': async () => {
    const w = await world((dir) => [ordersJob(dir, { uri: '${LANDING}/orders/' })]);
    delete process.env['LANDING'];
    const r = await w.run(['run', '--json']);
    expect(r.code).toBe(2);
    return { text: w.asDocs(r.stdout), options: { json: true } };
  },
  'interrupted-json': async () => {
    const w = await world((dir) => [ordersJob(dir)]);
    await landing(w.dir, {
      '2026/11/29/a.csv': orders([1, 'placed', 1]),
      '2026/11/30/b.csv': orders([2, 'placed', 1]),
    });
    const stop = new AbortController();
    // SIGTERM (the CLI's handler aborts this signal) once the first batch is fetched.
    const r = await cli(
      ['run', '--config', w.config, '--json'],
      { tty: false, hooks: { afterFetch: () => stop.abort(new Error('interrupted by SIGTERM')) } },
      stop.signal,
    );
    expect(r.code).toBe(130);
    const { error } = JSON.parse(r.stdout) as { error: Json };
    return { text: `"error": ${JSON.stringify(error)}`, options: { json: true } };
  },
  'bad-timezone': async () => {
    const w = await world((dir) => [
      ordersJob(dir, { discover: { ...byDay, timezone: 'Mars/Olympus' } }),
    ]);
    const r = await w.run(['run']);
    return { text: r.stderr.replace(/^tidemark: /, '').split('\n')[0]!, exit: r.code };
  },
  'bad-layout': async () => {
    const w = await world((dir) => [
      ordersJob(dir, { discover: { by: 'partition', layout: '{yyyy}/{dd}/{mm}' } }),
    ]);
    const r = await w.run(['run']);
    return { text: r.stderr.replace(/^tidemark: /, '').split('\n')[0]!, exit: r.code };
  },
  'discovery-mode-changed': async () => {
    const w = await world((dir) => [ordersJob(dir)]);
    await landing(w.dir, { '2026/11/30/a.csv': orders([1, 'placed', 1]) });
    expect((await w.run(['run'])).code).toBe(0);
    await fsp.writeFile(
      w.config,
      JSON.stringify({ jobs: [ordersJob(w.dir, { discover: { by: 'modified' } })] }),
    );
    return failedRun(w);
  },
  // When files or the config change (issue 20): the refusals troubleshooting.md lists.
  'layout-granularity': async () => {
    const hourly = { by: 'partition', layout: '{yyyy}/{mm}/{dd}/{HH}' };
    const w = await world((dir) => [ordersJob(dir, { discover: hourly })]);
    await landing(w.dir, { '2026/11/30/05/a.csv': orders([1, 'placed', 1]) });
    expect((await w.run(['run'])).code).toBe(0);
    await rewrite(w, ordersJob(w.dir));
    return failedRun(w);
  },
  'renamed-job': async () => {
    const w = await world((dir) => [ordersJob(dir)]);
    await landing(w.dir, { '2026/11/30/a.csv': orders([1, 'placed', 1]) });
    expect((await w.run(['run'])).code).toBe(0);
    await rewrite(w, { ...ordersJob(w.dir), name: 'orders_v2' });
    return failedRun(w);
  },
  'orderby-changed': async () => {
    const w = await world((dir) => [ordersJob(dir, {}, { deleteWhen: 'deleted' })]);
    await feed(w.dir, '2026/11/30/a.csv', [
      [1, 'placed', 1, 1, false],
      [2, 'placed', 1, 1, false],
    ]);
    expect((await w.run(['run'])).code).toBe(0);
    await feed(w.dir, '2026/11/30/b.csv', [
      [1, 'gone', 5, 5, true],
      [2, 'gone', 5, 5, true],
    ]);
    expect((await w.run(['run'])).code).toBe(0);
    await rewrite(w, ordersJob(w.dir, {}, { deleteWhen: 'deleted', orderBy: 'seq2' }));
    return failedRun(w);
  },
  'scd2-history-changed': async () => {
    const scd2 = { mode: 'scd2', deleteWhen: 'deleted' };
    const w = await world((dir) => [ordersJob(dir, {}, scd2)]);
    await feed(w.dir, '2026/11/30/a.csv', [
      [1, 'placed', 1, 1, false],
      [1, 'paid', 5, 5, false],
    ]);
    expect((await w.run(['run'])).code).toBe(0);
    await rewrite(w, ordersJob(w.dir, {}, { ...scd2, orderBy: 'seq2' }));
    return failedRun(w);
  },
  'key-duplicates': async () => {
    const w = await world((dir) => [ordersJob(dir, {}, { key: ['order_id', 'region'] })]);
    await feed(w.dir, '2026/11/30/a.csv', [
      [1, 'placed', 1, 1, false, 'EU'],
      [1, 'placed', 1, 1, false, 'US'],
      [2, 'placed', 1, 1, false, 'EU'],
      [2, 'placed', 1, 1, false, 'US'],
    ]);
    expect((await w.run(['run'])).code).toBe(0);
    await rewrite(w, ordersJob(w.dir));
    return failedRun(w);
  },
  'future-start': async () => {
    const w = await world((dir) => [
      ordersJob(dir, { discover: { ...byDay, start: '2099-01-01' } }),
    ]);
    await landing(w.dir, { '2026/11/30/a.csv': orders([1, 'placed', 1]) });
    return failedRun(w);
  },
  'future-reset': async () => {
    const w = await world((dir) => [ordersJob(dir)]);
    await landing(w.dir, { '2026/11/30/a.csv': orders([1, 'placed', 1]) });
    expect((await w.run(['run'])).code).toBe(0);
    const r = await w.run(['reset', '--job', 'orders', '--to', '2099-01-01', '--json']);
    const { error } = JSON.parse(r.stdout.trimEnd().split('\n').at(-1)!) as {
      error: { message: string };
    };
    return { text: w.asDocs(error.message), exit: r.code };
  },
  'behind-settle-window': async () => {
    const w = await world((dir) => [
      ordersJob(dir, { discover: { by: 'modified', settle: '15m' } }),
    ]);
    await landing(w.dir, { 'feed/a.csv': orders([1, 'placed', 1]) });
    expect((await w.run(['run'])).code).toBe(0);
    // Copied in with their old times kept (cp -p): two and three hours old.
    await landing(w.dir, {
      'feed/late-1.csv': orders([2, 'placed', 1]),
      'feed/late-2.csv': orders([3, 'placed', 1]),
    });
    for (const [key, hours] of [
      ['feed/late-1.csv', 3],
      ['feed/late-2.csv', 2],
    ] as const) {
      const t = new Date(Date.now() - hours * 3_600_000);
      await fsp.utimes(path.join(w.dir, 'landing', key), t, t);
    }
    const r = await w.run(['run']);
    expect(r.code).toBe(0);
    const warning = r.stderr
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { msg: string })
      .find((l) => l.msg.includes('behind the settle window'));
    return { text: warning?.msg ?? r.stderr };
  },
  'bad-delete-when': async () => {
    const w = await world((dir) => [ordersJob(dir, {}, { deleteWhen: 'status = = 1' })]);
    await landing(w.dir, { '2026/11/30/a.csv': orders([1, 'placed', 1]) });
    return failedRun(w);
  },
};

describe('the docs, claim by claim', () => {
  it('every marked claim has a scenario, and every scenario a claim', () => {
    const names = claims.map((c) => c.name);
    expect(
      names.filter((n, i) => names.indexOf(n) !== i),
      'claims marked twice',
    ).toEqual([]);
    expect(
      names.filter((n) => !(n in scenarios)),
      'claims without a scenario',
    ).toEqual([]);
    expect(
      Object.keys(scenarios).filter((n) => !names.includes(n)),
      'scenarios whose claim is gone',
    ).toEqual([]);
  });

  it.each(Object.keys(scenarios))('%s', async (name) => {
    const claim = claims.find((c) => c.name === name);
    expect(claim, `no claim marked ${name}`).toBeDefined();
    const found = await scenarios[name]!();
    const where = `${claim!.file}:${claim!.line} (${claim!.section})`;
    const options: MatchOptions =
      claim!.kind === 'row'
        ? { placeholders: true, prefix: true, ...found.options }
        : (found.options ?? {});
    expect(mismatch(claim!.text, found.text, options), where).toBeNull();
    if (claim!.kind === 'row' && claim!.exit !== null)
      expect(found.exit, `${where}: the exit code`).toBe(claim!.exit);
  });
});

describe('how a claim is compared (so a passing claim means something)', () => {
  it('… stands for any text; everything else must be there, in order, and nothing more', () => {
    expect(
      mismatch(
        'orders: failed: … (did you mean /data/landing?)',
        'orders: failed: [preflight] x (did you mean /data/landing?)',
      ),
    ).toBeNull();
    expect(
      mismatch('orders: failed: … (did you mean /data/landing?)', 'orders: failed: [preflight] x'),
    ).not.toBeNull();
    expect(mismatch('exit 2', 'exit 2 and more')).not.toBeNull();
    expect(mismatch('a\n  …\nb', 'a\n  x\n  y\nb')).toBeNull();
  });

  it('times, durations and run ids are not compared; <placeholders> only in rows, where a prefix is enough', () => {
    expect(
      mismatch(
        'succeeded in 2.1s at 2026-11-30T10:00:04.118Z',
        'succeeded in 0.3s at 2027-01-01T00:00:00.000Z',
      ),
    ).toBeNull();
    expect(mismatch('table <uri> is missing', 'table s3://x is missing')).not.toBeNull();
    expect(
      mismatch('table <uri> is missing', 'table s3://x is missing; more', {
        placeholders: true,
        prefix: true,
      }),
    ).toBeNull();
    expect(
      mismatch('table <uri> is missing', 'table s3://x is gone', {
        placeholders: true,
        prefix: true,
      }),
    ).not.toBeNull();
  });

  it('JSON is compared without the whitespace outside strings, never inside them', () => {
    expect(
      mismatch(
        '"error": {\n  "type": "X",\n  "message": "a  b"\n}',
        '"error":{"type":"X","message":"a  b"}',
        { json: true },
      ),
    ).toBeNull();
    expect(
      mismatch('"error": { "message": "a  b" }', '"error":{"message":"a b"}', { json: true }),
    ).not.toBeNull();
  });

  it('a marker finds its block or its row, with the section and the exit code it names', () => {
    const md = [
      '## Exit 2: fix it',
      '| `[x] bad <thing>` <!-- claim: row-one --> | a |',
      '',
      '<!-- claim: block-one -->',
      '```',
      '$ tidemark run',
      'out',
      '```',
    ].join('\n');
    expect(claimsOf('f.md', md)).toEqual([
      {
        name: 'row-one',
        file: 'f.md',
        line: 2,
        kind: 'row',
        text: '[x] bad <thing>',
        section: 'Exit 2: fix it',
        exit: 2,
      },
      {
        name: 'block-one',
        file: 'f.md',
        line: 4,
        kind: 'block',
        text: '$ tidemark run\nout',
        section: 'Exit 2: fix it',
        exit: 2,
      },
    ]);
  });
});
