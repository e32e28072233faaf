/**
 * `source.afterLoad` and `tidemark cleanup` (issue 25, item 5): source files moved or deleted only
 * once their load committed at least `after` ago, through the real job on local folders and
 * s3rver, real DuckDB and Delta logs. Each test checks what a user would: files present or
 * absent, bytes at the move target, table rows unchanged, a rerun that does nothing.
 */
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config/load.js';
import { ConfigError } from '../../src/errors.js';
import { cleanupJob, type CleanupReport } from '../../src/job/cleanup.js';
import type { StorageOpener } from '../../src/job/open.js';
import { silentLogger } from '../../src/log/logger.js';
import { openStorage as openStorageOf } from '../../src/storage/uri.js';
import { LocalStorage } from '../../src/storage/local.js';
import type { Storage } from '../../src/storage/storage.js';
import { cli } from '../helpers/cli.js';
import { reset } from './backfill-helpers.js';
import type { S3rverHandle } from '../helpers/s3rver.js';
import {
  closeS3JobEnv,
  DuckSession,
  land,
  makeConfig,
  mergeTarget,
  openS3JobEnv,
  orders,
  readTarget,
  run,
  tempDir,
  unwrap,
} from './helpers.js';

let s3: S3rverHandle;
let session: DuckSession;
const dirs: string[] = [];
beforeAll(async () => {
  ({ s3, session } = await openS3JobEnv({ threads: 2 }));
});
afterAll(() => closeS3JobEnv(s3, session, dirs));

const DAY = 86_400_000;
/** A clock 31 days on: every load of the test is older than `after: 30d`. */
const later = () => Date.now() + 31 * DAY;

type Setup = ReturnType<typeof makeConfig>;

async function cleanup(setup: Setup, apply: boolean, now = later()): Promise<CleanupReport> {
  return unwrap(
    await cleanupJob(
      setup.job,
      { storage: setup.storage, logger: silentLogger(), tty: false },
      { apply, now },
    ),
  );
}

/** Keys below a storage, sorted. */
async function keysOf(storage: Storage): Promise<string[]> {
  return (await storage.listAll()).objects.map((o) => o.key).sort();
}

/** A local landing zone with a.csv and b.csv loaded in one run (merge by order_id), and its config with `afterLoad`. */
async function loaded(
  afterLoad: Record<string, unknown>,
): Promise<{ dir: string; src: LocalStorage; setup: Setup }> {
  const dir = await tempDir('src', dirs);
  const src = new LocalStorage(dir);
  const setup = makeConfig({
    source: { uri: dir, discover: { by: 'modified', settle: '1s' }, afterLoad },
    target: mergeTarget(await tempDir('t', dirs)),
  });
  await land(src, session, 'feed/a.csv', orders([1, 'a', 1], [2, 'b', 1]));
  await land(src, session, 'feed/b.csv', orders([3, 'c', 1]));
  expect(await run(setup)).toMatchObject({ status: 'succeeded', filesLoaded: 2 });
  return { dir, src, setup };
}

