/**
 * GetObject read end to end. The SDK retries a request until its response headers arrive; the
 * body is read later, by the caller, and nothing would retry it. Here a body that breaks, stops
 * (idle timeout) or ends short is re-requested from the first byte not yet received
 * (`Range: bytes=<received>-`) with `If-Match` on the first response's ETag, so bytes of two
 * versions of an object are never joined: a replaced object fails with ObjectChanged (412, or a
 * different ETag from a store that ignores If-Match), and only whole-object readers that have
 * handed nothing out yet (read, download) start over.
 */
import { Readable } from 'node:stream';
import type { GetObjectCommandOutput } from '@aws-sdk/client-s3';
import { StorageError } from '../../errors.js';
import type { ByteRange } from '../storage.js';
import { statusOf } from './faults.js';
import type { Attempts } from './retry.js';
import { nextChunk } from './timeouts.js';

export interface GetRequest {
  /** `bytes=a-b` */
  range?: string;
  /** The quoted ETag the object must still have. */
  ifMatch?: string;
  signal: AbortSignal;
}

/** One GetObject request (counted and signed by the driver). */
export type GetFn = (req: GetRequest) => Promise<GetObjectCommandOutput>;

export interface OpenOptions {
  get: GetFn;
  range?: ByteRange;
  /** The operation's retry state: every request and resume draws on it. */
  attempts: Attempts;
  idleTimeoutMs: number;
  signal?: AbortSignal;
}

/** The version of the object being read. */
export interface ObjectVersion {
  /** Size of the whole object. */
  size: number;
  /** As the store sent it (quoted). */
  etag: string;
  lastModified?: Date;
}

export type Opened = 'missing' | 'empty' | { object: ObjectVersion; body: Readable };

/** Open a resumable read of the object (or a range); 'empty' when the range starts past the end. */
export async function openObject(opts: OpenOptions): Promise<Opened> {
  const reader = new BodyReader(opts);
  const opened = await reader.open();
  return opened === 'ok' ? { object: reader.object, body: new PullStream(reader) } : opened;
}

/** True for the error a replaced object gives (read and download start over on it). */
export function isObjectChanged(err: unknown): boolean {
  return err instanceof StorageError && err.context['changed'] === true;
}

/** One response body being read: its iterator and the absolute position of its next byte. */
interface Current {
  body: Readable;
  it: AsyncIterator<unknown>;
  at: number;
  /** Absolute position just past the response's last byte. */
  end: number;
}

/** Bytes a response covers: [start, end) of an object of `total` bytes (when known). */
interface Span {
  start: number;
  end: number;
  total?: number;
}

class BodyReader {
  object: ObjectVersion = { size: 0, etag: '' };
  /** Absolute position of the next byte the reader needs. */
  private pos: number;
  /** Absolute position just past the last byte the reader needs. */
  private endExcl = Number.POSITIVE_INFINITY;
  private current: Current | undefined;
  private closed = false;
  private readonly controller = new AbortController();
  private readonly signal: AbortSignal;
  private readonly onAbort = () => this.close();

