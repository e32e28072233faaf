/**
 * A value a partition column cannot keep is refused, never changed: Delta stores an empty
 * partition value as NULL (Spark, delta-rs and Polars read `''` back as NULL; interop/ found
 * tidemark storing a source's `''` so), so a row with `''` in a string partition column fails its
 * batch naming the file, row and column, and nothing commits; under `onBadFile: quarantine` the
 * file is set aside and the rest loads. NULL still loads as NULL. Merge (with and without
 * deletion vectors) and append; the real job over local CSV landing folders, real DuckDB, the
 * Delta log read back by a fresh reader.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BadFileError } from '../../src/errors.js';
import {
  DuckSession,
  makeConfig,
  readTarget,
  run,
  runOutcome,
  sessionPerFile,
  tempDir,
} from './helpers.js';

let session: DuckSession;
const dirs = sessionPerFile((s) => (session = s), { threads: 2 });

async function landCsv(landing: string, key: string, text: string): Promise<string> {
  const file = path.join(landing, ...key.split('/'));
  await fsp.mkdir(path.dirname(file), { recursive: true });
  await fsp.writeFile(file, text);
  return file;
}

const byDay = { by: 'partition', layout: '{yyyy}/{mm}/{dd}' };

describe.each([
  {
    label: 'merge, rewritten files',
    target: { key: ['order_id'], orderBy: 'seq', deletionVectors: false },
  },
  {
    label: 'merge, deletion vectors',
    target: { key: ['order_id'], orderBy: 'seq', deletionVectors: true, rewriteFilesBelow: 0 },
  },
  { label: 'append', target: { mode: 'append' } },
])('an empty string in a string partition column ($label)', ({ target }) => {
  async function job(extra: Record<string, unknown> = {}) {
    const dir = await tempDir('partition-values', dirs);
    const landing = path.join(dir, 'landing');
    const setup = makeConfig({
      source: { uri: landing, discover: byDay },
      target: { uri: path.join(dir, 'table'), partitionBy: ['status'], ...target },
      ...extra,
    });
    return { landing, setup };
  }

  it('fails the batch naming file, row and column; nothing commits, the table keeps its rows', async () => {
    const { landing, setup } = await job();
    // An unquoted empty field is NULL (RFC 4180): a NULL partition value, which Delta stores.
    await landCsv(landing, '2026/03/01/a.csv', 'order_id,status,seq\n1,new,1\n2,,1\n');
    expect(await run(setup)).toMatchObject({ status: 'succeeded', tableVersion: 0 });
    // A quoted empty field is an empty string: Delta would store it as NULL.
    const bad = await landCsv(
      landing,
      '2026/03/02/b.csv',
      'order_id,status,seq\n3,paid,1\n4,"",1\n',
    );
    const outcome = await runOutcome(setup);
    expect(outcome.ok).toBe(false);
    const error = (outcome as { error: Error }).error;
    expect(error).toBeInstanceOf(BadFileError);
    expect(error.message).toContain('has an empty string in partition column "status"');
    expect(error.message).toContain(bad);
    expect(error.message).toMatch(/row 2\b/);
    expect((error as BadFileError).context).toMatchObject({ column: 'status', row: 2 });
    const view = await readTarget(session, setup);
    expect(view.snapshot?.version).toBe(0);
    expect(view.rows.map((r) => [r.order_id, r.status])).toEqual(
      expect.arrayContaining([
        [1, 'new'],
        [2, 'null'],
      ]),
    );
    expect(view.rows).toHaveLength(2);
  });

  it('under onBadFile: quarantine sets the file aside and loads the others', async () => {
    const { landing, setup } = await job({ onBadFile: 'quarantine', maxFilesPerBatch: 10 });
    await landCsv(landing, '2026/03/01/a.csv', 'order_id,status,seq\n1,new,1\n');
    const bad = await landCsv(landing, '2026/03/01/b.csv', 'order_id,status,seq\n2,"",1\n');
    const report = await run(setup);
    expect(report).toMatchObject({ status: 'succeeded', tableVersion: 0 });
    expect(JSON.stringify(report)).toContain(path.basename(bad));
    const view = await readTarget(session, setup);
    expect(view.rows.map((r) => [r.order_id, r.status])).toEqual([[1, 'new']]);
  });
});