describe('cleanup on a local folder: delete', () => {
  it('a dry run lists the files and changes nothing; --apply deletes them; a rerun is a no-op', async () => {
    const { src, setup } = await loaded({ delete: true, after: '30d' });
    const rows = (await readTarget(session, setup)).rows;
    await land(src, session, 'feed/c.csv', orders([4, 'd', 1])); // landed, not loaded yet
    const dry = await cleanup(setup, false);
    expect(dry).toMatchObject({ status: 'dry-run', dryRun: true, action: 'delete', record: null });
    expect(dry.files.map((f) => f.key)).toEqual(['feed/a.csv', 'feed/b.csv']);
    expect(dry.skipped).toEqual([{ key: 'feed/c.csv', reason: 'not loaded' }]);
    expect(await keysOf(src)).toEqual(['feed/a.csv', 'feed/b.csv', 'feed/c.csv']);

    const done = await cleanup(setup, true);
    expect(done).toMatchObject({ status: 'cleaned', dryRun: false });
    expect(done.files.map((f) => [f.key, (f as { action?: string }).action])).toEqual([
      ['feed/a.csv', 'deleted'],
      ['feed/b.csv', 'deleted'],
    ]);
    expect(await keysOf(src)).toEqual(['feed/c.csv']);
    expect((await readTarget(session, setup)).rows).toEqual(rows);
    // The record in the table folder says what was done.
    const record = JSON.parse(await readFile(join(setup.job.target.uri, done.record!), 'utf8')) as {
      finished: boolean;
      done: Array<{ key: string; action: string }>;
    };
    expect(record.finished).toBe(true);
    expect(record.done.map((d) => `${d.action} ${d.key}`)).toEqual([
      'deleted feed/a.csv',
      'deleted feed/b.csv',
    ]);

    expect(await cleanup(setup, true)).toMatchObject({
      status: 'nothing-to-do',
      files: [],
      record: null,
    });
    expect(await keysOf(src)).toEqual(['feed/c.csv']);
    // The next run loads c.csv and nothing else: the deleted files are not missed or reloaded.
    expect(await run(setup)).toMatchObject({ status: 'succeeded', filesLoaded: 1 });
    expect((await readTarget(session, setup)).rows).toHaveLength(4);
  });

  it('a file within `after` of its load is kept, and says so', async () => {
    const { src, setup } = await loaded({ delete: true, after: '30d' });
    const report = await cleanup(setup, true, Date.now() + 29 * DAY);
    expect(report).toMatchObject({
      status: 'nothing-to-do',
      files: [],
      skippedByReason: { 'within after': 2 },
    });
    expect(report.skipped[0]).toMatchObject({ reason: 'within after', batch: 1 });
    expect(await keysOf(src)).toEqual(['feed/a.csv', 'feed/b.csv']);
  });

  it('a file rewritten since its load (new content, not loaded) is never touched', async () => {
    const { src, setup } = await loaded({ delete: true, after: '30d' });
    await land(src, session, 'feed/a.csv', orders([1, 'a2', 2]));
    const report = await cleanup(setup, true);
    expect(report.files.map((f) => f.key)).toEqual(['feed/b.csv']);
    expect(report.skipped).toEqual([
      { key: 'feed/a.csv', reason: 'changed since its load', batch: 1 },
    ]);
    expect(await keysOf(src)).toEqual(['feed/a.csv']);
    expect(await readFile(join(src.root, 'feed/a.csv'), 'utf8')).toContain(',a2,');
  });

  it('a quarantined file is never touched', async () => {
    const dir = await tempDir('src', dirs);
    const src = new LocalStorage(dir);
    const setup = makeConfig({
      source: { uri: dir, discover: { by: 'modified', settle: '1s' }, afterLoad: { delete: true } },
      target: mergeTarget(await tempDir('t', dirs)),
      onBadFile: 'quarantine',
    });
    await land(src, session, 'feed/a.csv', orders([1, 'a', 1]));
    await src.write('feed/bad.csv', 'order_id,status,seq,rid\nnot-a-number,x,1,r\n"unterminated\n');
    const first = await run(setup);
    expect(first.filesLoaded).toBe(1);
    const report = await cleanup(setup, true);
    expect(report.files.map((f) => f.key)).toEqual(['feed/a.csv']);
    expect(report.skipped).toEqual([{ key: 'feed/bad.csv', reason: 'quarantined' }]);
    expect(await keysOf(src)).toEqual(['feed/bad.csv']);
  });
});

