/**
 * The source survey (src/discovery/survey.ts): the pure verdict on one level's listing and its
 * words, then `surveySource` on real local folders, counting its LIST requests, and `discover`
 * attaching a survey exactly when its walk found no partition.
 */
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { discover } from '../../src/discovery/discover.js';
import { Layout } from '../../src/discovery/layout.js';
import {
  describeMismatch,
  judgeLevel,
  surveySource,
  templateOf,
  type LayoutMismatch,
} from '../../src/discovery/survey.js';
import { LocalStorage } from '../../src/storage/local.js';
import { countingStorage } from '../helpers/counting-storage.js';
import { objectOf } from './fixtures.js';

const daily = Layout.parse('{yyyy}/{mm}/{dd}');
const hourly = Layout.parse('{yyyy}/{mm}/{dd}/{HH}');
const dt = Layout.parse('dt={yyyy}-{mm}-{dd}');
const root = { prefix: '', fields: {} };
const file = (key: string) => objectOf({ key, modified: '2026-11-30T00:00:00Z' });

describe('judgeLevel (pure)', () => {
  it('descends into the newest folder that fits the level', () => {
    const v = judgeLevel(daily, 0, root, { folders: ['2025/', '2026/', 'archive/'], objects: [] });
    expect(v).toEqual({ descend: { prefix: '2026/', fields: { year: 2026 } } });
  });

  it('has nothing to judge in an empty folder, or one holding only hidden entries and excluded files', () => {
    expect(judgeLevel(daily, 0, root, { folders: [], objects: [] })).toEqual({ empty: true });
    const onlyHidden = {
      folders: ['_tidemark/', '.git/'],
      objects: [file('_SUCCESS'), file('README.md')],
    };
    expect(judgeLevel(daily, 0, root, onlyHidden, (k) => k.endsWith('.csv'))).toEqual({
      empty: true,
    });
  });

  it('reports folders that do not fit, with samples and the template they look like: dt={yyyy}-{mm}-{dd} over 2026/', () => {
    const v = judgeLevel(dt, 0, root, {
      folders: ['2025/', '2026/', 'logs/', 'tmp/'],
      objects: [],
    });
    expect(v).toEqual({
      mismatch: {
        layout: 'dt={yyyy}-{mm}-{dd}',
        level: 0,
        template: 'dt={yyyy}-{mm}-{dd}',
        parent: '',
        folders: ['2025/', '2026/', 'logs/'],
        folderCount: 4,
        files: [],
        fileCount: 0,
        shorterLayout: null,
        levelLooksLike: '{yyyy}',
      },
    });
    expect(describeMismatch((v as { mismatch: LayoutMismatch }).mismatch)).toBe(
      "layout 'dt={yyyy}-{mm}-{dd}' matches no partition folder: it expects folders named like 'dt={yyyy}-{mm}-{dd}' at the source root, " +
        "but found 4 folders (2025/, 2026/, logs/, …); those look like '{yyyy}'",
    );
  });

  it('an hourly layout over daily folders: files where hour folders should be; the folders stop at the day level', () => {
    const parent = { prefix: '2026/11/30/', fields: { year: 2026, month: 11, day: 30 } };
    const v = judgeLevel(hourly, 3, parent, {
      folders: [],
      objects: ['a.csv', 'b.csv', 'c.csv', 'd.csv'].map((n) => file(`2026/11/30/${n}`)),
    });
    const m = (v as { mismatch: LayoutMismatch }).mismatch;
    expect(m).toMatchObject({
      level: 3,
      template: '{HH}',
      fileCount: 4,
      folderCount: 0,
      shorterLayout: '{yyyy}/{mm}/{dd}',
    });
    expect(describeMismatch(m)).toBe(
      "layout '{yyyy}/{mm}/{dd}/{HH}' matches no partition folder: it expects folders named like '{HH}' in 2026/11/30/, " +
        'but found 4 files and no folder (2026/11/30/a.csv, 2026/11/30/b.csv, 2026/11/30/c.csv, …): ' +
        "the folders stop at the day level; for daily folders use layout '{yyyy}/{mm}/{dd}'",
    );
  });

  it('files alone at the source root: partition discovery needs date folders', () => {
    const v = judgeLevel(daily, 0, root, { folders: [], objects: [file('a.csv')] });
    expect(describeMismatch((v as { mismatch: LayoutMismatch }).mismatch)).toMatch(
      /found 1 file and no folder \(a\.csv\): .*discover\.by: modified/,
    );
  });

  it('an impossible date does not fit (2026/13/)', () => {
    const v = judgeLevel(
      daily,
      1,
      { prefix: '2026/', fields: { year: 2026 } },
      { folders: ['2026/13/'], objects: [] },
    );
    expect(v).toMatchObject({ mismatch: { folders: ['2026/13/'], levelLooksLike: '{mm}' } });
  });
});

