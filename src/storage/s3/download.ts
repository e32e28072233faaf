/**
 * One attempt of a download: the object's bytes into a temporary file of the attempt's own, next
 * to the destination. A failed attempt's file is closed (its writes landed) and removed before
 * the next attempt starts, so no write of one attempt can land in another's file; a finished
 * attempt's file must hold exactly the object's size before the caller renames it into place.
 */
import { randomUUID } from 'node:crypto';
import { createWriteStream, promises as fsp } from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { StorageError } from '../../errors.js';
import type { ObjectVersion } from './resumable-get.js';

export interface Downloaded {
  /** The attempt's complete temporary file. */
  file: string;
  object: ObjectVersion;
}

/** Write `body` (the object `object`) to a fresh temporary file beside `dest`. */
export async function downloadAttempt(
  body: Readable,
  object: ObjectVersion,
  dest: string,
  call: { key: string; uri: string; signal?: AbortSignal },
): Promise<Downloaded> {
  const file = path.join(path.dirname(dest), `.tmp-${randomUUID()}`);
  const out = createWriteStream(file);
  try {
    await pipeline(body, out, call.signal ? { signal: call.signal } : {});
    const { size } = await fsp.stat(file);
    if (size !== object.size) throw sizeMismatch(call, file, size, object.size);
    return { file, object };
  } catch (err) {
    // Its writes still in flight land before 'close' (an 'error' event may come first: not awaited).
    if (!out.closed) await new Promise<void>((resolve) => out.once('close', () => resolve()));
    await fsp.rm(file, { force: true });
    throw err;
  }
}

function sizeMismatch(
  call: { key: string; uri: string },
  file: string,
  size: number,
  expected: number,
): StorageError {
  return new StorageError(
    `[storage] download of ${JSON.stringify(call.key)} from ${call.uri}: the file holds ${size} bytes where the object has ${expected}; the download starts over`,
    {
      kind: 'transient',
      context: {
        key: call.key,
        uri: call.uri,
        localPath: file,
        startOver: true,
        fault: 'download size mismatch',
      },
    },
  );
}