describe('cleanup of a source two jobs of the table load', () => {
  it('a file the other job (started --fresh beside it) has not loaded is kept', async () => {
    const dir = await tempDir('src', dirs);
    const src = new LocalStorage(dir);
    const table = await tempDir('t', dirs);
    const job = (name: string) =>
      makeConfig({
        name,
        source: {
          uri: dir,
          discover: { by: 'modified', settle: '1s' },
          afterLoad: { delete: true },
        },
        target: mergeTarget(table),
      });
    await land(src, session, 'feed/a.csv', orders([1, 'a', 1]));
    expect(await run(job('orders'))).toMatchObject({ filesLoaded: 1 });
    expect(await run(job('orders2'), { fresh: true })).toMatchObject({ filesLoaded: 1 });
    await land(src, session, 'feed/b.csv', orders([2, 'b', 1]));
    expect(await run(job('orders'))).toMatchObject({ filesLoaded: 1 });
    const report = await cleanup(job('orders'), true);
    expect(report.files.map((f) => f.key)).toEqual(['feed/a.csv']);
    expect(report.skipped).toEqual([
      { key: 'feed/b.csv', reason: 'not loaded by another job', batch: 2 },
    ]);
    expect(await keysOf(src)).toEqual(['feed/b.csv']);
  });
});

describe('cleanup after a reset', () => {
  it('by modification time: files a reset will load again are kept until a run has', async () => {
    const { src, setup } = await loaded({ delete: true, after: '30d' });
    await reset(setup, { to: new Date(Date.now() - 3_600_000).toISOString(), force: true });
    const report = await cleanup(setup, true);
    expect(report).toMatchObject({
      status: 'nothing-to-do',
      skippedByReason: { 'to be loaded again after a reset': 2 },
    });
    expect(await keysOf(src)).toEqual(['feed/a.csv', 'feed/b.csv']);
    await run(setup);
    expect((await cleanup(setup, false)).files.map((f) => f.key)).toEqual([
      'feed/a.csv',
      'feed/b.csv',
    ]);
  });

  it('by partition: after a reset, no loaded file is touched until a run has followed it', async () => {
    const dir = await tempDir('src', dirs);
    const src = new LocalStorage(dir);
    const setup = makeConfig({
      source: {
        uri: dir,
        discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 0 },
        afterLoad: { delete: true },
      },
      target: mergeTarget(await tempDir('t', dirs)),
    });
    await land(src, session, '2025/03/01/a.csv', orders([1, 'a', 1]));
    await land(src, session, '2025/03/02/b.csv', orders([2, 'b', 1]));
    expect(await run(setup)).toMatchObject({ filesLoaded: 2 });
    await reset(setup, { to: '2025-03-01', force: true });
    const report = await cleanup(setup, true);
    expect(report).toMatchObject({
      status: 'nothing-to-do',
      skippedByReason: { 'to be loaded again after a reset': 2 },
    });
    expect(await keysOf(src)).toEqual(['2025/03/01/a.csv', '2025/03/02/b.csv']);
    await run(setup);
    expect((await cleanup(setup, false)).files.map((f) => f.key)).toEqual([
      '2025/03/01/a.csv',
      '2025/03/02/b.csv',
    ]);
  });
});