  constructor(private readonly opts: OpenOptions) {
    this.pos = opts.range?.start ?? 0;
    // The caller's signal aborts this read through our own controller, with a listener removed
    // when the read ends (AbortSignal.any would keep one per read on a long-lived job signal).
    this.signal = this.controller.signal;
    if (opts.signal?.aborted) this.close();
    else opts.signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  async open(): Promise<'ok' | 'missing' | 'empty'> {
    const { range } = this.opts;
    let out: GetObjectCommandOutput;
    try {
      out = await this.request(range ? `bytes=${range.start}-${range.end ?? ''}` : undefined);
    } catch (err) {
      this.opts.signal?.removeEventListener('abort', this.onAbort);
      if (statusOf(err) === 404) return 'missing';
      if (statusOf(err) === 416) return 'empty'; // the range starts at or past the end
      throw err;
    }
    const span = spanOf(out);
    this.object = { size: span.total ?? span.end, etag: out.ETag ?? '', ...(out.LastModified ? { lastModified: out.LastModified } : {}) };
    const wantEnd = range?.end === undefined ? Number.POSITIVE_INFINITY : range.end + 1;
    this.endExcl = Math.min(wantEnd, span.total ?? span.end);
    this.current = attach(out, span);
    return 'ok';
  }

  /** The next slice of wanted bytes, or null at the end; resumes a broken body. */
  async pull(): Promise<Buffer | null> {
    for (;;) {
      const cur = this.current;
      if (this.pos >= this.endExcl || !cur) {
        await this.finish();
        return null;
      }
      try {
        const next = await nextChunk(cur.it, cur.body, this.opts.idleTimeoutMs);
        if (next.done) {
          // No length to hold the body to (a chunked answer without Content-Length or Content-Range):
          // its end is the object's end, not a cut.
          if (!Number.isFinite(cur.end)) {
            this.endExcl = Math.min(this.endExcl, cur.at);
            this.object.size = cur.at;
            continue;
          }
          throw this.cutShort(cur);
        }
        const chunk = Buffer.isBuffer(next.value) ? next.value : Buffer.from(next.value as Uint8Array);
        const from = cur.at;
        cur.at += chunk.length;
        // The store may send bytes before or after the wanted ones (a range it ignored, a resumed
        // response that starts earlier): keep only [pos, endExcl).
        const lo = Math.max(0, this.pos - from);
        const hi = Math.min(chunk.length, this.endExcl - from);
        if (hi <= lo) continue;
        this.pos = from + hi;
        this.opts.attempts.progressed();
        return lo === 0 && hi === chunk.length ? chunk : chunk.subarray(lo, hi);
      } catch (err) {
        if (this.closed) throw err;
        cur.body.destroy();
        this.current = undefined;
        await this.opts.attempts.failed(err);
        this.current = await this.resume();
      }
    }
  }

  /** Stop: the consumer destroyed the stream, or the caller's signal fired. */
  close(): void {
    this.closed = true;
    this.controller.abort();
    this.current?.body.destroy();
    this.current = undefined;
    this.opts.signal?.removeEventListener('abort', this.onAbort);
  }

  /** Request the rest, on condition that the object is still the version we started reading. */
  private async resume(): Promise<Current> {
    const { etag } = this.object;
    if (!etag) throw this.changed(undefined);
    const last = Number.isFinite(this.endExcl) ? String(this.endExcl - 1) : '';
    let out: GetObjectCommandOutput;
    try {
      out = await this.request(`bytes=${this.pos}-${last}`, etag);
    } catch (err) {
      const status = statusOf(err);
      if (status === 412 || status === 416) throw this.changed(undefined, err);
      throw err;
    }
    const span = spanOf(out);
    // A store that ignores If-Match (s3rver) answers with the new version: compare ETags too.
    if (out.ETag !== etag || span.start > this.pos) {
      (out.Body as Readable | undefined)?.destroy();
      throw this.changed(out.ETag);
    }
    return attach(out, span);
  }

  /** One request, retried on transient faults before its headers arrive. */
  private async request(range: string | undefined, ifMatch?: string): Promise<GetObjectCommandOutput> {
    for (;;) {
      if (this.closed) throw abortError();
      try {
        const out = await this.opts.get({ ...(range ? { range } : {}), ...(ifMatch ? { ifMatch } : {}), signal: this.signal });
        this.opts.attempts.succeeded();
        return out;
      } catch (err) {
        if (this.closed) throw err;
        await this.opts.attempts.failed(err);
      }
    }
  }

  /** At the end: read the body's end (so its connection is reused) or drop what is left over. */
  private async finish(): Promise<void> {
    const cur = this.current;
    this.current = undefined;
    this.opts.signal?.removeEventListener('abort', this.onAbort);
    if (!cur || cur.body.readableEnded) return;
    if (cur.at < cur.end) return void cur.body.destroy();
    try {
      const next = await nextChunk(cur.it, cur.body, this.opts.idleTimeoutMs);
      if (!next.done) cur.body.destroy();
    } catch {
      // Every wanted byte is here; a failure after them changes nothing.
    }
  }

  private cutShort(cur: Current): StorageError {
    const { key, uri } = this.opts.attempts.op;
    return new StorageError(`[storage] S3 response body for ${JSON.stringify(key)} in ${uri} ended after ${cur.at} of ${cur.end} bytes`, {
      kind: 'transient',
      context: { key, uri, fault: 'body cut short' },
    });
  }

  private changed(newEtag: string | undefined, cause?: unknown): StorageError {
    const { key, uri } = this.opts.attempts.op;
    const was = this.object.etag || '(none)';
    const now = newEtag ? ` → ${newEtag}` : '';
    return new StorageError(
      `[storage] S3 object ${JSON.stringify(key)} in ${uri} changed while it was read (ETag ${was}${now}) after ${this.pos} bytes; ` +
        'the bytes read are not joined to the new version',
      { kind: 'transient', context: { key, uri, changed: true, etag: this.object.etag, position: this.pos, fault: 'object changed' }, cause },
    );
  }
}

/** A Readable that pulls from the reader: a chunk per `_read`, so backpressure stops the requests. */
class PullStream extends Readable {
  constructor(private readonly reader: BodyReader) {
    super();
  }
  override _read(): void {
    this.reader.pull().then(
      (chunk) => void this.push(chunk),
      (err: unknown) => this.destroy(err instanceof Error ? err : new Error(String(err))),
    );
  }
  override _destroy(err: Error | null, done: (err?: Error | null) => void): void {
    this.reader.close();
    done(err);
  }
}

function attach(out: GetObjectCommandOutput, span: Span): Current {
  const body = (out.Body as Readable | undefined) ?? Readable.from([]);
  return { body, it: body[Symbol.asyncIterator](), at: span.start, end: span.end };
}

/** From Content-Range (`bytes 2-5/10`), else the whole object from Content-Length. */
function spanOf(out: GetObjectCommandOutput): Span {
  const m = out.ContentRange ? /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(out.ContentRange) : null;
  if (m) {
    const total = m[3] === '*' ? undefined : Number(m[3]);
    return { start: Number(m[1]), end: Number(m[2]) + 1, ...(total === undefined ? {} : { total }) };
  }
  const length = out.ContentLength ?? Number.POSITIVE_INFINITY;
  return { start: 0, end: length, ...(out.ContentLength === undefined ? {} : { total: out.ContentLength }) };
}

function abortError(): Error {
  return Object.assign(new Error('read cancelled'), { name: 'AbortError' });
}