describe('templateOf (pure)', () => {
  it.each([
    ['2026', 0, '{yyyy}'],
    ['dt=2026-11-30', 0, 'dt={yyyy}-{mm}-{dd}'],
    ['2026-11-30', 0, '{yyyy}-{mm}-{dd}'],
    ['hour=07', 3, 'hour={HH}'],
    ['11', 1, '{mm}'],
    ['archive', 0, null],
    ['v2', 0, null],
    ['12345', 0, null],
  ] as const)('%s after %i units → %s', (name, units, expected) => {
    expect(templateOf(name, units)).toBe(expected);
  });
});

describe('surveySource on local folders', () => {
  const dirs: string[] = [];
  let dir: string;
  beforeEach(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'tidemark-survey-'));
    dirs.push(dir);
  });
  afterAll(async () => {
    await Promise.all(dirs.map((d) => fsp.rm(d, { recursive: true, force: true })));
  });
  const put = async (key: string) => {
    const f = path.join(dir, ...key.split('/'));
    await fsp.mkdir(path.dirname(f), { recursive: true });
    await fsp.writeFile(f, 'x');
  };

  it('a missing root, a root that is a file, an empty root', async () => {
    expect(await surveySource(new LocalStorage(path.join(dir, 'nope')), daily)).toMatchObject({
      root: 'missing',
      mismatch: null,
      listRequests: 0,
    });
    await put('a-file');
    expect(await surveySource(new LocalStorage(path.join(dir, 'a-file')), daily)).toMatchObject({
      root: 'file',
      listRequests: 0,
    });
    await fsp.mkdir(path.join(dir, 'empty'));
    expect(await surveySource(new LocalStorage(path.join(dir, 'empty')), daily)).toMatchObject({
      root: 'folder',
      empty: true,
      mismatch: null,
    });
    expect(await surveySource(new LocalStorage(path.join(dir, 'empty')), null)).toMatchObject({
      root: 'folder',
      empty: true,
    });
  });

  it('three years of daily folders that fit: one LIST per level, newest path only', async () => {
    for (const day of ['2024/01/01', '2025/06/15', '2026/11/29', '2026/11/30'])
      await put(`${day}/part-0.csv`);
    const storage = countingStorage(new LocalStorage(dir));
    const survey = await surveySource(storage, daily);
    expect(survey).toEqual({ root: 'folder', empty: false, mismatch: null, listRequests: 3 });
    expect(storage.calls.map((c) => c.key)).toEqual(['', '2026/', '2026/11/']);
  });

  it('finds the hourly-over-daily mismatch below the newest day', async () => {
    for (const n of ['a', 'b']) await put(`2026/11/30/${n}.csv`);
    const survey = await surveySource(new LocalStorage(dir), hourly);
    expect(survey.mismatch).toMatchObject({
      parent: '2026/11/30/',
      fileCount: 2,
      shorterLayout: '{yyyy}/{mm}/{dd}',
    });
  });

  it('a literal first level the source does not have (data/{yyyy}/{mm}/{dd} over 2026/)', async () => {
    await put('2026/11/30/a.csv');
    const survey = await surveySource(new LocalStorage(dir), Layout.parse('data/{yyyy}/{mm}/{dd}'));
    expect(survey.mismatch).toMatchObject({
      level: 0,
      template: 'data',
      folders: ['2026/'],
      levelLooksLike: '{yyyy}',
    });
  });
});

describe('discover attaches a survey only when its walk found no partition', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    await Promise.all(dirs.map((d) => fsp.rm(d, { recursive: true, force: true })));
  });

  it('none when partitions are found; the mismatch when the layout fits nothing', async () => {
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'tidemark-survey-'));
    dirs.push(dir);
    await fsp.mkdir(path.join(dir, '2026', '11', '30'), { recursive: true });
    await fsp.writeFile(path.join(dir, '2026', '11', '30', 'a.csv'), 'x');
    const storage = new LocalStorage(dir);
    const fits = await discover(storage, { by: 'partition', layout: '{yyyy}/{mm}/{dd}' }, null);
    expect(fits.survey).toBeUndefined();
    expect(fits.files.map((f) => f.key)).toEqual(['2026/11/30/a.csv']);
    const wrong = await discover(storage, { by: 'partition', layout: 'dt={yyyy}-{mm}-{dd}' }, null);
    expect(wrong.files).toEqual([]);
    expect(wrong.survey?.mismatch).toMatchObject({ folders: ['2026/'], levelLooksLike: '{yyyy}' });
    const byModified = await discover(
      new LocalStorage(path.join(dir, '2026', '11', '30')),
      { by: 'modified' },
      null,
    );
    expect(byModified.survey).toBeUndefined();
  });
});