describe('cleanup on a local folder: move', () => {
  it('moves each file below the target with its bytes, keeps the table, and a rerun is a no-op', async () => {
    const archiveDir = await tempDir('archive', dirs);
    const { src, setup } = await loaded({ move: archiveDir, after: '30d' });
    const bytes = await readFile(join(src.root, 'feed/a.csv'), 'utf8');
    const rows = (await readTarget(session, setup)).rows;
    const done = await cleanup(setup, true);
    expect(done).toMatchObject({ status: 'cleaned', action: 'move' });
    expect(await keysOf(src)).toEqual([]);
    const archive = new LocalStorage(archiveDir);
    expect(await keysOf(archive)).toEqual(['feed/a.csv', 'feed/b.csv']);
    expect(await readFile(join(archiveDir, 'feed/a.csv'), 'utf8')).toBe(bytes);
    expect((await readTarget(session, setup)).rows).toEqual(rows);
    expect(await cleanup(setup, true)).toMatchObject({ status: 'nothing-to-do' });
    expect(await run(setup)).toMatchObject({ status: 'nothing-new', filesLoaded: 0 });
  });

  it('an interrupted move (copy made, original kept) finishes; a different file at the target is never overwritten', async () => {
    const archiveDir = await tempDir('archive', dirs);
    const { src, setup } = await loaded({ move: archiveDir, after: '30d' });
    const archive = new LocalStorage(archiveDir);
    // a.csv: as a cleanup killed between its copy and its delete leaves it.
    await archive.write('feed/a.csv', await readFile(join(src.root, 'feed/a.csv'), 'utf8'));
    // b.csv: the target already holds another file of that name.
    await archive.write('feed/b.csv', 'someone else\n');
    const report = await cleanup(setup, true);
    expect(report.files.map((f) => f.key)).toEqual(['feed/a.csv']);
    expect(report.left).toEqual([{ key: 'feed/b.csv', reason: 'move target holds another file' }]);
    expect(await keysOf(src)).toEqual(['feed/b.csv']);
    expect(await readFile(join(archiveDir, 'feed/b.csv'), 'utf8')).toBe('someone else\n');
  });

  it("a copy that does not hold the original's bytes (fault injected: the target stores other bytes) fails the cleanup and keeps the original", async () => {
    const archiveDir = await tempDir('archive', dirs);
    const { src, setup } = await loaded({ move: archiveDir, after: '30d' });
    const archiveUri = setup.job.source.afterLoad!.move!;
    const openStorage: StorageOpener = (uri, s3Options, localOptions) => {
      const storage = openStorageOf(uri, s3Options, localOptions);
      if (uri !== archiveUri) return storage;
      return new Proxy(storage, {
        get: (target, prop) => {
          if (prop === 'upload')
            return (key: string) => target.write(key, 'bytes lost in transit\n');
          const value = Reflect.get(target, prop) as unknown;
          return typeof value === 'function'
            ? (value as (...a: unknown[]) => unknown).bind(target)
            : value;
        },
      });
    };
    const outcome = await cleanupJob(
      setup.job,
      { storage: setup.storage, logger: silentLogger(), tty: false, openStorage },
      { apply: true, now: later() },
    );
    expect(outcome.ok).toBe(false);
    expect(String((outcome as { error: unknown }).error)).toMatch(
      /does not hold the bytes of the original/,
    );
    expect(await keysOf(src)).toEqual(['feed/a.csv', 'feed/b.csv']);
  });

  it('a failed move waits for the moves under way: the record and the report name every file that left the source', async () => {
    const archiveDir = await tempDir('archive', dirs);
    const { src, setup } = await loaded({ move: archiveDir, after: '30d' });
    const archiveUri = setup.job.source.afterLoad!.move!;
    // b.csv's move is at its last step, deleting the original (slow), when a.csv's copy comes
    // out wrong and fails the cleanup.
    let bDeleting = (): void => {};
    const bAtDelete = new Promise<void>((resolve) => (bDeleting = resolve));
    const wrap = (
      storage: Storage,
      override: (target: Storage, prop: string | symbol) => unknown,
    ) =>
      new Proxy(storage, {
        get: (target, prop) => {
          const replaced = override(target, prop);
          if (replaced !== undefined) return replaced;
          const value = Reflect.get(target, prop) as unknown;
          return typeof value === 'function'
            ? (value as (...a: unknown[]) => unknown).bind(target)
            : value;
        },
      });
    const openStorage: StorageOpener = (uri, s3Options, localOptions) => {
      const storage = openStorageOf(uri, s3Options, localOptions);
      if (uri === archiveUri)
        return wrap(storage, (target, prop) =>
          prop === 'upload'
            ? async (key: string, file: string) => {
                if (key !== 'feed/a.csv') return target.upload(key, file);
                await bAtDelete;
                return target.write(key, 'bytes lost in transit\n');
              }
            : undefined,
        );
      if (uri !== setup.job.source.uri) return storage;
      return wrap(storage, (target, prop) =>
        prop === 'delete'
          ? async (keys: string[]) => {
              if (keys.includes('feed/b.csv')) {
                bDeleting();
                await new Promise((resolve) => setTimeout(resolve, 300));
              }
              return target.delete(keys);
            }
          : undefined,
      );
    };
    const outcome = await cleanupJob(
      setup.job,
      { storage: setup.storage, logger: silentLogger(), tty: false, openStorage },
      { apply: true, now: later() },
    );
    expect(outcome.ok).toBe(false);
    expect(String((outcome as { error: unknown }).error)).toMatch(/does not hold the bytes/);
    const recordText = await readFile(join(setup.job.target.uri, outcome.report.record!), 'utf8');
    const reported = outcome.report.files.map((f) => f.key);
    await new Promise((resolve) => setTimeout(resolve, 500)); // anything still under way ends
    expect(await keysOf(src)).toEqual(['feed/a.csv']);
    const record = JSON.parse(recordText) as { done: Array<{ key: string }> };
    expect(record.done.map((d) => d.key)).toEqual(['feed/b.csv']);
    expect(reported).toEqual(['feed/b.csv']);
  });

  it('validate refuses a move target inside the source or the table', () => {
    const target = mergeTarget('/data/table');
    const source = (move: string) => ({
      uri: '/data/landing',
      discover: { by: 'modified' },
      afterLoad: { move },
    });
    expect(() => makeConfig({ source: source('/data/landing/archive'), target })).toThrow(
      ConfigError,
    );
    expect(() => makeConfig({ source: source('/data/table/old'), target })).toThrow(
      /must not be inside target\.uri/,
    );
    expect(() => makeConfig({ source: source('/data'), target })).toThrow(
      /must not be inside source\.uri/,
    );
    expect(() =>
      makeConfig({
        source: { ...source('/data/archive'), afterLoad: { move: '/data/archive', delete: true } },
        target,
      }),
    ).toThrow(/exactly one of move/);
    // Resolved against the config's folder: a relative target inside an absolute source.
    expect(() =>
      validateConfig(
        { jobs: [{ name: 'orders', source: source('archive'), target }] },
        'test config',
        { baseDir: '/data/landing' },
      ),
    ).toThrow(/afterLoad\.move.*must not be inside source\.uri/s);
    expect(
      makeConfig({ source: source('/data/archive'), target }).job.source.afterLoad,
    ).toMatchObject({ move: '/data/archive', after: 30 * DAY, atEndOfRun: false });
  });
});

