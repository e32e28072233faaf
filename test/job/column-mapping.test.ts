/**
 * A job whose target is created with `target.columnMapping: name`, partitioned: the first run
 * creates the table in mode name, the second MERGEs into it (an update, a delete, a new column);
 * users see logical names everywhere (key, orderBy, deleteWhen, partitionBy in the config, rows,
 * `status`, `show`), while the log and files use physical ones. Sources and target in local folders.
 */
import { describe, expect, it } from 'vitest';
import { showJob } from '../../src/cli/commands/show.js';
import { jobStatus } from '../../src/job/status.js';
import { silentLogger } from '../../src/log/logger.js';
import { LocalStorage } from '../../src/storage/local.js';
import {
  DuckSession,
  makeConfig,
  readTarget,
  run,
  sessionPerFile,
  tempDir,
  unwrap,
} from './helpers.js';

let session: DuckSession;
const dirs = sessionPerFile((s) => (session = s), { threads: 2 });

describe('a job with target.columnMapping: name', () => {
  it('creates a mapped table, then merges into it on a second run; logical names in config, rows, status and show', async () => {
    const root = await tempDir('cm-source', dirs);
    const source = new LocalStorage(root);
    const setup = makeConfig({
      source: { uri: root, discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}' } },
      target: {
        uri: await tempDir('cm-target', dirs),
        key: ['Order Id'],
        orderBy: 'seq',
        partitionBy: ['Region'],
        deleteWhen: `"Op" = 'D'`,
        columnMapping: 'name',
      },
    });
    const ctx = { storage: setup.storage, logger: silentLogger(), tty: false };
    await source.write(
      '2025/06/01/a.csv',
      '"Order Id",Region,Status,seq,Op\n1,eu,placed,1,I\n2,us,placed,1,I\n3,eu,placed,1,I\n',
    );
    expect(await run(setup)).toMatchObject({ status: 'succeeded', inserted: 3, tableVersion: 0 });

    await source.write(
      '2025/06/02/b.csv',
      '"Order Id",Region,Status,seq,Op,Carrier\n1,eu,shipped,2,I,DHL\n3,eu,cancelled,2,D,\n4,us,placed,1,I,UPS\n',
    );
    expect(await run(setup)).toMatchObject({
      status: 'succeeded',
      inserted: 1,
      updated: 1,
      deleted: 1,
      tableVersion: 1,
    });

    const table = await readTarget(session, setup);
    const snapshot = table.snapshot!;
    expect(snapshot.metadata.configuration).toMatchObject({ 'delta.columnMapping.mode': 'name' });
    expect(snapshot.protocol.readerFeatures).toContain('columnMapping');
    expect(snapshot.metadata.partitionColumns).toEqual(['Region']);
    const physical = (name: string) =>
      String(
        snapshot.schema.fields.find((f) => f.name === name)!.metadata[
          'delta.columnMapping.physicalName'
        ],
      );
    expect(physical('Carrier')).toMatch(/^col-/);
    // The log and the folders never show a display name.
    for (const file of snapshot.files) {
      expect(Object.keys(file.partitionValues)).toEqual([physical('Region')]);
      expect(file.path).not.toMatch(/Region|Order Id/);
      expect(file.stats).not.toMatch(/Order Id|Status|Carrier/);
    }

    const status = unwrap(await jobStatus(setup.job, ctx));
    expect(status).toMatchObject({ tableVersion: 1, rows: 3 });
    const shown = unwrap(
      await showJob(setup.job, ctx, {
        limit: 10,
        where: `Region = 'eu' OR Carrier = 'UPS'`,
        columns: ['Order Id', 'Region', 'Status', 'Carrier'],
      }),
    );
    expect(shown.columns).toEqual(['Order Id', 'Region', 'Status', 'Carrier']);
    expect(shown.rows).toEqual([
      { 'Order Id': '1', Region: 'eu', Status: 'shipped', Carrier: 'DHL' },
      { 'Order Id': '4', Region: 'us', Status: 'placed', Carrier: 'UPS' },
    ]);
  });
});
