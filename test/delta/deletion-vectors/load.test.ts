import { cp, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { DeletionVectorDescriptor } from '../../../src/delta/actions.js';
import {
  DeletionVectorCache,
  inlineDescriptor,
  loadDeletionVector,
  planDvFile,
  RowIndexSet,
  writeDeletionVectorFile,
} from '../../../src/delta/deletion-vectors/index.js';
import { DeltaLogError, StorageError } from '../../../src/errors.js';
import { LocalStorage } from '../../../src/storage/local.js';
import type { ByteRange, Storage } from '../../../src/storage/storage.js';
import { sharedTable } from '../../helpers/shared-tables.js';
import { loggedDvs } from './helpers.js';

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

async function tempTable(
  copyOf?: string,
): Promise<{ dir: string; storage: Storage; reads: Array<{ key: string; range?: ByteRange }> }> {
  const dir = await mkdtemp(join(tmpdir(), 'tidemark-dv-'));
  dirs.push(dir);
  if (copyOf) await cp(sharedTable(copyOf), dir, { recursive: true });
  const inner = new LocalStorage(dir);
  const reads: Array<{ key: string; range?: ByteRange }> = [];
  // Every call goes to the real storage; reads are recorded with their range.
  const storage = new Proxy(inner, {
    get(target, prop) {
      if (prop === 'read') {
        return (key: string, range?: ByteRange) => {
          reads.push({ key, range });
          return target.read(key, range);
        };
      }
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { dir, storage, reads };
}

async function rejection(promise: Promise<unknown>): Promise<Error> {
  const result = await promise.then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  if (!result) throw new Error('expected a rejection');
  return result;
}

const sets = () =>
  [[0, 7, 14], [70, 81], Array.from({ length: 10_000 }, (_, i) => i * 5), [2 ** 33 + 1]].map((v) =>
    RowIndexSet.fromIndexes(v),
  );

describe('writing a packed .bin file', () => {
  it('writes one file under a fresh UUID with one u descriptor per DV, and each loads back with one ranged read', async () => {
    const { dir, storage, reads } = await tempTable();
    const plan = await writeDeletionVectorFile(storage, sets());
    expect(plan.key).toBe(`deletion_vector_${plan.uuid}.bin`);
    expect(plan.descriptors.map((d) => d.offset)).toEqual([
      1,
      47,
      91,
      91 + 4 + plan.descriptors[2]!.sizeInBytes + 4,
    ]);
    expect(plan.descriptors.map((d) => d.cardinality)).toEqual([3, 2, 10_000, 1]);
    expect(new Uint8Array(await readFile(join(dir, plan.key)))).toEqual(plan.bytes);
    for (const [i, dv] of plan.descriptors.entries()) {
      reads.length = 0;
      const loaded = await loadDeletionVector(storage, dv, storage.uri);
      expect(loaded.equals(sets()[i]!)).toBe(true);
      expect(reads).toEqual([
        {
          key: plan.key,
          range: { start: dv.offset, end: dv.offset! + 4 + dv.sizeInBytes + 4 - 1 },
        },
      ]);
    }
  });

  it('puts the file in the prefix folder when a prefix is given', async () => {
    const { storage } = await tempTable();
    const plan = await writeDeletionVectorFile(storage, sets().slice(0, 1), { prefix: 'x9' });
    expect(plan.key).toBe(`x9/deletion_vector_${plan.uuid}.bin`);
    expect(
      (await loadDeletionVector(storage, plan.descriptors[0]!, storage.uri)).toArray(),
    ).toEqual([0, 7, 14]);
  });

  it('never overwrites an existing file', async () => {
    const { dir, storage } = await tempTable();
    const first = await writeDeletionVectorFile(storage, sets().slice(0, 1));
    const err = await rejection(
      writeDeletionVectorFile(storage, sets().slice(1, 2), { uuid: first.uuid }),
    );
    expect(err).toBeInstanceOf(StorageError);
    expect(err.message).toContain(`deletion vector file "${first.key}" already exists`);
    expect(new Uint8Array(await readFile(join(dir, first.key)))).toEqual(first.bytes);
  });

  it('refuses to plan a file for no DVs or for an empty DV', () => {
    expect(() => planDvFile([])).toThrow(RangeError);
    expect(() => planDvFile([RowIndexSet.fromIndexes([1]), RowIndexSet.empty()])).toThrow(
      /deletion vector 1 is empty/,
    );
  });
});

describe('loading a deletion vector', () => {
  it('a DV whose cardinality disagrees with its descriptor fails, naming key and offset', async () => {
    const { storage } = await tempTable();
    const plan = await writeDeletionVectorFile(storage, sets().slice(0, 2));
    const dv = { ...plan.descriptors[1]!, cardinality: 3 };
    const err = await rejection(
      loadDeletionVector(storage, dv, storage.uri, { dataFile: 'part-00001.parquet' }),
    );
    expect(err).toBeInstanceOf(DeltaLogError);
    expect(err.message).toBe(
      `[delta] deletion vector in "${plan.key}" at offset 47 of data file "part-00001.parquet" (table ${storage.uri}): ` +
        `the bitmap holds 2 row indexes, but the descriptor's cardinality is 3`,
    );
  });

  it('a corrupted byte on disk fails the CRC, naming key and offset', async () => {
    const { dir, storage } = await tempTable();
    const plan = await writeDeletionVectorFile(storage, sets().slice(0, 2));
    const bytes = await readFile(join(dir, plan.key));
    bytes[47 + 4 + 20]! ^= 0xff;
    await writeFile(join(dir, plan.key), bytes);
    const err = await rejection(loadDeletionVector(storage, plan.descriptors[1]!, storage.uri));
    expect(err).toBeInstanceOf(DeltaLogError);
    expect(err.message).toMatch(new RegExp(`in "${plan.key}" at offset 47 .*CRC-32 mismatch`));
    expect((err as DeltaLogError).context).toMatchObject({
      key: plan.key,
      offset: 47,
      uri: storage.uri,
    });
    expect(
      (await loadDeletionVector(storage, plan.descriptors[0]!, storage.uri)).toArray(),
    ).toEqual([0, 7, 14]);
  });

  it('a file shorter than the descriptor says is refused', async () => {
    const { storage } = await tempTable();
    const plan = await writeDeletionVectorFile(storage, sets().slice(0, 1));
    const err = await rejection(
      loadDeletionVector(storage, { ...plan.descriptors[0]!, offset: 10 }, storage.uri),
    );
    expect(err).toBeInstanceOf(DeltaLogError);
    expect(err.message).toMatch(/at offset 10 .*(size field|ends)/);
  });

  it('a missing .bin file is "DV file not found" naming the key and the data file, never an empty DV', async () => {
    const { storage } = await tempTable();
    const dv: DeletionVectorDescriptor = {
      storageType: 'u',
      pathOrInlineDv: '^jP?.<zvDfIGb{C.FPij',
      offset: 1,
      sizeInBytes: 38,
      cardinality: 3,
    };
    const err = await rejection(
      loadDeletionVector(storage, dv, storage.uri, { dataFile: 'part-00000.parquet' }),
    );
    expect(err).toBeInstanceOf(DeltaLogError);
    expect(err.message).toContain('DV file not found');
    expect(err.message).toContain('"deletion_vector_d12e7d16-e46d-48c9-8a71-b222c26dfc3b.bin"');
    expect(err.message).toContain('"part-00000.parquet"');
    expect((err as DeltaLogError).context).toMatchObject({
      key: 'deletion_vector_d12e7d16-e46d-48c9-8a71-b222c26dfc3b.bin',
      dataFile: 'part-00000.parquet',
      notFound: true,
    });
  });

  it("table 21 under Spark's test-only file names fails with DV file not found (README wrong answer)", async () => {
    const { dir, storage } = await tempTable('table-with-dv-large');
    for (const uuid of [
      '44ccbf3f-b223-4581-9cd8-a7e569120ada',
      'afcbf9f8-7558-4a5a-b1e2-7432c30bf452',
    ]) {
      await rename(
        join(dir, `deletion_vector_${uuid}.bin`),
        join(dir, `test%dv%prefix-deletion_vector_${uuid}.bin`),
      );
    }
    const [first] = loggedDvs(dir);
    const err = await rejection(
      loadDeletionVector(storage, first!.dv, storage.uri, { dataFile: first!.path }),
    );
    expect(err.message).toMatch(/DV file not found/);
  });

  it('inline DVs load without any read; an empty DV is not read either', async () => {
    const { storage, reads } = await tempTable();
    const set = RowIndexSet.fromIndexes([5, 2 ** 40]);
    expect(
      (await loadDeletionVector(storage, inlineDescriptor(set), storage.uri)).equals(set),
    ).toBe(true);
    const wrong = { ...inlineDescriptor(set), cardinality: 1 };
    await expect(loadDeletionVector(storage, wrong, storage.uri)).rejects.toThrow(
      /holds 2 row indexes, but the descriptor's cardinality is 1/,
    );
    const empty = {
      storageType: 'u',
      pathOrInlineDv: '^jP?.<zvDfIGb{C.FPij',
      offset: 1,
      sizeInBytes: 0,
      cardinality: 0,
    };
    expect((await loadDeletionVector(storage, empty, storage.uri)).cardinality).toBe(0);
    expect(reads).toEqual([]);
  });

  it('refuses an unsupported storage type before reading', async () => {
    const { storage, reads } = await tempTable();
    const dv = { storageType: 'r', pathOrInlineDv: 'x', sizeInBytes: 1, cardinality: 1 };
    await expect(loadDeletionVector(storage, dv, storage.uri)).rejects.toThrow(
      /storage type "r" is not supported/,
    );
    expect(reads).toEqual([]);
  });
});

describe('the DV cache', () => {
  it('reads each DV once, shares concurrent loads, and forgets failures', async () => {
    const { storage, reads } = await tempTable();
    const plan = await writeDeletionVectorFile(storage, sets());
    const cache = new DeletionVectorCache();
    const [a, b] = await Promise.all([
      loadDeletionVector(storage, plan.descriptors[0]!, storage.uri, { cache }),
      loadDeletionVector(storage, plan.descriptors[0]!, storage.uri, { cache }),
    ]);
    expect(a).toBe(b);
    await loadDeletionVector(storage, { ...plan.descriptors[0]! }, storage.uri, { cache });
    expect(reads).toHaveLength(1);

    const missing = { ...plan.descriptors[0]!, pathOrInlineDv: '^jP?.<zvDfIGb{C.FPij' };
    await expect(loadDeletionVector(storage, missing, storage.uri, { cache })).rejects.toThrow(
      /DV file not found/,
    );
    await expect(loadDeletionVector(storage, missing, storage.uri, { cache })).rejects.toThrow(
      /DV file not found/,
    );
    expect(reads).toHaveLength(3);
    expect(cache.size).toBe(1);
  });

  it('evicts the least recently used DV beyond its size', async () => {
    const { storage, reads } = await tempTable();
    const plan = await writeDeletionVectorFile(storage, sets());
    const cache = new DeletionVectorCache(2);
    const load = (i: number) =>
      loadDeletionVector(storage, plan.descriptors[i]!, storage.uri, { cache });
    await load(0);
    await load(1);
    await load(0); // 0 is now the most recent
    await load(2); // evicts 1
    expect(cache.size).toBe(2);
    reads.length = 0;
    await load(0);
    await load(2);
    expect(reads).toHaveLength(0);
    await load(1);
    expect(reads).toHaveLength(1);
  });
});
