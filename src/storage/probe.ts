/**
 * Does a store honour conditional writes? Delta commits rely on put-if-absent; a store
 * that silently ignores `If-None-Match: *` (s3rver, some older S3-compatible servers) would
 * let two writers overwrite each other's commit. We ask the store rather than trust it.
 */
import { randomUUID } from 'node:crypto';
import { ConditionalWriteUnsupportedError } from '../errors.js';
import type { Storage } from './storage.js';

/** Hidden folder for probe objects (Delta and Spark readers ignore names starting with `_`). */
export const PROBE_PREFIX = '_tidemark/';

/**
 * Write a fresh probe key twice with writeIfAbsent. Honoured means: the first call created
 * it, the second refused, and the content is still the first write's. The probe key is
 * removed afterwards. One key, three requests plus a delete.
 */
export async function probeConditionalWrite(storage: Storage): Promise<boolean> {
  const key = `${PROBE_PREFIX}probe-${randomUUID()}`;
  try {
    if (!(await storage.writeIfAbsent(key, 'first'))) return false; // a fresh key cannot exist
    if (await storage.writeIfAbsent(key, 'second')) return false; // overwritten: ignored
    const body = await storage.read(key);
    return body !== null && Buffer.from(body).toString('utf8') === 'first';
  } finally {
    // A leftover probe object is harmless; a failed cleanup must not hide the answer.
    await storage.delete([key]).catch(() => undefined);
  }
}

/**
 * Refuse to commit to a store that ignores conditional writes, unless this process is
 * declared the only writer (`storage.singleWriter: true`). Skips the probe in that case.
 */
export async function assertSafeCommits(
  storage: Storage,
  opts: { singleWriter: boolean },
): Promise<void> {
  if (opts.singleWriter) return;
  if (await probeConditionalWrite(storage)) return;
  throw new ConditionalWriteUnsupportedError(
    `[storage] ${storage.uri} ignores conditional writes (If-None-Match: *): a concurrent writer could ` +
      `overwrite a commit. Use a store that honours them (AWS S3, recent MinIO, a local folder), or, if ` +
      `this is the only writer of the table, set storage.singleWriter: true`,
    { kind: 'usage', context: { uri: storage.uri } },
  );
}
