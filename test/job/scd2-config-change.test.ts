/**
 * A config edit between runs of an scd2 job (src/job/config-change.ts), through the real job:
 * local folders, real DuckDB, real Delta logs. The stored history is keyed by the old key and its
 * versions ordered by the old orderBy (valid_from holds orderBy values), so a new key or orderBy
 * would rebuild every history it touches by other rules: refused (exit 2) before anything is read,
 * naming the field, with or without --accept-config-change, and the table is left as it was. A
 * change to merge mode meets the history's several rows per key and is refused naming them.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { validateJobs } from '../../src/job/validate.js';
import { silentLogger } from '../../src/log/logger.js';
import {
  DuckSession,
  land,
  makeConfig,
  orders,
  readTarget,
  run,
  runOutcome,
  scd2History,
  sessionPerFile,
  tempDir,
} from './helpers.js';
import { LocalStorage } from '../../src/storage/local.js';

let session: DuckSession;
const dirs = sessionPerFile((s) => (session = s));

/** A landing zone and an scd2 target on order_id by seq, with two runs' history and a delete. */
async function history() {
  const src = await tempDir('scd2cc-src', dirs);
  const dst = await tempDir('scd2cc-dst', dirs);
  const source = new LocalStorage(src);
  const jobWith = (target: Record<string, unknown>) => ({
    source: {
      uri: src,
      discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 30 },
      // rid ('r1', 'r2', ...) is another orderBy a user might switch to, compared as text.
      columns: { rid: 'string' },
    },
    target: {
      uri: dst,
      mode: 'scd2',
      key: ['order_id'],
      orderBy: 'seq',
      deleteWhen: "status = 'deleted'",
      ...target,
    },
  });
  const configWith = (target: Record<string, unknown>) => makeConfig(jobWith(target));
  const config = configWith({});
  await land(source, session, '2025/03/01/a.csv', orders([1, 'placed', 1], [2, 'placed', 1]));
  await run(config);
  await land(source, session, '2025/03/02/a.csv', orders([1, 'paid', 5], [2, 'deleted', 6]));
  await run(config);
  const before = ['1 placed 1-5', '1 paid 5-…*', '2 placed 1-6'];
  expect(await scd2History(session, config)).toEqual(before);
  // The next delivery: refused runs must leave it unloaded.
  await land(source, session, '2025/03/03/a.csv', orders([1, 'shipped', 7]));
  return { configWith, jobWith, before };
}

async function refusal(
  config: ReturnType<typeof makeConfig>,
  accept = false,
): Promise<ConfigError> {
  const outcome = await runOutcome(config, accept ? { acceptConfigChange: true } : {});
  if (outcome.ok) throw new Error(`expected a refusal, the run ended ${outcome.report.status}`);
  expect(outcome.error).toBeInstanceOf(ConfigError);
  return outcome.error as ConfigError;
}

