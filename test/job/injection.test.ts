/**
 * Nothing from outside reaches SQL unescaped (SPEC §7): object keys, column names, key values,
 * the key / orderBy / partitionBy config and partition values full of quotes, semicolons,
 * comment markers, unicode, spaces, glob characters and `../` load as literal data through the
 * real job, and a deleteWhen with a second statement is refused. Object keys never escape the
 * spool folder.
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withTableScan } from '../../src/engine/scan.js';
import { MergeInputError } from '../../src/errors.js';
import { spoolName } from '../../src/engine/local-copies.js';
import { openTarget } from '../../src/job/open.js';
import { LocalStorage } from '../../src/storage/local.js';
import type { Storage } from '../../src/storage/storage.js';
import type { S3rverHandle } from '../helpers/s3rver.js';
import { tableRows } from './drift-helpers.js';
import {
  closeS3JobEnv,
  DuckSession,
  makeConfig,
  openS3JobEnv,
  readTarget,
  run,
  tempDir,
} from './helpers.js';
import { openTable, scanSource } from '../../scripts/lib/tables.js';

let session: DuckSession;
let s3: S3rverHandle;
const dirs: string[] = [];

beforeAll(async () => {
  ({ s3, session } = await openS3JobEnv({ threads: 2 }));
});
afterAll(() => closeS3JobEnv(s3, session, dirs));

const byDay = { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 2 };

/** File names that would break SQL, a shell or a glob if spliced in raw. */
const NASTY_FILE_NAMES = [
  "x'); DROP TABLE t; --.csv",
  'o"rders; v2.csv',
  'ünïcødé 日本 ✓.csv',
  'with  spaces .csv',
  'glob[1]*?{a,b}.csv',
  'x..y.csv',
  '%2e%2e%2fescaped.csv',
];

/** Key values of the same kind. */
const NASTY_VALUES = [
  "o'brien",
  'a"b',
  'x; DROP TABLE t; --',
  '../../etc/passwd',
  'ünï 日本',
  ' spaced ',
  '\\backslash',
  '*?[glob]',
];

function csvField(v: string): string {
  return `"${v.replaceAll('"', '""')}"`;
}

interface Zone {
  source: Storage;
  uri: string;
  storageConfig: Record<string, unknown>;
  target: string;
}

async function zoneOn(kind: 'local' | 's3rver'): Promise<Zone> {
  if (kind === 'local') {
    const dir = await tempDir('inj-src', dirs);
    const source = new LocalStorage(dir);
    return { source, uri: source.uri, storageConfig: {}, target: await tempDir('inj-t', dirs) };
  }
  const { source, uri, storageConfig } = s3.landingZone('inj');
  return {
    source,
    uri,
    storageConfig: { ...storageConfig, singleWriter: true },
    target: `s3://${s3.bucket}/lake-${randomUUID()}/t`,
  };
}

describe.each(['local', 's3rver'] as const)('object keys and key values, source on %s', (kind) => {
  it('files with quotes, semicolons, unicode, spaces and glob characters in their names load; lineage names them literally', async () => {
    const zone = await zoneOn(kind);
    const setup = makeConfig(
      {
        source: { uri: zone.uri, discover: byDay },
        target: { uri: zone.target, key: ['id'], orderBy: 'seq' },
      },
      zone.storageConfig,
    );
    for (const [i, name] of NASTY_FILE_NAMES.entries())
      await zone.source.write(`2025/03/01/${name}`, `id,seq\nf${i},1\n`);
    // A sibling a glob in the name would also match: it must not be read twice.
    await zone.source.write('2025/03/01/glob1xa.csv', 'id,seq\nsibling,1\n');
    const report = await run(setup);
    expect(report).toMatchObject({
      status: 'succeeded',
      filesLoaded: NASTY_FILE_NAMES.length + 1,
      rowsRead: NASTY_FILE_NAMES.length + 1,
    });
    const table = await readTarget(session, setup);
    const files = await tableFiles(setup);
    expect(files).toEqual(
      expect.arrayContaining(NASTY_FILE_NAMES.map((n) => `${zone.uri}2025/03/01/${n}`)),
    );
    expect(table.snapshot!.version).toBe(0);
  });

  it('key values with quotes, semicolons, `../`, unicode and spaces insert, then update by key', async () => {
    const zone = await zoneOn(kind);
    const setup = makeConfig(
      {
        source: { uri: zone.uri, discover: byDay },
        target: { uri: zone.target, key: ['id'], orderBy: 'seq' },
      },
      zone.storageConfig,
    );
    await zone.source.write(
      '2025/03/01/a.csv',
      `id,seq,v\n${NASTY_VALUES.map((v) => `${csvField(v)},1,old`).join('\n')}\n`,
    );
    await run(setup);
    await zone.source.write(
      '2025/03/02/b.ndjson',
      NASTY_VALUES.map((id) => JSON.stringify({ id, seq: 2, v: 'new' })).join('\n') + '\n',
    );
    expect(await run(setup)).toMatchObject({
      status: 'succeeded',
      updated: NASTY_VALUES.length,
      inserted: 0,
    });
    const rows = await tableRows(session, setup, 'id');
    expect(rows.map((r) => [r['id'], r['v']])).toEqual(
      [...NASTY_VALUES].sort(byCodeUnits).map((v) => [v, 'new']),
    );
  });
});

