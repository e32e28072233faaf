/**
 * Timeouts of S3 requests. The SDK's HTTP handler enforces the connect and request timeouts and
 * an idle timeout on the socket; response bodies, which the caller reads after the SDK call has
 * returned, also get the driver's own idle timer (`nextChunk`), so a body that stops half-way
 * fails and is resumed instead of hanging the run. A timeout is a transient fault like any other.
 */
import type { Readable } from 'node:stream';
import { StorageError } from '../../errors.js';

/**
 * TCP connect. S3 accepts connections in milliseconds; 3 s covers a congested path, and a
 * black-holed endpoint is left quickly for a retry on a fresh connection.
 */
export const DEFAULT_CONNECT_TIMEOUT_MS = 3_000;
/**
 * From sending a request to its response headers, the upload of the request body included (at
 * most one multipart part, 8 MiB by default). S3 answers most requests within a second; two
 * minutes leave room for a part on a slow link (about 70 KB/s). Response bodies are not under
 * this limit (a large download may take longer): the idle timeout watches them.
 */
export const DEFAULT_REQUEST_TIMEOUT_MS = 120_000;
/**
 * No byte in either direction for this long ends the attempt: before the headers (a server that
 * accepted and went silent) and between body chunks. S3's first byte comes within about 100 ms
 * and rarely after seconds, so 30 s of silence means the connection is dead. (A consumer that
 * stops reading a body for longer also idles the socket; the read then resumes where it was.)
 */
export const DEFAULT_IDLE_TIMEOUT_MS = 30_000;

export interface Timeouts {
  connectTimeoutMs: number;
  requestTimeoutMs: number;
  idleTimeoutMs: number;
}

/** Defaults filled in; each must be a positive integer. */
export function resolveTimeouts(opts: Partial<Timeouts>): Timeouts {
  const t: Timeouts = {
    connectTimeoutMs: opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    requestTimeoutMs: opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
    idleTimeoutMs: opts.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS,
  };
  for (const [name, value] of Object.entries(t)) {
    if (!Number.isSafeInteger(value) || value <= 0) {
      throw new StorageError(
        `[storage] S3 ${name} must be a positive number of milliseconds, got ${value}`,
        { kind: 'usage', context: { field: name } },
      );
    }
  }
  return t;
}

/**
 * Options for the SDK's NodeHttpHandler (the client builds it from them). `throwOnRequestTimeout`
 * makes the request timeout an error rather than a logged warning.
 */
export function handlerOptions(t: Timeouts): Record<string, unknown> {
  return {
    connectionTimeout: t.connectTimeoutMs,
    requestTimeout: t.requestTimeoutMs,
    throwOnRequestTimeout: true,
    socketTimeout: t.idleTimeoutMs,
  };
}

/** The next chunk of a response body, or a transient timeout error after `idleMs` without one. */
export async function nextChunk(
  it: AsyncIterator<unknown>,
  body: Readable,
  idleMs: number,
): Promise<IteratorResult<unknown>> {
  let timer: NodeJS.Timeout | undefined;
  const idle = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const err = idleTimeout(idleMs);
      body.destroy(err);
      reject(err);
    }, idleMs);
  });
  try {
    return await Promise.race([it.next(), idle]);
  } finally {
    clearTimeout(timer);
  }
}

/** A body that sent nothing for `idleMs`. Named like the SDK's timeouts, so it classifies the same. */
function idleTimeout(idleMs: number): Error {
  return Object.assign(new Error(`no data for ${idleMs} ms while reading the response body`), {
    name: 'TimeoutError',
    code: 'ETIMEDOUT',
  });
}