describe('scd2: a new key or orderBy is refused', () => {
  it('orderBy seq -> rid: refused naming the field and both values, with or without --accept-config-change; the history is unchanged', async () => {
    const { configWith, jobWith, before } = await history();
    const bySeq2 = configWith({ orderBy: 'rid' });
    // `tidemark validate` says so before any run.
    const file = join(await tempDir('scd2cc-cfg', dirs), 'tidemark.yaml');
    await writeFile(
      file,
      JSON.stringify({ jobs: [{ name: 'orders', ...jobWith({ orderBy: 'rid' }) }] }),
    );
    const [checked] = await validateJobs({ file }, { logger: silentLogger() });
    expect(checked!.problems).toEqual([
      expect.objectContaining({
        field: 'jobs[0].target.orderBy',
        message: expect.stringMatching(/changed from seq to rid.*scd2 history/),
      }),
    ]);
    for (const accept of [false, true]) {
      const err = await refusal(bySeq2, accept);
      expect(err.message).toMatch(/target\.orderBy changed from seq to rid.*scd2.*valid_from/);
      expect(err.context).toMatchObject({ field: 'target.orderBy', from: 'seq', to: 'rid' });
    }
    expect(await scd2History(session, bySeq2)).toEqual(before);
    // Back to the recorded settings, the waiting delivery loads.
    await run(configWith({}));
    expect(await scd2History(session, bySeq2)).toEqual([
      '1 placed 1-5',
      '1 paid 5-7',
      '1 shipped 7-…*',
      '2 placed 1-6',
    ]);
  });

  it('key [order_id] -> [order_id, status]: refused naming the field; the history is unchanged', async () => {
    const { configWith, before } = await history();
    const wider = configWith({ key: ['order_id', 'status'] });
    const err = await refusal(wider, true);
    expect(err.message).toMatch(/target\.key changed from \[order_id\] to \[order_id, status\]/);
    expect(err.context).toMatchObject({ field: 'target.key' });
    expect(await scd2History(session, wider)).toEqual(before);
  });

  it('the same key and orderBy spelled in another case are no change', async () => {
    const { configWith } = await history();
    const upper = configWith({ key: ['ORDER_ID'], orderBy: 'SEQ' });
    const report = await run(upper);
    expect(report).toMatchObject({ status: 'succeeded', inserted: 1, updated: 1 });
    expect(report.configChanges ?? []).toEqual([]);
  });

  it('scd2 -> merge: refused, the history holds several rows of order 1', async () => {
    const { configWith, before } = await history();
    const merged = configWith({ mode: 'merge' });
    const err = await refusal(merged);
    expect(err.message).toMatch(/target\.mode changed from scd2 to merge.*order_id=1 \(2 rows\)/);
    expect(await scd2History(session, merged)).toEqual(before);
  });

  // Found by the config-change hunt: the run succeeded, adding the history columns NULL to every
  // stored row (no current version) and updating order 1 in place (its old row deleted).
  it('merge -> scd2 on a table without the history columns: refused naming the mode and the columns; the table is unchanged', async () => {
    const src = await tempDir('scd2cc-src', dirs);
    const dst = await tempDir('scd2cc-dst', dirs);
    const setup = (mode: string) =>
      makeConfig({
        source: { uri: src, discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}' } },
        target: { uri: dst, mode, key: ['order_id'], orderBy: 'seq' },
      });
    const source = new LocalStorage(src);
    await land(source, session, '2025/03/01/a.csv', orders([1, 'placed', 1], [2, 'placed', 1]));
    expect(await run(setup('merge'))).toMatchObject({ inserted: 2 });
    await land(source, session, '2025/03/02/a.csv', orders([1, 'paid', 5]));
    const err = await refusal(setup('scd2'));
    expect(err.context).toMatchObject({ field: 'target.mode' });
    expect(err.message).toMatch(
      /target\.mode is scd2, but the table holds rows without the history columns valid_from, valid_to, is_current/,
    );
    const table = await readTarget(session, setup('merge'));
    expect(table.rows.map((r) => `${r.order_id} ${r.status}`).sort()).toEqual([
      '1 placed',
      '2 placed',
    ]);
    expect(table.columns).not.toContain('valid_from');
  });

  it('validate holds the history columns by their configured names: none missing on an scd2 table of its own, the merge table refused', async () => {
    const src = await tempDir('scd2cc-src', dirs);
    const [own, merged] = [await tempDir('scd2cc-dst', dirs), await tempDir('scd2cc-dst', dirs)];
    const names = { validFrom: 'start_at', validTo: 'end_at', isCurrent: 'cur' };
    const job = (uri: string, mode: string) => ({
      source: { uri: src, discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}' } },
      target: { uri, mode, key: ['order_id'], orderBy: 'seq', ...(mode === 'scd2' ? names : {}) },
    });
    await land(new LocalStorage(src), session, '2025/03/01/a.csv', orders([1, 'placed', 1]));
    expect(await run(makeConfig(job(own, 'scd2')))).toMatchObject({ inserted: 1 });
    expect(await run(makeConfig(job(merged, 'merge')))).toMatchObject({ inserted: 1 });
    const validated = async (uri: string) => {
      const file = join(await tempDir('scd2cc-cfg', dirs), 'tidemark.yaml');
      await writeFile(file, JSON.stringify({ jobs: [{ name: 'orders', ...job(uri, 'scd2') }] }));
      const [report] = await validateJobs({ file }, { logger: silentLogger() });
      return report!.problems;
    };
    expect(await validated(own)).toEqual([]);
    expect(await validated(merged)).toEqual([
      expect.objectContaining({
        field: 'jobs[0].target.mode',
        message: expect.stringMatching(/history columns start_at, end_at, cur/),
      }),
    ]);
  });
});

describe('scd2: a new trackColumns is refused', () => {
  it('default -> [status]: refused naming the field, with or without --accept-config-change; the history is unchanged', async () => {
    const { configWith, before } = await history();
    // Under the default every column but key, orderBy and lineage is tracked (rid too): each row
    // of key 1 is a version. Versions a narrower list would merge on the next batch of the key.
    const tracked = ['status'];
    for (const accept of [false, true]) {
      const err = await refusal(configWith({ trackColumns: tracked }), accept);
      expect(err.message).toMatch(
        /target\.trackColumns changed from unset to \[status\].*scd2 history.*Keep target\.trackColumns as unset/,
      );
      expect(err.context).toMatchObject({ field: 'target.trackColumns', to: '[status]' });
    }
    expect(await scd2History(session, configWith({}))).toEqual(before);
    await run(configWith({}));
    expect(await scd2History(session, configWith({}))).toEqual([
      '1 placed 1-5',
      '1 paid 5-7',
      '1 shipped 7-…*',
      '2 placed 1-6',
    ]);
  });

  it('the same list in another order and case is no change', async () => {
    const src = await tempDir('scd2cc-src', dirs);
    const dst = await tempDir('scd2cc-dst', dirs);
    const source = new LocalStorage(src);
    const configWith = (trackColumns: string[]) =>
      makeConfig({
        source: {
          uri: src,
          discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 30 },
        },
        target: { uri: dst, mode: 'scd2', key: ['order_id'], orderBy: 'seq', trackColumns },
      });
    await land(source, session, '2025/03/01/a.csv', orders([1, 'placed', 1]));
    await run(configWith(['status', 'rid']));
    await land(source, session, '2025/03/02/a.csv', orders([1, 'paid', 5]));
    const report = await run(configWith(['RID', 'status']));
    expect(report).toMatchObject({ status: 'succeeded', inserted: 1, updated: 1 });
    expect(report.configChanges ?? []).toEqual([]);
  });
});
