/**
 * `source.include` / `source.exclude`: globs against the key relative to the source root; a
 * file left out is a decision with reason `excluded`, never an error, and never loaded.
 */
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { planModified } from '../../src/discovery/by-modified.js';
import { planPartitions } from '../../src/discovery/by-partition.js';
import { discover } from '../../src/discovery/discover.js';
import { compileKeyFilter, globProblem, SELECT_ALL } from '../../src/discovery/filter.js';
import { parseConfig } from '../../src/config/load.js';
import { resolveDiscovery } from '../../src/discovery/config.js';
import { ConfigError } from '../../src/errors.js';
import { discoveryConfigOf } from '../../src/job/open.js';
import { LocalStorage } from '../../src/storage/local.js';
import {
  listingOf,
  loadedKeys,
  modifiedSettings,
  partitionSettings,
  reasons,
  walkOf,
  type FakeFile,
} from './fixtures.js';

const file = (key: string, modified = '2026-03-01T10:00:00Z'): FakeFile => ({ key, modified });

describe('compileKeyFilter', () => {
  it('selects every key without patterns', () => {
    expect(compileKeyFilter({})).toBe(SELECT_ALL);
    expect(compileKeyFilter({ include: [], exclude: [] })('anything/at/all.txt')).toBe(true);
  });

  it('a pattern without / matches the file name at any depth; one with / matches the whole key', () => {
    const byName = compileKeyFilter({ include: ['*.csv'] });
    expect(['a.csv', '2026/03/01/a.csv', 'deep/er/x.csv'].map(byName)).toEqual([true, true, true]);
    expect(['notes.txt', '2026/03/01/notes.txt', 'a.csv.gz'].map(byName)).toEqual([
      false,
      false,
      false,
    ]);

    const byPath = compileKeyFilter({ include: ['2026/**/*.csv'] });
    expect(
      ['2026/03/01/a.csv', '2026/a.csv', '2025/03/01/a.csv', 'x/2026/03/a.csv'].map(byPath),
    ).toEqual([true, true, false, false]);
    const oneLevel = compileKeyFilter({ include: ['orders/*.csv'] });
    expect(['orders/a.csv', 'orders/sub/a.csv'].map(oneLevel)).toEqual([true, false]);
  });

  it('exclude wins over include; braces and several patterns work', () => {
    const f = compileKeyFilter({
      include: ['*.{csv,csv.gz}', '*.parquet'],
      exclude: ['*.tmp.csv', 'quarantine/**'],
    });
    expect(
      ['a.csv', 'a.csv.gz', 'p/b.parquet', 'a.tmp.csv', 'quarantine/x/a.csv', 'readme.md'].map(f),
    ).toEqual([true, true, true, false, false, false]);
    const onlyExclude = compileKeyFilter({ exclude: ['notes.txt'] });
    expect(['a/notes.txt', 'a/data.csv'].map(onlyExclude)).toEqual([false, true]);
  });

  it('refuses patterns that could never match a key, naming the field', () => {
    expect(globProblem('*.csv')).toBeNull();
    expect(globProblem('')).toBe('is empty');
    expect(globProblem('/2026/*.csv')).toMatch(
      /never matches: patterns are relative to source.uri/,
    );
    expect(globProblem('./*.csv')).toMatch(/never matches/);
    let err: unknown;
    try {
      compileKeyFilter({ include: ['*.csv'], exclude: ['ok', '/abs'] });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).context.field).toBe('source.exclude[1]');
  });
});

describe('from the job config', () => {
  it('source.include / source.exclude reach discovery (a single pattern may be written without a list)', () => {
    const cfg = parseConfig(`
jobs:
  - name: a
    source: { uri: ./s, include: "*.csv", exclude: [tmp/**], discover: { by: partition, layout: "{yyyy}/{mm}/{dd}" } }
    target: { uri: ./t, mode: append }
`);
    const config = discoveryConfigOf(cfg.jobs[0]!);
    expect(config).toMatchObject({ include: ['*.csv'], exclude: ['tmp/**'] });
    const { selects } = resolveDiscovery(config);
    expect(['2026/03/01/a.csv', '2026/03/01/notes.txt', 'tmp/a.csv'].map(selects)).toEqual([
      true,
      false,
      false,
    ]);
  });
});

