/**
 * Type widening on a derived fixture (delta-notes-writers §9): README table 12 with one more
 * commit that widens `id` from integer to long, as Spark records it. The old INT32 files read as
 * BIGINT; a MERGE prunes on their integer stats, writes only the current type (INT64), and keeps
 * `delta.typeChanges` when a new column makes it re-emit the metaData.
 */
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCommit } from '../../../src/delta/actions.js';
import { decodeLogPath } from '../../../src/delta/partition-decode.js';
import { DuckSession } from '../../../src/engine/duckdb.js';
import { str } from '../../../src/engine/sql.js';
import { LocalStorage } from '../../../src/storage/local.js';
import { copySharedTable } from '../../helpers/shared-tables.js';
import { fixtureOn, makeBatch, merge, readRows, snapshotOf, type Fixture } from './helpers.js';

let session: DuckSession;
beforeAll(async () => {
  session = await DuckSession.open({ threads: 2 });
});
afterAll(() => session.close());

const WIDENED = { 'delta.typeChanges': [{ toType: 'long', fromType: 'integer', tableVersion: 2 }] };

/** README 12 plus version 2: `id` widened from integer to long (typeWidening reader and writer feature). */
async function widenedTimestampNtz(): Promise<Fixture> {
  const dir = await copySharedTable('timestamp-ntz');
  const fields = [
    { name: 'id', type: 'long', nullable: true, metadata: WIDENED },
    { name: 'tsNtz', type: 'timestamp_ntz', nullable: true, metadata: {} },
    { name: 'tsNtzPartition', type: 'timestamp_ntz', nullable: true, metadata: {} },
  ];
  const features = ['timestampNtz', 'typeWidening'];
  const commit = [
    {
      commitInfo: { timestamp: 1712334000000, operation: 'CHANGE COLUMN', operationParameters: {} },
    },
    {
      protocol: {
        minReaderVersion: 3,
        minWriterVersion: 7,
        readerFeatures: features,
        writerFeatures: features,
      },
    },
    {
      metaData: {
        id: 'testId',
        format: { provider: 'parquet', options: {} },
        schemaString: JSON.stringify({ type: 'struct', fields }),
        partitionColumns: ['tsNtzPartition'],
        configuration: { 'delta.enableTypeWidening': 'true' },
        createdTime: 1712333987987,
      },
    },
  ];
  await writeFile(
    join(dir, '_delta_log', '00000000000000000002.json'),
    commit.map((a) => JSON.stringify(a)).join('\n') + '\n',
  );
  return fixtureOn(session, new LocalStorage(dir), {
    dir,
    cleanup: () => rm(dir, { recursive: true, force: true }),
  });
}

describe('a table whose column was widened (typeWidening)', () => {
  it('reads old INT32 files as BIGINT, MERGEs on the old integer stats, writes INT64 and keeps typeChanges', async () => {
    const f = await widenedTimestampNtz();
    try {
      const before = await readRows(f, 'id');
      expect(before.map((x) => Number(x['id']))).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
      const A = `TIMESTAMP '2021-11-18 02:30:00.123456'`;
      // id 3000000000 does not fit the old integer type; id 1 (partition A) is updated; a new column comes along.
      await makeBatch(
        session,
        'b',
        `SELECT * FROM (VALUES (3000000000::BIGINT, ${A}, ${A}, 'wide'), (1, ${A} + INTERVAL 1 second, ${A}, 'upd')) t(id, tsNtz, tsNtzPartition, note)`,
      );
      const r = await merge(f, {
        batch: 'b',
        keyColumns: ['id'],
        orderBy: 'tsNtz',
        schemaEvolution: 'addColumns',
      });
      expect(r).toMatchObject({ version: 3, inserted: 1, updated: 1 });
      // Stats pruning still works on the integer bounds of the old files: only the file holding id 1 is read.
      expect(r.filesScanned).toBe(1);
      const after = await readRows(f, 'id');
      expect(after.map((x) => [x['id'], x['note']])).toEqual([
        ...['0', '1', '2', '3', '4', '5', '6', '7', '8'].map((id) => [
          id,
          id === '1' ? 'upd' : null,
        ]),
        ['3000000000', 'wide'],
      ]);
      const snapshot = await snapshotOf(f);
      expect(snapshot.schema.fields[0]).toMatchObject({
        name: 'id',
        type: 'long',
        metadata: WIDENED,
      });
      const bytes = await f.storage.read('_delta_log/00000000000000000003.json');
      const adds = parseCommit(new TextDecoder().decode(bytes!), 3, f.storage.uri).flatMap((a) =>
        'add' in a ? [a.add] : [],
      );
      expect(adds.length).toBeGreaterThan(0);
      for (const add of adds) {
        const path = join(f.dir, decodeLogPath(add.path, f.storage.uri));
        const [idColumn] = await session.allJson(
          `SELECT type FROM parquet_schema(${str(path)}) WHERE name = 'id'`,
        );
        expect(idColumn).toEqual({ type: 'INT64' });
      }
    } finally {
      await f.close();
    }
  });
});