describe('the cleanup command, and cleanup at the end of a run', () => {
  /** A config file of one job on `dir` into `table`, its afterLoad deleting at once. */
  async function configFile(dir: string, table: string, atEndOfRun: boolean): Promise<string> {
    const config = join(await tempDir('cfg', dirs), 'tidemark.json');
    const source = {
      uri: dir,
      discover: { by: 'modified', settle: '1s' },
      afterLoad: { delete: true, after: '0s', atEndOfRun },
    };
    await writeFile(
      config,
      JSON.stringify({ jobs: [{ name: 'orders', source, target: mergeTarget(table) }] }),
    );
    return config;
  }

  it('is a dry run unless --apply (text and --json)', async () => {
    const { dir, src, setup } = await loaded({ delete: true, after: '0s' });
    const config = await configFile(dir, setup.job.target.uri, false);
    const text = await cli(['cleanup', '-c', config]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(
      /^orders: cleanup dry-run: would delete 2 files .* nothing changed \(--apply acts\)\n {4}delete feed\/a\.csv/,
    );
    const json = JSON.parse(
      (await cli(['cleanup', '-c', config, '--json'])).stdout,
    ) as CleanupReport;
    expect(json).toMatchObject({
      status: 'dry-run',
      files: [{ key: 'feed/a.csv' }, { key: 'feed/b.csv' }],
    });
    expect(await keysOf(src)).toEqual(['feed/a.csv', 'feed/b.csv']);
    expect((await cli(['cleanup', '-c', config, '--apply', '--dry-run'])).stdout).toMatch(
      /dry-run/,
    );
    const applied = await cli(['cleanup', '-c', config, '--apply']);
    expect(applied.stdout).toMatch(/^orders: cleanup cleaned: deleted 2 files/);
    expect(await keysOf(src)).toEqual([]);
    expect(
      await readdir(join(setup.job.target.uri, '_tidemark', 'cleanup', 'orders')),
    ).toHaveLength(1);
  });

  it('atEndOfRun: a run cleans up what it loaded; a dry run does not', async () => {
    const dir = await tempDir('src', dirs);
    const src = new LocalStorage(dir);
    const config = await configFile(dir, await tempDir('t', dirs), true);
    await land(src, session, 'feed/a.csv', orders([1, 'a', 1]));
    expect((await cli(['run', '-c', config, '--dry-run'])).code).toBe(0);
    expect(await keysOf(src)).toEqual(['feed/a.csv']);
    const first = await cli(['run', '-c', config, '--json']);
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({
      status: 'succeeded',
      filesLoaded: 1,
      cleanup: { status: 'cleaned', action: 'delete', files: 1, left: [] },
    });
    expect(await keysOf(src)).toEqual([]);
    await land(src, session, 'feed/b.csv', orders([2, 'b', 1]));
    const second = await cli(['run', '-c', config]);
    expect(second.stdout).toMatch(/\n {2}cleanup: cleaned, deleted 1 source file \(/);
    expect(await keysOf(src)).toEqual([]);
    const job = JSON.parse(await readFile(config, 'utf8')) as {
      jobs: Array<Record<string, unknown>>;
    };
    expect(
      (await readTarget(session, makeConfig(job.jobs[0]!))).rows.map((r) => r.order_id),
    ).toEqual([1, 2]);
  });
});

describe('cleanup on S3 (s3rver)', () => {
  it('moves loaded files to an archive prefix and deletes nothing else; a rerun is a no-op', async () => {
    const zone = s3.landingZone('cleanup');
    const archiveUri = zone.uri.replace(/\/$/, '') + '-archive/';
    const setup = makeConfig(
      {
        source: {
          uri: zone.uri,
          discover: { by: 'modified', settle: '1s' },
          afterLoad: { move: archiveUri, after: '30d' },
        },
        target: mergeTarget(await tempDir('t', dirs)),
      },
      zone.storageConfig,
    );
    await land(zone.source, session, 'feed/a.csv', orders([1, 'a', 1]));
    await land(zone.source, session, 'feed/b.csv', orders([2, 'b', 1]));
    expect(await run(setup)).toMatchObject({ filesLoaded: 2 });
    await land(zone.source, session, 'feed/b.csv', orders([2, 'b2', 2])); // rewritten, not loaded
    const bytes = new TextDecoder().decode((await zone.source.read('feed/a.csv'))!);
    const dry = await cleanup(setup, false);
    expect(dry.files.map((f) => f.key)).toEqual(['feed/a.csv']);
    expect(await keysOf(zone.source)).toEqual(['feed/a.csv', 'feed/b.csv']);
    const done = await cleanup(setup, true);
    expect(done).toMatchObject({
      status: 'cleaned',
      files: [{ key: 'feed/a.csv', action: 'moved' }],
    });
    expect(done.skipped).toEqual([
      { key: 'feed/b.csv', reason: 'changed since its load', batch: 1 },
    ]);
    const archive = s3.makeStorage(`${zone.prefix.replace(/\/$/, '')}-archive`);
    expect(new TextDecoder().decode((await archive.read('feed/a.csv'))!)).toBe(bytes);
    expect(await keysOf(zone.source)).toEqual(['feed/b.csv']);
    expect(await cleanup(setup, true)).toMatchObject({ status: 'nothing-to-do' });
    expect(await keysOf(archive)).toEqual(['feed/a.csv']);
  });
});
