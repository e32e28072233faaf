/**
 * Committing through S3Storage on s3rver, which ignores If-None-Match on PUT: the table refuses
 * to commit there unless told it is the only writer, and then works end to end.
 */
import { readdir } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StructType } from '../../src/delta/schema.js';
import { DuckSession } from '../../src/engine/duckdb.js';
import { ConditionalWriteUnsupportedError } from '../../src/errors.js';
import { startS3rver, type S3rverHandle } from '../helpers/s3rver.js';
import { appendRequest } from './commit-helpers.js';
import { openTable } from '../../scripts/lib/tables.js';
import { openTable as openEngineTable } from '../../src/engine/table.js';
import { Spool } from '../../src/spool/spool.js';

const SCHEMA: StructType = {
  type: 'struct',
  fields: [
    { name: 'id', type: 'long', nullable: true, metadata: {} },
    { name: 'p', type: 'string', nullable: true, metadata: {} },
  ],
};

let s3: S3rverHandle;
let session: DuckSession;
beforeAll(async () => {
  s3 = await startS3rver();
  session = await DuckSession.open({ threads: 1 });
});
afterAll(async () => {
  session?.close();
  await s3?.stop();
});

describe('DeltaTable on a store that ignores conditional writes', () => {
  it('refuses to commit, naming the store and the way out', async () => {
    const storage = s3.makeStorage();
    const err = await openTable(storage, session)
      .create({ schema: SCHEMA })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConditionalWriteUnsupportedError);
    expect(String(err)).toContain('singleWriter');
    expect((await storage.listAll({ prefix: '_delta_log/' })).objects).toEqual([]);
  });

  it('commits when declared the only writer, and checkpoints through upload', async () => {
    const storage = s3.makeStorage();
    const table = openTable(storage, session, { singleWriter: true, checkpointInterval: 2 });
    await table.create({ schema: SCHEMA, partitionColumns: ['p'] });
    await table.commit(appendRequest(0, ['p=a/1.parquet']));
    const result = await table.commit(appendRequest(1, ['p=a/2.parquet']));
    expect(result).toMatchObject({ version: 2, checkpoint: { written: true, version: 2 } });
    const snapshot = (await openTable(storage, session).snapshot())!;
    expect(snapshot.version).toBe(2);
    expect(snapshot.files.map((f) => f.path)).toEqual(['p=a/1.parquet', 'p=a/2.parquet']);
    const keys = (await storage.listAll({ prefix: '_delta_log/' })).objects.map((o) => o.key);
    expect(keys).toContain('_delta_log/00000000000000000002.checkpoint.parquet');
    expect(keys).toContain('_delta_log/_last_checkpoint');
  });

  it('a table with V2 checkpoints gets a UUID-named checkpoint and its sidecar through S3, and reads back from them', async () => {
    const storage = s3.makeStorage();
    const table = openTable(storage, session, { singleWriter: true, checkpointInterval: 2 });
    await table.create({
      schema: SCHEMA,
      partitionColumns: ['p'],
      configuration: { 'delta.checkpointPolicy': 'v2' },
    });
    await table.commit(appendRequest(0, ['p=a/1.parquet']));
    expect(await table.commit(appendRequest(1, ['p=a/2.parquet']))).toMatchObject({
      version: 2,
      checkpoint: { written: true, version: 2 },
    });
    const keys = (await storage.listAll({ prefix: '_delta_log/' })).objects.map((o) => o.key);
    expect(keys.filter((k) => k.includes('.checkpoint.'))).toEqual([
      expect.stringMatching(/^_delta_log\/00000000000000000002\.checkpoint\.[0-9a-f-]{36}\.json$/),
    ]);
    expect(keys.filter((k) => k.startsWith('_delta_log/_sidecars/'))).toHaveLength(1);
    const snapshot = (await openTable(storage, session).snapshot())!;
    expect(snapshot.files.map((f) => f.path)).toEqual(['p=a/1.parquet', 'p=a/2.parquet']);
  });

  it('checkpoint scratch files leave the spool as soon as they are written or read (V1 and V2)', async () => {
    const spool = await Spool.create('cp-scratch');
    try {
      for (const configuration of [{}, { 'delta.checkpointPolicy': 'v2' }] as Record<
        string,
        string
      >[]) {
        const storage = s3.makeStorage();
        const engine = { session, spool };
        const table = openEngineTable(storage, engine, {
          singleWriter: true,
          checkpointInterval: 2,
        });
        await table.create({ schema: SCHEMA, partitionColumns: ['p'], configuration });
        await table.commit(appendRequest(0, ['p=a/1.parquet']));
        expect(await table.commit(appendRequest(1, ['p=a/2.parquet']))).toMatchObject({
          checkpoint: { written: true },
        });
        expect(await readdir(spool.dir, { recursive: true })).toEqual([]);
        // A fresh reader downloads the checkpoint (and its sidecar) into the spool, then drops them.
        expect((await openEngineTable(storage, engine).snapshot())!.files).toHaveLength(2);
        expect(await readdir(spool.dir, { recursive: true })).toEqual([]);
      }
    } finally {
      await spool.close();
    }
  });
});
