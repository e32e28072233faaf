/**
 * Nothing changed on the way in (docs/concepts.md, Types), through the real job on local
 * folders: once the table exists, every file is read in its types through exact conversions, and
 * a text that does not spell a value of the column's type fails the batch naming file, line and
 * column (or is quarantined), with nothing committed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BadFileError } from '../../src/errors.js';
import { LocalStorage } from '../../src/storage/local.js';
import { failure } from '../helpers/cli.js';
import { putParquet, tableRows } from './drift-helpers.js';
import { cleanup, DuckSession, makeConfig, mergeTarget, readTarget, run, tempDir } from './helpers.js';

let session: DuckSession;
const dirs: string[] = [];
beforeAll(async () => {
  session = await DuckSession.open({ threads: 2 });
});
afterAll(async () => {
  session.close();
  await cleanup(dirs);
});

const byDay = { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 2 };

/** A landing zone and a merge job on it (key order_id, orderBy seq); `extra` overrides job fields, `sourceExtra` source fields. */
async function zone(extra: Record<string, unknown> = {}, sourceExtra: Record<string, unknown> = {}) {
  const sourceDir = await tempDir('types-src', dirs);
  const source = new LocalStorage(sourceDir);
  const setup = makeConfig({ source: { uri: sourceDir, discover: byDay, ...sourceExtra }, target: mergeTarget(await tempDir('types-t', dirs)), ...extra });
  return { source, setup, uri: source.uri };
}

/** A table of exact types, created from Parquet: BIGINT key and version, DECIMAL(10,2) amount. */
async function typedTable(extra: Record<string, unknown> = {}) {
  const z = await zone(extra);
  await putParquet(z.source, session, '2025/03/01/seed.parquet', `SELECT 1::BIGINT AS order_id, 1::BIGINT AS seq, 1.25::DECIMAL(10,2) AS amount, 'a' AS note`);
  await run(z.setup);
  return z;
}

describe('into an existing table, text converts only when it spells the value exactly', () => {
  const BAD: Array<[file: string, body: string, column: string]> = [
    ['underscore.csv', 'order_id,seq\n2,1\n1_000,1\n', 'order_id'],
    ['exponent.csv', 'order_id,seq\n1e3,1\n', 'order_id'],
    ['blanks.csv', 'order_id,seq\n" 42 ",1\n', 'order_id'],
    ['fraction.csv', 'order_id,seq\n7,12.5\n', 'seq'],
    ['too-wide.csv', 'order_id,seq,amount\n8,1,123456789.50\n', 'amount'],
    ['rounds.csv', 'order_id,seq,amount\n9,1,1.505\n', 'amount'],
  ];

  it('1_000 into a BIGINT key fails the batch naming file, line and column; nothing is committed', async () => {
    const z = await typedTable();
    await z.source.write('2025/03/02/ok.csv', 'order_id,seq\n1000,2\n');
    await z.source.write(`2025/03/02/${BAD[0]![0]}`, BAD[0]![1]);
    const err = await failure(run(z.setup));
    expect(err).toBeInstanceOf(BadFileError);
    expect((err as BadFileError).context).toMatchObject({ key: `${z.uri}2025/03/02/underscore.csv`, column: 'order_id', line: 3, row: 2 });
    expect(err.message).toContain('"1_000"');
    expect(err.message).toContain('line 3');
    const table = await readTarget(session, z.setup);
    expect(table.snapshot!.version).toBe(0);
    expect(table.state.discovery).toMatchObject({ watermark: '2025-03-01' });
  });

  it('under onBadFile: quarantine each such file is set aside with its line and column, and the good rows load unchanged', async () => {
    const z = await typedTable({ onBadFile: 'quarantine' });
    await z.source.write('2025/03/02/ok.csv', 'order_id,seq,amount\n1000,2,2.50\n42,2,-0.5\n');
    for (const [file, body] of BAD) await z.source.write(`2025/03/02/${file}`, body);
    const report = await run(z.setup);
    expect(report).toMatchObject({ status: 'succeeded', inserted: 2 });
    const reasons = new Map(report.quarantined!.map((q) => [q.key.replace('2025/03/02/', ''), q.reason]));
    expect([...reasons.keys()].sort()).toEqual(BAD.map(([f]) => f).sort());
    for (const [file, body, column] of BAD) {
      const line = body.split('\n').length - 1;
      expect(reasons.get(file)).toMatch(new RegExp(`of column "${column}" .*line ${line}\\b`));
    }
    expect(await tableRows(session, z.setup, 'order_id')).toEqual([
      { order_id: '1', seq: '1', amount: '1.25', note: 'a' },
      { order_id: '42', seq: '2', amount: '-0.50', note: null },
      { order_id: '1000', seq: '2', amount: '2.50', note: null },
    ]);
  });

  it('a line break inside a quoted field moves the line the error names', async () => {
    const z = await typedTable();
    await z.source.write('2025/03/02/notes.csv', 'order_id,seq,note\n2,1,"two\nlines"\n3,x,ok\n');
    const err = await failure(run(z.setup));
    expect((err as BadFileError).context).toMatchObject({ column: 'seq', line: 4, row: 2 });
  });
});

describe('one date format per job', () => {
  /** Three days, one file each, all holding 01/02/2026; the third also 13/02/2026, which only reads day first. */
  async function threeDays(z: Awaited<ReturnType<typeof zone>>) {
    await z.source.write('2025/03/02/a.csv', 'order_id,seq,day\n2,1,01/02/2026\n');
    await z.source.write('2025/03/03/b.csv', 'order_id,seq,day\n3,1,01/02/2026\n');
    await z.source.write('2025/03/04/c.csv', 'order_id,seq,day\n4,1,01/02/2026\n5,1,13/02/2026\n');
  }

  async function dateTable(csv?: Record<string, unknown>) {
    const z = await zone({}, csv ? { csv } : {});
    await putParquet(z.source, session, '2025/03/01/seed.parquet', `SELECT 1::BIGINT AS order_id, 1::BIGINT AS seq, DATE '2026-01-01' AS day`);
    await run(z.setup);
    return z;
  }

  it('a date text that reads two ways fails naming the column and both readings; nothing is committed', async () => {
    const z = await dateTable();
    await threeDays(z);
    const err = await failure(run(z.setup));
    expect(err).toBeInstanceOf(BadFileError);
    expect(err.message).toContain('"01/02/2026" of column "day" reads two ways: 2026-01-02 (month first) or 2026-02-01 (day first)');
    expect(err.message).toContain('source.csv.dateFormat');
    expect((err as BadFileError).context).toMatchObject({ key: `${z.uri}2025/03/02/a.csv`, column: 'day', line: 2 });
    expect((await readTarget(session, z.setup)).snapshot!.version).toBe(0);
  });

  it('with source.csv.dateFormat every file reads the same way', async () => {
    const z = await dateTable({ dateFormat: '%d/%m/%Y' });
    await threeDays(z);
    expect(await run(z.setup)).toMatchObject({ status: 'succeeded', inserted: 4 });
    const rows = await tableRows(session, z.setup, 'order_id');
    expect(rows.map((r) => r['day'])).toEqual(['2026-01-01', '2026-02-01', '2026-02-01', '2026-02-01', '2026-02-13']);
  });
});
