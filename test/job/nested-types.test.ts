/**
 * Nested columns follow the rules of top-level ones (docs/concepts.md, Types), through the real
 * job on local folders: a value that does not fit a struct field fails the batch naming file,
 * row and column; a scalar where a struct is expected fails; a struct field the table lacks is
 * never dropped.
 */
import { describe, expect, it } from 'vitest';
import { BadFileError, SchemaError } from '../../src/errors.js';
import { LocalStorage } from '../../src/storage/local.js';
import { failure } from '../helpers/cli.js';
import { putParquet, tableRows } from './drift-helpers.js';
import {
  DuckSession,
  makeConfig,
  mergeTarget,
  readTarget,
  run,
  sessionPerFile,
  targetChecker,
  tempDir,
} from './helpers.js';

let session: DuckSession;
const dirs = sessionPerFile((s) => (session = s), { threads: 2 });

const byDay = { by: 'partition', layout: '{yyyy}/{mm}/{dd}', lookback: 2 };

/** A table created from Parquet with obj = {x: BIGINT, y: VARCHAR} and tags = list of BIGINT. */
async function nestedTable(extra: Record<string, unknown> = {}) {
  const sourceDir = await tempDir('nested-src', dirs);
  const source = new LocalStorage(sourceDir);
  const setup = makeConfig({
    source: { uri: sourceDir, discover: byDay },
    target: mergeTarget(await tempDir('nested-t', dirs)),
    ...extra,
  });
  await putParquet(
    source,
    session,
    '2025/03/01/seed.parquet',
    `SELECT 1::BIGINT AS order_id, 1::BIGINT AS seq, {'x': 1::BIGINT, 'y': 'a'} AS obj, [1, 2]::BIGINT[] AS tags`,
  );
  await run(setup);
  return { source, setup, uri: source.uri };
}

describe('nested columns', () => {
  it("obj.x = 'abc' fails the batch naming the file and the field, as a top-level value would; nothing is committed", async () => {
    const z = await nestedTable();
    await putParquet(
      z.source,
      session,
      '2025/03/02/bad.parquet',
      `SELECT 2::BIGINT AS order_id, 1::BIGINT AS seq, {'x': 'abc', 'y': 'b'} AS obj, [3]::BIGINT[] AS tags`,
    );
    const err = await failure(run(z.setup));
    expect(err).toBeInstanceOf(BadFileError);
    expect(err.message).toContain('"abc"');
    expect((err as BadFileError).context).toMatchObject({
      key: `${z.uri}2025/03/02/bad.parquet`,
      column: 'obj.x',
      row: 1,
    });
    expect((await readTarget(session, z.setup)).snapshot!.version).toBe(0);
  });

  it('a list element that does not fit fails naming the column', async () => {
    const z = await nestedTable();
    await putParquet(
      z.source,
      session,
      '2025/03/02/bad.parquet',
      `SELECT 2::BIGINT AS order_id, 1::BIGINT AS seq, {'x': 2::BIGINT, 'y': 'b'} AS obj, [1.5]::DOUBLE[] AS tags`,
    );
    const err = await failure(run(z.setup));
    expect(err).toBeInstanceOf(BadFileError);
    expect((err as BadFileError).context).toMatchObject({ column: 'tags.element' });
  });

  it('a scalar where a struct is expected fails (JSON "obj": "a-string")', async () => {
    const z = await nestedTable();
    await z.source.write(
      '2025/03/02/bad.ndjson',
      '{"order_id":2,"seq":1,"obj":"a-string","tags":[1]}\n',
    );
    const err = await failure(run(z.setup));
    expect(err).toBeInstanceOf(BadFileError);
    expect((err as BadFileError).context).toMatchObject({
      key: `${z.uri}2025/03/02/bad.ndjson`,
      column: 'obj',
    });
  });

  it('a struct field the table lacks is never dropped: refused naming it under schemaEvolution fail; nothing is committed', async () => {
    const z = await nestedTable({ schemaEvolution: 'fail' });
    await putParquet(
      z.source,
      session,
      '2025/03/02/new.parquet',
      `SELECT 2::BIGINT AS order_id, 1::BIGINT AS seq, {'x': 2::BIGINT, 'y': 'b', 'z': 'NEW'} AS obj, [3]::BIGINT[] AS tags`,
    );
    const err = await failure(run(z.setup));
    expect(err).toBeInstanceOf(SchemaError);
    expect(err.message).toContain('"obj.z"');
    expect(err.message).toContain("schemaEvolution is 'fail'");
    expect((await readTarget(session, z.setup)).snapshot!.version).toBe(0);
  });

  it('under addColumns a new struct field is added to the table: older rows read NULL there', async () => {
    for (const columnMapping of ['none', 'name'] as const) {
      const z = await nestedTable({
        target: { ...mergeTarget(await tempDir('nested-t', dirs)), columnMapping },
      });
      await putParquet(
        z.source,
        session,
        '2025/03/02/new.parquet',
        `SELECT 2::BIGINT AS order_id, 1::BIGINT AS seq, {'x': 2::BIGINT, 'y': 'b', 'z': 'NEW'} AS obj, [3]::BIGINT[] AS tags`,
      );
      expect(await run(z.setup)).toMatchObject({ status: 'succeeded', inserted: 1 });
      const snapshot = (await readTarget(session, z.setup)).snapshot!;
      const obj = snapshot.schema.fields.find((f) => f.name === 'obj')!.type as {
        fields: { name: string }[];
      };
      expect(obj.fields.map((f) => f.name)).toEqual(['x', 'y', 'z']);
      const rows = await tableRows(session, z.setup, 'order_id');
      expect(rows.map((r) => r['obj'])).toEqual([
        { x: '1', y: 'a', z: null },
        { x: '2', y: 'b', z: 'NEW' },
      ]);
      expect((await targetChecker(session, z.setup).check()).problems).toEqual([]);
    }
  });

  it('values that fit load unchanged, a struct missing a field gets NULL there', async () => {
    const z = await nestedTable();
    await putParquet(
      z.source,
      session,
      '2025/03/02/ok.parquet',
      `SELECT 2::BIGINT AS order_id, 1::BIGINT AS seq, {'x': 7::INTEGER} AS obj, [4, 5]::INTEGER[] AS tags`,
    );
    expect(await run(z.setup)).toMatchObject({ status: 'succeeded', inserted: 1 });
    const rows = await tableRows(session, z.setup, 'order_id');
    expect(rows.map((r) => [r['obj'], r['tags']])).toEqual([
      [{ x: '1', y: 'a' }, ['1', '2']],
      [{ x: '7', y: null }, ['4', '5']],
    ]);
  });
});