describe('the planners report excluded files', () => {
  it('modification time: a stray notes.txt is excluded, not loaded, and the rest loads', () => {
    const settings = modifiedSettings({ include: ['*.csv'] });
    const plan = planModified(
      listingOf('2026-03-01T12:00:00Z', [
        file('a.csv'),
        file('notes.txt'),
        file('sub/b.csv'),
        file('_SUCCESS'),
      ]),
      settings,
      null,
    );
    expect(loadedKeys(plan)).toEqual(['a.csv', 'sub/b.csv']);
    expect(reasons(plan)).toEqual({
      'a.csv': 'new',
      'notes.txt': 'excluded',
      'sub/b.csv': 'new',
      _SUCCESS: 'not data',
    });
    // The excluded file is not remembered: changing the globs later would load it.
    expect(plan.nextState).toMatchObject({ loaded: [{ key: 'a.csv' }, { key: 'sub/b.csv' }] });
  });

  it('partitions: excluded files inside and outside partition folders; not-data still comes first', () => {
    const settings = partitionSettings({
      layout: '{yyyy}/{mm}/{dd}',
      exclude: ['*.txt', '2026/03/01/skip-*'],
    });
    const files = [
      file('2026/03/01/a.csv'),
      file('2026/03/01/notes.txt'),
      file('2026/03/01/skip-me.csv'),
      file('2026/03/01/_x.txt'),
      file('README.txt'),
      file('stray.csv'),
    ];
    const plan = planPartitions(
      walkOf(settings.layout, '2026-03-01T12:00:00Z', files),
      settings,
      null,
    );
    expect(loadedKeys(plan)).toEqual(['2026/03/01/a.csv']);
    expect(reasons(plan)).toEqual({
      '2026/03/01/a.csv': 'new',
      '2026/03/01/notes.txt': 'excluded',
      '2026/03/01/skip-me.csv': 'excluded',
      '2026/03/01/_x.txt': 'not data',
      'README.txt': 'excluded',
      'stray.csv': 'not in a partition folder',
    });
  });

  it('include does not hide the _SUCCESS marker from requireSuccessMarker', () => {
    const settings = partitionSettings({
      layout: '{yyyy}/{mm}/{dd}',
      requireSuccessMarker: true,
      include: ['*.csv'],
    });
    const plan = planPartitions(
      walkOf(settings.layout, '2026-03-02T12:00:00Z', [
        file('2026/03/01/a.csv'),
        file('2026/03/01/_SUCCESS'),
      ]),
      settings,
      null,
    );
    expect(loadedKeys(plan)).toEqual(['2026/03/01/a.csv']);
  });
});

describe('discover with include on a local folder', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    await Promise.all(dirs.map((d) => fsp.rm(d, { recursive: true, force: true })));
  });

  it('lists everything, plans only the included files, and reports the others as excluded', async () => {
    const root = await fsp.mkdtemp(path.join(os.tmpdir(), 'tidemark-filter-'));
    dirs.push(root);
    const t = (Date.now() - 3_600_000) / 1000;
    for (const key of ['2026/03/01/a.csv', '2026/03/01/notes.txt', 'notes.txt']) {
      const p = path.join(root, key);
      await fsp.mkdir(path.dirname(p), { recursive: true });
      await fsp.writeFile(p, 'id\n1\n');
      await fsp.utimes(p, t, t);
    }
    const plan = await discover(
      new LocalStorage(root),
      { by: 'modified', include: ['*.csv'] },
      null,
    );
    expect(plan.files.map((f) => f.key)).toEqual(['2026/03/01/a.csv']);
    expect(
      plan.decisions
        .filter((d) => d.reason === 'excluded')
        .map((d) => d.key)
        .sort(),
    ).toEqual(['2026/03/01/notes.txt', 'notes.txt']);
  });
});
