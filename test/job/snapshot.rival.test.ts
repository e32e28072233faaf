/**
 * A snapshot source's commit against a rival writer of the same table (docs/concepts.md, Snapshot
 * sources): its absent keys come from reading every key the table holds, so a rival's commit
 * between that read and ours (forced from our beforeCommit hook: the rival job runs there) must
 * make ours plan again, whether the rival changed a key we delete or added one we never saw.
 * Otherwise the commit would claim the table is the extract while it holds a key the extract lacks.
 */
import { describe, expect, it } from 'vitest';
import { LocalStorage } from '../../src/storage/local.js';
import {
  checkTarget,
  DuckSession,
  land,
  makeConfig,
  orders,
  readTarget,
  run,
  scd2History,
  sessionPerFile,
  tempDir,
  type OrderRow,
} from './helpers.js';

let session: DuckSession;
const dirs = sessionPerFile((s) => (session = s));

const LAYOUT = { by: 'partition', layout: '{yyyy}/{mm}/{dd}' };

/** The snapshot job and a plain merge job (other keys' feed) into one table. */
async function setup(mode: 'merge' | 'scd2') {
  const target = await tempDir('snap-rival-t', dirs);
  const zone = async (name: string) => {
    const root = await tempDir(`snap-rival-${name}`, dirs);
    return { root, storage: new LocalStorage(root) };
  };
  const snap = await zone('snap');
  const other = await zone('rival');
  const keyed = { key: ['order_id'], orderBy: 'seq' };
  const scd2 = mode === 'scd2' ? { snapshotAsOf: 'as_of' } : {};
  const snapshot = makeConfig({
    name: 'snap',
    source: { uri: snap.root, discover: LAYOUT, snapshot: true, ...scd2 },
    target: { uri: target, mode, ...keyed },
  });
  const rival = makeConfig({
    name: 'rival',
    source: { uri: other.root, discover: LAYOUT },
    target: { uri: target, mode, ...keyed },
  });
  return { snapshot, rival, zones: { snap: snap.storage, rival: other.storage } };
}

/** An extract as CSV, every row as of `asOf` (rid: the same row in every extract). */
function extract(asOf: number, ...rows: Array<[number, string, number]>): string {
  const lines = rows.map(([id, status, seq]) => `${id},${status},${seq},r${id}-${seq},${asOf}`);
  return ['order_id,status,seq,rid,as_of', ...lines].join('\n') + '\n';
}

const statuses = (rows: readonly OrderRow[]) =>
  [...rows].sort((a, b) => a.order_id - b.order_id).map((r) => [r.order_id, r.status]);

describe('snapshot sources with a rival writer', () => {
  it('merge: a rival update of a key the extract lacks, committed before ours, makes ours plan again and delete it', async () => {
    const { snapshot, rival, zones } = await setup('merge');
    await land(
      zones.snap,
      session,
      '2025/03/01/part-0.csv',
      orders([1, 'placed', 1], [2, 'placed', 1]),
    );
    await run(snapshot);
    // The rival's key 100 sits alone in its own file.
    await land(zones.rival, session, '2025/03/01/a.csv', orders([100, 'placed', 1]));
    await run(rival);
    await land(
      zones.snap,
      session,
      '2025/03/02/part-0.csv',
      orders([1, 'paid', 2], [2, 'placed', 1]),
    );
    await land(zones.rival, session, '2025/03/02/b.csv', orders([100, 'shipped', 5]));
    let raced = false;
    const report = await run(snapshot, {
      hooks: { beforeCommit: async () => void (raced ||= (await run(rival), true)) },
    });
    expect(report).toMatchObject({ status: 'succeeded', replans: 1, deleted: 1 });
    const view = await readTarget(session, snapshot);
    expect(statuses(view.rows)).toEqual([
      [1, 'paid'],
      [2, 'placed'],
    ]);
    expect((await checkTarget(session, snapshot)).problems).toEqual([]);
  });

  it('merge: a rival insert of a key outside the extract, committed before ours, makes ours plan again and delete it', async () => {
    const { snapshot, rival, zones } = await setup('merge');
    const day1 = orders([1, 'placed', 1], [2, 'placed', 1], [3, 'placed', 1], [4, 'placed', 1]);
    await land(zones.snap, session, '2025/03/01/part-0.csv', day1);
    await run(snapshot);
    // Day 2 lacks key 4; the rival adds key 100, a key no extract holds, while we commit.
    const day2 = orders([1, 'paid', 2], [2, 'placed', 1], [3, 'placed', 1]);
    await land(zones.snap, session, '2025/03/02/part-0.csv', day2);
    await land(zones.rival, session, '2025/03/01/a.csv', orders([100, 'placed', 1]));
    let raced = false;
    const report = await run(snapshot, {
      hooks: { beforeCommit: async () => void (raced ||= (await run(rival), true)) },
    });
    expect(report).toMatchObject({ status: 'succeeded', replans: 1, deleted: 2 });
    const view = await readTarget(session, snapshot);
    expect(statuses(view.rows)).toEqual([
      [1, 'paid'],
      [2, 'placed'],
      [3, 'placed'],
    ]);
    expect((await checkTarget(session, snapshot)).problems).toEqual([]);
  });

  it('scd2: a rival insert of a key outside the extract, committed before ours, makes ours plan again and close it', async () => {
    const { snapshot, rival, zones } = await setup('scd2');
    await zones.snap.write(
      '2025/03/01/part-0.csv',
      extract(10, [1, 'placed', 1], [2, 'placed', 1], [3, 'placed', 1], [4, 'placed', 1]),
    );
    await run(snapshot);
    // The extract as of 20 lacks key 4; the rival opens key 100 (at seq 1) while we commit.
    await zones.snap.write(
      '2025/03/02/part-0.csv',
      extract(20, [1, 'paid', 2], [2, 'placed', 1], [3, 'placed', 1]),
    );
    await land(zones.rival, session, '2025/03/01/a.csv', orders([100, 'placed', 1]));
    let raced = false;
    const report = await run(snapshot, {
      hooks: { beforeCommit: async () => void (raced ||= (await run(rival), true)) },
    });
    expect(report).toMatchObject({ status: 'succeeded', replans: 1 });
    expect(await scd2History(session, snapshot)).toEqual([
      '1 placed 1-2',
      '1 paid 2-…*',
      '2 placed 1-…*',
      '3 placed 1-…*',
      '4 placed 1-20',
      '100 placed 1-20',
    ]);
    expect((await checkTarget(session, snapshot)).problems).toEqual([]);
  });
});
