/**
 * The read invariant of the storage contract: every read either raises an error or returns
 * exactly the object's bytes (the length checked first, then the bytes), whatever the store
 * answers. `checkReads` runs seeded random reads of every kind (read, read of a range, readStream,
 * readStream of a range, download) against any Storage whose objects it seeds, so the same check
 * runs on s3rver behind the fault proxy, on the mock S3, or on another S3 implementation.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { prng } from '../../scripts/lib/prng.js';
import type { ByteRange, Storage } from '../../src/storage/storage.js';

export const READ_KINDS = [
  'read',
  'read (range)',
  'readStream',
  'readStream (range)',
  'download',
] as const;
export type ReadKind = (typeof READ_KINDS)[number];
export const WHOLE_READS: readonly ReadKind[] = ['read', 'readStream', 'download'];
export const RANGED_READS: readonly ReadKind[] = ['read (range)', 'readStream (range)'];

export interface InvariantTarget {
  /** Where reads of these kinds go (a storage per kind lets each kind meet its own faults). */
  storage(kind: ReadKind): Storage;
  /** Put the object in place (straight on the store, without faults). */
  put(key: string, body: Buffer): Promise<void>;
}

export interface InvariantOptions {
  reads: number;
  seed: number;
  kinds: readonly ReadKind[];
  /** Objects to read, of sizes up to `maxSize` bytes (some empty, some of one byte). */
  objects: number;
  maxSize: number;
  /** Reads in flight at once. */
  concurrency: number;
  /** A folder for downloads (emptied as it goes). */
  tmp: string;
}

/** What happened, and every breach of the invariant (the test asserts there are none). */
export interface InvariantResult {
  seed: number;
  ok: Record<string, number>;
  failed: Record<string, number>;
  /** Error messages seen, by their first words (for the report), with counts. */
  errors: Record<string, number>;
  breaches: string[];
  ms: number;
}

async function drain(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** Run `opts.reads` random reads and check each outcome against the objects' bytes. */
export async function checkReads(
  target: InvariantTarget,
  opts: InvariantOptions,
): Promise<InvariantResult> {
  const random = prng(opts.seed);
  const int = (n: number) => Math.floor(random() * n);
  const objects = new Map<string, Buffer>();
  for (let i = 0; i < opts.objects; i++) {
    const size = i === 0 ? 0 : i === 1 ? 1 : 1 + int(opts.maxSize);
    const body = Buffer.from(Array.from({ length: size }, () => int(256)));
    const key = `inv/o${i}.bin`;
    await target.put(key, body);
    objects.set(key, body);
  }
  const keys = [...objects.keys()];
  // The plan is drawn up front, so the seed alone decides which reads are made.
  const plan = Array.from({ length: opts.reads }, () => {
    const key = keys[int(keys.length)]!;
    const size = objects.get(key)!.length;
    const kind = opts.kinds[int(opts.kinds.length)]!;
    const start = int(size + 1);
    const range: ByteRange = random() < 0.3 ? { start } : { start, end: start + int(size + 1) };
    return { key, kind, range };
  });
  const result: InvariantResult = {
    seed: opts.seed,
    ok: {},
    failed: {},
    errors: {},
    breaches: [],
    ms: 0,
  };
  const started = Date.now();
  let next = 0;
  const worker = async (w: number) => {
    const folder = path.join(opts.tmp, `w${w}`);
    await fsp.mkdir(folder, { recursive: true });
    for (let i = next++; i < plan.length; i = next++) {
      const { key, kind, range } = plan[i]!;
      const body = objects.get(key)!;
      const expected = kind.endsWith('(range)')
        ? body.subarray(range.start, range.end === undefined ? undefined : range.end + 1)
        : body;
      const storage = target.storage(kind);
      const what = kind.endsWith('(range)')
        ? `${kind} ${JSON.stringify(range)} of ${key}`
        : `${kind} of ${key}`;
      const dest = path.join(folder, `${i}.bin`);
      let got: Buffer;
      try {
        got = await readOnce(storage, kind, key, range, dest);
      } catch (err) {
        if (err instanceof Breach) {
          result.breaches.push(`read ${i} (${what}): ${err.message}`);
          continue;
        }
        result.failed[kind] = (result.failed[kind] ?? 0) + 1;
        // The message's shape (quoted names and numbers masked), to count alike failures together.
        const words = (err instanceof Error ? err.message : String(err))
          .replace(/"[^"]*"/g, '…')
          .replace(/\d+/g, 'N')
          .slice(0, 90);
        result.errors[words] = (result.errors[words] ?? 0) + 1;
        if (kind === 'download') {
          const left = await fsp.readdir(folder);
          if (left.length > 0)
            result.breaches.push(`read ${i} (${what}) failed and left files: ${left.join(', ')}`);
        }
        continue;
      }
      if (got.length !== expected.length) {
        result.breaches.push(
          `read ${i} (${what}): ${got.length} bytes where ${expected.length} were due`,
        );
      } else if (!got.equals(expected)) {
        result.breaches.push(`read ${i} (${what}): ${got.length} bytes, not the object's`);
      } else {
        result.ok[kind] = (result.ok[kind] ?? 0) + 1;
      }
      await fsp.rm(dest, { force: true });
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency }, (_, w) => worker(w)));
  result.ms = Date.now() - started;
  return result;
}

/** A read that returned, but not as the contract says (thrown so the bytes are not checked). */
class Breach extends Error {}

async function readOnce(
  storage: Storage,
  kind: ReadKind,
  key: string,
  range: ByteRange,
  dest: string,
): Promise<Buffer> {
  switch (kind) {
    case 'read':
      return Buffer.from((await storage.read(key))!);
    case 'read (range)':
      return Buffer.from((await storage.read(key, range))!);
    case 'readStream':
      return drain(await storage.readStream(key));
    case 'readStream (range)':
      return drain(await storage.readStream(key, range));
    case 'download': {
      const info = await storage.download(key, dest);
      const got = await fsp.readFile(dest);
      if (info.size !== got.length)
        throw new Breach(`download reported ${info.size} bytes for a file of ${got.length}`);
      const left = await fsp.readdir(path.dirname(dest));
      if (left.length !== 1) throw new Breach(`download left ${left.join(', ')} beside its file`);
      return got;
    }
  }
}
