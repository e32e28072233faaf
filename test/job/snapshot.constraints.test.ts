/**
 * Table rules (a NOT NULL column and a CHECK constraint on a non-key column, as ALTER TABLE adds
 * them) with deletes whose rows carry only the key, orderBy and lineage (docs/concepts.md,
 * Constraints): a snapshot's absent keys (merge and scd2 mode) and scd2's own deleteWhen rows are
 * never written as data, so they are not checked as data; the rows written still are, and a
 * breaking one refuses the batch naming the rule, file and row, nothing committed.
 */
import { describe, expect, it } from 'vitest';
import type { StructType } from '../../src/delta/schema.js';
import { TableConfig } from '../../src/delta/table-config.js';
import { ConstraintViolationError } from '../../src/errors.js';
import { openTarget } from '../../src/job/open.js';
import { LocalStorage } from '../../src/storage/local.js';
import { openTable } from '../../scripts/lib/tables.js';
import {
  DuckSession,
  checkTarget,
  makeConfig,
  readTarget,
  run,
  runOutcome,
  scd2History,
  sessionPerFile,
  tempDir,
} from './helpers.js';

let session: DuckSession;
const dirs = sessionPerFile((s) => (session = s));

type Setup = ReturnType<typeof makeConfig>;

async function setup(
  mode: 'merge' | 'scd2',
  source: Record<string, unknown>,
  target: Record<string, unknown> = {},
) {
  const src = await tempDir('snap-rules-src', dirs);
  const dst = await tempDir('snap-rules-dst', dirs);
  const config = makeConfig({
    source: { uri: src, discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}' }, ...source },
    target: { uri: dst, mode, key: ['order_id'], orderBy: 'seq', ...target },
  });
  return { source: new LocalStorage(src), config };
}

/** CSV rows `[order_id, status, seq, rid]`, with `as_of` on every row when given; '' is NULL. */
function csv(rows: Array<[number, string, number, string]>, asOf?: number): string {
  const head = asOf === undefined ? 'order_id,status,seq,rid' : 'order_id,status,seq,rid,as_of';
  const tail = asOf === undefined ? '' : `,${asOf}`;
  return [head, ...rows.map((r) => r.join(',') + tail)].join('\n') + '\n';
}

/** Make `status` NOT NULL and add CHECK `status_known` (status <> 'void'), in one commit. */
async function addRules(config: Setup): Promise<void> {
  const table = openTable(openTarget(config.job, config.storage), session);
  const snapshot = (await table.snapshot())!;
  const schema = JSON.parse(snapshot.metadata.schemaString) as StructType;
  const fields = schema.fields.map((f) => (f.name === 'status' ? { ...f, nullable: false } : f));
  await table.commit({
    actions: [
      {
        protocol: TableConfig.of(snapshot.protocol, snapshot.metadata).withFeature(
          'checkConstraints',
          { reader: false },
        ),
      },
      {
        metaData: {
          ...snapshot.metadata,
          schemaString: JSON.stringify({ ...schema, fields }),
          configuration: {
            ...snapshot.metadata.configuration,
            'delta.constraints.status_known': "status <> 'void'",
          },
        },
      },
    ],
    operation: 'ADD CONSTRAINT',
    read: { readVersion: snapshot.version, partitions: 'all', files: [], appIds: [] },
    isBlindAppend: false,
  });
}

/** The run is refused by the CHECK, naming the file, and nothing is committed. */
async function expectRefusedByCheck(config: Setup, file: string): Promise<void> {
  const before = (await readTarget(session, config)).snapshot!.version;
  const outcome = await runOutcome(config);
  expect(outcome.ok).toBe(false);
  const err = (outcome as { error: unknown }).error as ConstraintViolationError;
  expect(err).toBeInstanceOf(ConstraintViolationError);
  expect(err.message).toMatch(/order_id=2.*violates CHECK constraint status_known/);
  expect(err.message).toContain(file);
  expect((await readTarget(session, config)).snapshot!.version).toBe(before);
}

const ids = (rows: ReadonlyArray<{ order_id: number }>) =>
  rows.map((r) => r.order_id).sort((a, b) => a - b);

describe('table rules with delete rows', () => {
  it("merge: a snapshot's absent keys are deleted under a NOT NULL column and a CHECK; a breaking row is refused", async () => {
    const { source, config } = await setup('merge', { snapshot: true });
    const day1: Array<[number, string, number, string]> = [
      [1, 'placed', 1, 'a'],
      [2, 'placed', 1, 'b'],
      [3, 'placed', 1, 'c'],
    ];
    await source.write('2025/03/01/part-0.csv', csv(day1));
    await run(config);
    await addRules(config);
    await source.write('2025/03/02/part-0.csv', csv(day1.slice(0, 2)));
    expect(await run(config)).toMatchObject({ status: 'succeeded', deleted: 1 });
    expect(ids((await readTarget(session, config)).rows)).toEqual([1, 2]);
    await source.write(
      '2025/03/03/part-0.csv',
      csv([
        [1, 'placed', 1, 'a'],
        [2, 'void', 2, 'b2'],
      ]),
    );
    await expectRefusedByCheck(config, '2025/03/03/part-0.csv');
    expect((await checkTarget(session, config)).problems).toEqual([]);
  });

  it("scd2: a snapshot's absent keys are closed under a NOT NULL column and a CHECK; a breaking row is refused", async () => {
    const { source, config } = await setup('scd2', { snapshot: true, snapshotAsOf: 'as_of' });
    const day1: Array<[number, string, number, string]> = [
      [1, 'placed', 1, 'a'],
      [2, 'placed', 1, 'b'],
      [3, 'placed', 1, 'c'],
    ];
    await source.write('2025/03/01/part-0.csv', csv(day1, 10));
    await run(config);
    await addRules(config);
    await source.write('2025/03/02/part-0.csv', csv(day1.slice(0, 2), 20));
    expect(await run(config)).toMatchObject({ status: 'succeeded' });
    expect(await scd2History(session, config)).toEqual([
      '1 placed 1-…*',
      '2 placed 1-…*',
      '3 placed 1-20',
    ]);
    await source.write(
      '2025/03/03/part-0.csv',
      csv(
        [
          [1, 'placed', 1, 'a'],
          [2, 'void', 25, 'b2'],
        ],
        30,
      ),
    );
    await expectRefusedByCheck(config, '2025/03/03/part-0.csv');
    expect((await checkTarget(session, config)).problems).toEqual([]);
  });

  it('scd2: a deleteWhen row with NULL in the NOT NULL column closes its key; a breaking row is refused', async () => {
    const { source, config } = await setup('scd2', {}, { deleteWhen: "rid = 'gone'" });
    await source.write(
      '2025/03/01/a.csv',
      csv([
        [1, 'placed', 1, 'a'],
        [2, 'placed', 1, 'b'],
      ]),
    );
    await run(config);
    await addRules(config);
    // A CDC delete carries the key and its time only: status is empty (NULL).
    await source.write('2025/03/02/b.csv', csv([[1, '', 5, 'gone']]));
    expect(await run(config)).toMatchObject({ status: 'succeeded' });
    expect(await scd2History(session, config)).toEqual(['1 placed 1-5', '2 placed 1-…*']);
    await source.write('2025/03/03/c.csv', csv([[2, 'void', 6, 'b2']]));
    await expectRefusedByCheck(config, '2025/03/03/c.csv');
    expect((await checkTarget(session, config)).problems).toEqual([]);
  });
});
