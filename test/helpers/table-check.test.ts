/**
 * The table invariant check used by the crash, kill and race tests must itself catch broken
 * tables: a corrupt deletion-vector file and a missing data file are reported, a valid table
 * written with deletion vectors is not.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalStorage } from '../../src/storage/local.js';
import {
  checkTarget,
  cleanup,
  DuckSession,
  land,
  makeConfig,
  mergeTarget,
  orders,
  run,
  tempDir,
} from '../job/helpers.js';

let session: DuckSession;
const dirs: string[] = [];
beforeAll(async () => {
  session = await DuckSession.open();
});
afterAll(async () => {
  session?.close();
  await cleanup(dirs);
});

/** A job whose second run updates one row of a file by deletion vector. */
async function tableWithDv() {
  const root = await tempDir('check-src', dirs);
  const target = await tempDir('check-t', dirs);
  const setup = makeConfig({
    source: { uri: root, discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}' } },
    target: { ...mergeTarget(target), rewriteFilesBelow: 0 },
  });
  const source = new LocalStorage(root);
  await land(
    source,
    session,
    '2025/03/01/a.csv',
    orders([1, 'placed', 1], [2, 'placed', 1], [3, 'placed', 1]),
  );
  await run(setup);
  await land(source, session, '2025/03/02/b.csv', orders([2, 'paid', 2]));
  await run(setup);
  return { setup, target };
}

async function filesUnder(root: string, suffix: string): Promise<string[]> {
  const all = await fsp.readdir(root, { recursive: true });
  return all.filter((f) => f.endsWith(suffix) && !f.startsWith('_')).map((f) => path.join(root, f));
}

describe('the table invariant check (test/helpers/table-check.ts)', () => {
  it('passes a valid table with a deletion vector', async () => {
    const { setup } = await tableWithDv();
    const check = await checkTarget(session, setup);
    expect(check).toMatchObject({ problems: [], filesWithDv: 1, versionsWithDv: 1, versions: 2 });
  });

  it('reports a deletion-vector file whose bytes were damaged (fault injection: bytes overwritten)', async () => {
    const { setup, target } = await tableWithDv();
    const [bin] = await filesUnder(target, '.bin');
    const bytes = await fsp.readFile(bin!);
    bytes[bytes.length - 1]! ^= 0xff; // the CRC no longer matches
    await fsp.writeFile(bin!, bytes);
    const { problems } = await checkTarget(session, setup);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^v1: .*\.parquet: its DV does not load: .*CRC/);
  });

  it('reports a live data file that is gone (fault injection: file deleted)', async () => {
    const { setup, target } = await tableWithDv();
    const parquet = await filesUnder(target, '.parquet');
    await fsp.rm(parquet[0]!);
    const { problems } = await checkTarget(session, setup);
    expect(problems.join('\n')).toMatch(/is live but missing or unreadable/);
  });
});
