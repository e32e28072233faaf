/**
 * scd2 writes rows that are not batch rows: the closed copy of a stored version, the parts of a
 * split one, versions corrected in place, and its new versions' history columns are computed.
 * Every row it writes is checked against the table's CHECK constraints (docs/concepts.md,
 * Constraints), so a rule over the history columns, or a stored row an older table let in, is
 * enforced on what is actually written: a breaking row refuses the batch naming the rule and the
 * key, nothing committed.
 */
import { describe, expect, it } from 'vitest';
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

async function setup() {
  const src = await tempDir('scd2-rules-src', dirs);
  const dst = await tempDir('scd2-rules-dst', dirs);
  const config = makeConfig({
    source: { uri: src, discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}' } },
    target: {
      uri: dst,
      mode: 'scd2',
      key: ['order_id'],
      orderBy: 'seq',
      deleteWhen: "rid = 'gone'",
    },
  });
  return { source: new LocalStorage(src), config };
}

/** CSV rows `[order_id, status, seq, rid]`; '' is NULL. */
function csv(rows: Array<[number, string, number, string]>): string {
  return ['order_id,status,seq,rid', ...rows.map((r) => r.join(','))].join('\n') + '\n';
}

/** Add CHECK `name` (Spark SQL `expression`) as ALTER TABLE … ADD CONSTRAINT does, without checking the stored rows. */
async function addCheck(config: Setup, name: string, expression: string): Promise<void> {
  const table = openTable(openTarget(config.job, config.storage), session);
  const snapshot = (await table.snapshot())!;
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
          configuration: {
            ...snapshot.metadata.configuration,
            [`delta.constraints.${name}`]: expression,
          },
        },
      },
    ],
    operation: 'ADD CONSTRAINT',
    read: { readVersion: snapshot.version, partitions: 'all', files: [], appIds: [] },
    isBlindAppend: false,
  });
}

/** The run is refused by CHECK `name` on a written row of key `id` (`version`: its valid_from, valid_to), and nothing is committed. */
async function expectRefused(
  config: Setup,
  name: string,
  id: number,
  version: [number, number],
): Promise<void> {
  const before = (await readTarget(session, config)).snapshot!.version;
  const history = await scd2History(session, config);
  const outcome = await runOutcome(config);
  expect(outcome.ok).toBe(false);
  const err = (outcome as { error: unknown }).error as ConstraintViolationError;
  expect(err).toBeInstanceOf(ConstraintViolationError);
  expect(err.message).toMatch(
    new RegExp(
      `key \\(order_id=${id}\\) \\(valid_from=${version[0]}, valid_to=${version[1]}\\) violates CHECK constraint ${name}`,
    ),
  );
  expect((await readTarget(session, config)).snapshot!.version).toBe(before);
  expect(await scd2History(session, config)).toEqual(history);
  expect((await checkTarget(session, config)).problems).toEqual([]);
}

describe('scd2: CHECK constraints on the rows it writes', () => {
  it('valid_to > valid_from holds through versions in order, a late version splitting one, deletes closing', async () => {
    const { source, config } = await setup();
    await source.write(
      '2025/03/01/a.csv',
      csv([
        [1, 'placed', 1, 'a'],
        [2, 'placed', 1, 'b'],
        [3, 'placed', 1, 'c'],
      ]),
    );
    await run(config);
    await addCheck(config, 'closes_after_open', 'valid_to IS NULL OR valid_to > valid_from');
    await source.write(
      '2025/03/02/b.csv',
      csv([
        [1, 'shipped', 5, 'a2'],
        [2, 'packed', 10, 'b2'],
        [3, 'packed', 10, 'c2'],
      ]),
    );
    expect(await run(config)).toMatchObject({ status: 'succeeded' });
    await source.write(
      '2025/03/03/c.csv',
      csv([
        [1, 'packed', 3, 'a3'],
        [2, '', 12, 'gone'],
        // A delete at the orderBy of the version it meets: the delete wins, so the version before closes there.
        [3, '', 10, 'gone'],
      ]),
    );
    expect(await run(config)).toMatchObject({ status: 'succeeded' });
    expect(await scd2History(session, config)).toEqual([
      '1 placed 1-3',
      '1 packed 3-5',
      '1 shipped 5-…*',
      '2 placed 1-10',
      '2 packed 10-12',
      '3 placed 1-10',
    ]);
    expect((await checkTarget(session, config)).problems).toEqual([]);
  });

  it('a rule over the computed valid_to (which the batch rows do not hold) is enforced on the closed copy', async () => {
    const { source, config } = await setup();
    await source.write(
      '2025/03/01/a.csv',
      csv([
        [1, 'placed', 1, 'a'],
        [2, 'placed', 1, 'b'],
      ]),
    );
    await run(config);
    await addCheck(config, 'lives_short', 'valid_to IS NULL OR valid_to - valid_from < 10');
    await source.write('2025/03/02/b.csv', csv([[1, 'shipped', 5, 'a2']]));
    expect(await run(config)).toMatchObject({ status: 'succeeded' });
    // Closing key 2's version at 20 would store valid_from 1, valid_to 20.
    await source.write('2025/03/03/c.csv', csv([[2, 'shipped', 20, 'b2']]));
    await expectRefused(config, 'lives_short', 2, [1, 20]);
    // A late version splitting key 1's current version at 30 would store 5-30 too.
    await source.write('2025/03/04/d.csv', csv([[1, 'packed', 30, 'a3']]));
    await expectRefused(config, 'lives_short', 1, [5, 30]);
  });

  it('a stored row an older table let in is not written again as a closed copy', async () => {
    const { source, config } = await setup();
    await source.write(
      '2025/03/01/a.csv',
      csv([
        [1, 'placed', 1, 'a'],
        [2, 'void', 1, 'b'],
      ]),
    );
    await run(config);
    await addCheck(config, 'status_known', "status <> 'void'");
    // The new version keeps the rule; closing the stored 'void' version writes its copy, which does not.
    await source.write('2025/03/02/b.csv', csv([[2, 'placed', 5, 'b2']]));
    await expectRefused(config, 'status_known', 2, [1, 5]);
    // With a delete after the new version too, the copy closed at 5 is still written.
    await source.write('2025/03/03/c.csv', csv([[2, '', 6, 'gone']]));
    await expectRefused(config, 'status_known', 2, [1, 5]);
  });
});