describe('column names and config values', () => {
  it('column names with quotes, spaces and SQL create the table and load again (the typed path)', async () => {
    const zone = await zoneOn('local');
    const setup = makeConfig(
      {
        source: { uri: zone.uri, discover: byDay },
        target: { uri: zone.target, key: ['id'], orderBy: 'seq' },
      },
      {},
    );
    const header = `id,seq,${csvField(`it's "quoted"`)},${csvField('my col')},${csvField('a"; DROP TABLE t; --')}`;
    await zone.source.write('2025/03/01/a.csv', `${header}\n1,1,q,s,d\n`);
    await run(setup);
    await zone.source.write('2025/03/02/b.csv', `${header}\n1,2,q2,s2,7\n2,1,x,y,z\n`);
    expect(await run(setup)).toMatchObject({ status: 'succeeded', updated: 1, inserted: 1 });
    const table = await readTarget(session, setup);
    expect(table.columns).toEqual(
      expect.arrayContaining([`it's "quoted"`, 'my col', 'a"; DROP TABLE t; --']),
    );
    expect(await tableRows(session, setup, 'id')).toEqual([
      { id: '1', seq: '2', [`it's "quoted"`]: 'q2', 'my col': 's2', 'a"; DROP TABLE t; --': '7' },
      { id: '2', seq: '1', [`it's "quoted"`]: 'x', 'my col': 'y', 'a"; DROP TABLE t; --': 'z' },
    ]);
  });

  it('key, orderBy and partitionBy columns named with SQL, and partition values with quotes, slashes and `=`', async () => {
    const zone = await zoneOn('s3rver');
    const key = 'k"; DROP TABLE x; --';
    const orderBy = "o'rder by; --";
    const part = 'reg"ion';
    const setup = makeConfig(
      {
        source: { uri: zone.uri, discover: byDay },
        target: { uri: zone.target, key: [key], orderBy, partitionBy: [part] },
      },
      zone.storageConfig,
    );
    const regions = ["o'brien", 'a"b', 'x=y/z', '%2F..%2F', '日本', ' '];
    const lines = (seq: number, v: string) =>
      regions
        .map((r, i) => JSON.stringify({ [key]: `k${i}`, [orderBy]: seq, [part]: r, v }))
        .join('\n') + '\n';
    await zone.source.write('2025/03/01/a.ndjson', lines(1, 'old'));
    await run(setup);
    await zone.source.write('2025/03/02/b.ndjson', lines(2, 'new'));
    expect(await run(setup)).toMatchObject({
      status: 'succeeded',
      updated: regions.length,
      inserted: 0,
    });
    const table = await readTarget(session, setup);
    expect(table.snapshot!.partitionColumns).toEqual([part]);
    expect(new Set(table.snapshot!.files.map((f) => f.partitionValues[part]))).toEqual(
      new Set(regions),
    );
    const rows = await tableRows(session, setup, ident(key));
    expect(rows.map((r) => [r[key], r[part], r['v']])).toEqual(
      regions.map((r, i) => [`k${i}`, r, 'new']),
    );
  });

  it('a deleteWhen with a second statement is refused before anything is loaded', async () => {
    const zone = await zoneOn('local');
    const setup = makeConfig(
      {
        source: { uri: zone.uri, discover: byDay },
        target: { uri: zone.target, key: ['id'], orderBy: 'seq', deleteWhen: '1=1; DROP TABLE x' },
      },
      {},
    );
    await zone.source.write('2025/03/01/a.csv', 'id,seq\n1,1\n');
    const err = await run(setup).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(MergeInputError);
    expect((err as MergeInputError).kind).toBe('usage');
    expect((err as Error).message).toContain('invalid deleteWhen expression "1=1; DROP TABLE x"');
    expect((await readTarget(session, setup)).snapshot).toBeNull();
  });
});

describe('object keys never escape the spool folder', () => {
  it.each([
    '../../../etc/passwd',
    '2025/03/01/../../../../root/.ssh/id_rsa',
    '..',
    'a/..',
    '/abs/path.csv',
    'x\\..\\..\\y.csv',
    '.hidden.csv.gz',
  ])('spool name of %j is one plain file name inside the spool', (key) => {
    const name = spoolName(key);
    expect(name).toMatch(/^[0-9a-f]{16}-[A-Za-z0-9._-]+$/);
    expect(name).not.toContain('/');
    expect(name.startsWith('.')).toBe(false);
    const spool = '/spool/dir';
    expect(path.dirname(path.resolve(spool, name))).toBe(spool);
    if (/\.csv(\.gz)?$/.test(key)) expect(name).toMatch(/\.csv(\.gz)?$/);
  });
});

function ident(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** DuckDB's VARCHAR order (by code points) for the BMP strings used here. */
function byCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** `_source_file` of every row of the job's table. */
async function tableFiles(setup: Parameters<typeof readTarget>[1]): Promise<string[]> {
  const storage = openTarget(setup.job, setup.storage);
  const snapshot = (await openTable(storage, session, { singleWriter: true }).snapshot())!;
  const rows = await withTableScan(session, scanSource(storage), snapshot, (rel) =>
    session.all(`SELECT _source_file AS f FROM (${rel})`),
  );
  return rows.map((r) => String(r['f']));
}
