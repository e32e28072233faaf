/**
 * GetObject read end to end. The SDK retries a request until its response headers arrive; the
 * body is read later, by the caller, and nothing would retry it. Here a body that breaks, stops
 * (idle timeout) or ends short is re-requested from the first byte not yet received
 * (`Range: bytes=<received>-`) with `If-Match` on the first response's ETag, so bytes of two
 * versions of an object are never joined: a replaced object fails with ObjectChanged (412, or a
 * different ETag from a store that ignores If-Match), and only whole-object readers that have
 * handed nothing out yet (read, download) start over.
 *
 * A read ends where the object ends, never where a response happens to stop: the object's size
 * comes from the first response and every resumed response's Content-Range must confirm it; a
 * response must start where it was asked (./response-span.ts); a body without any length is
 * held to the size a HEAD reports. Anything else is a transient fault, retried like a cut body.
 * A whole-object read also hashes every byte it hands out, across resumes, and fails at its end
 * when they do not match the object's checksum (./checksums.ts).
 */
import { Readable } from 'node:stream';
import type { GetObjectCommandOutput, HeadObjectCommandOutput } from '@aws-sdk/client-s3';
import { StorageError } from '../../errors.js';
import type { ByteRange } from '../storage.js';
import { expectedChecksum, PartNumberIgnoredError, ReadHash } from './checksums.js';
import type { ChecksumCounter } from './checksums.js';
import { statusOf } from './faults.js';
import { spanOf } from './response-span.js';
import type { Span } from './response-span.js';
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
export type HeadRequest = Omit<GetRequest, 'range'> & {
  /** HEAD of this part of a multipart object: its size (Content-Length) and the parts' count. */
  partNumber?: number;
};
/**
 * One HeadObject request: for the size of an object whose body came without a length, or of the
 * parts of one whose checksum is composite.
 */
export type HeadFn = (req: HeadRequest) => Promise<HeadObjectCommandOutput>;

export interface OpenOptions {
  get: GetFn;
  head: HeadFn;
  range?: ByteRange;
  /** The operation's retry state: every request and resume draws on it. */
  attempts: Attempts;
  idleTimeoutMs: number;
  signal?: AbortSignal;
  /** Checking whole-object reads: is the ETag an MD5 where nothing better is given; the tally. */
  checks: { etagIsMd5: boolean; counter: ChecksumCounter };
}

/** The version of the object being read. */
export interface ObjectVersion {
  /** Size of the whole object (known at the latest when the read ends). */
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

/**
 * True for the errors after which a whole-object read starts over (read and download; a stream
 * cannot take back what it handed out): the object was replaced, the store's answers disagreed
 * about its size, or its bytes did not match its checksum.
 */
export function mustStartOver(err: unknown): boolean {
  return err instanceof StorageError && err.context['startOver'] === true;
}

/** One response body being read: its iterator and the absolute position of its next byte. */
interface Current {
  body: Readable;
  it: AsyncIterator<unknown>;
  at: number;
  /** Absolute position just past the response's last byte (Infinity: no length given). */
  end: number;
}

class BodyReader {
  object: ObjectVersion = { size: 0, etag: '' };
  /** Size of the whole object, once a response or a HEAD has said it. */
  private size: number | undefined;
  /** Absolute position of the next byte the reader needs. */
  private pos: number;
  /** Absolute position just past the last byte the caller asked for. */
  private readonly wantEnd: number;
  private current: Current | undefined;
  /** The hash of a whole-object read's bytes, when the object has a checksum to match. */
  private hash: ReadHash | undefined;
  /** The composite checksum's kind while the parts' sizes are asked for (for messages). */
  private expectedKind: string | undefined;
  /** Does the read cover the whole object (so its checksum applies)? */
  private whole = false;
  private verified = false;
  private closed = false;
  private readonly controller = new AbortController();
  private readonly signal: AbortSignal;
  private readonly onAbort = () => this.close();

  constructor(private readonly opts: OpenOptions) {
    this.pos = opts.range?.start ?? 0;
    this.wantEnd = opts.range?.end === undefined ? Number.POSITIVE_INFINITY : opts.range.end + 1;
    // The caller's signal aborts this read through our own controller, with a listener removed
    // when the read ends (AbortSignal.any would keep one per read on a long-lived job signal).
    this.signal = this.controller.signal;
    if (opts.signal?.aborted) this.close();
    else opts.signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  /** Just past the last byte to hand out: the caller's end, or the object's. */
  private get endExcl(): number {
    return Math.min(this.wantEnd, this.size ?? Number.POSITIVE_INFINITY);
  }

  async open(): Promise<'ok' | 'missing' | 'empty'> {
    const { range } = this.opts;
    let got: { out: GetObjectCommandOutput; span: Span };
    try {
      got = await this.request(range ? `bytes=${range.start}-${range.end ?? ''}` : undefined);
    } catch (err) {
      this.opts.signal?.removeEventListener('abort', this.onAbort);
      if (statusOf(err) === 404) return 'missing';
      if (statusOf(err) === 416) return 'empty'; // the range starts at or past the end
      throw err;
    }
    const { out, span } = got;
    this.size = span.total;
    this.object = {
      size: span.total ?? 0,
      etag: out.ETag ?? '',
      ...(out.LastModified ? { lastModified: out.LastModified } : {}),
    };
    this.whole =
      !range ||
      (range.start === 0 &&
        (range.end === undefined || (this.size !== undefined && range.end >= this.size - 1)));
    this.current = attach(out, span);
    const expected = this.whole ? expectedChecksum(out, this.opts.checks.etagIsMd5) : undefined;
    if (expected?.parts !== undefined) {
      this.expectedKind = expected.kind;
      try {
        this.hash = new ReadHash(expected, await this.partSizes(expected.parts));
      } catch (err) {
        this.close();
        throw err;
      }
    } else if (expected) {
      this.hash = new ReadHash(expected);
    }
    return 'ok';
  }

  /**
   * The sizes of the parts of a multipart object whose checksum is composite (a HEAD of each, up
   * to 8 at once): what its bytes are hashed by. They must be `parts` and add up to the object's
   * size; a store that answers otherwise (the object replaced since, or a store that cannot say)
   * fails the read with a transient fault, never a read without its check. No If-Match: moto
   * compares it with the part's own ETag; sizes of another version cannot make wrong bytes match.
   */
  private async partSizes(parts: number): Promise<number[]> {
    const sizes: number[] = [];
    for (let first = 1; first <= parts; first += 8) {
      const batch = Array.from({ length: Math.min(8, parts - first + 1) }, (_, i) =>
        this.headPart(first + i, parts),
      );
      sizes.push(...(await Promise.all(batch)));
    }
    const sum = sizes.reduce((a, b) => a + b, 0);
    if (this.size !== undefined && sum !== this.size) {
      throw this.badResponse(
        `answered parts of ${sum} bytes in all for an object of ${this.size} bytes (its checksum is composite of ${parts} parts)`,
      );
    }
    return sizes;
  }

  /** The size of part `partNumber` of `parts`, retried like any request. */
  private async headPart(partNumber: number, parts: number): Promise<number> {
    for (;;) {
      if (this.closed) throw abortError();
      try {
        const out = await this.opts.head({ partNumber, signal: this.signal });
        if (out.ContentLength === undefined)
          throw this.badResponse(`answered a HEAD of part ${partNumber} without Content-Length`);
        // The whole object's size, and no parts count: the store answered for the object, not the
        // part. Asking again would get the same answer; say what the store did instead.
        if (out.PartsCount === undefined && parts > 1 && out.ContentLength === this.size) {
          const { key, uri } = this.opts.attempts.op;
          throw new PartNumberIgnoredError({
            key,
            uri,
            partNumber,
            parts,
            size: out.ContentLength,
            checksum: this.expectedKind ?? 'composite',
          });
        }
        if (out.PartsCount !== undefined && out.PartsCount !== parts) {
          throw this.badResponse(
            `answered a HEAD of part ${partNumber} of ${out.PartsCount} parts where its checksum is composite of ${parts}`,
          );
        }
        this.opts.attempts.succeeded();
        return out.ContentLength;
      } catch (err) {
        if (this.closed) throw err;
        await this.opts.attempts.failed(err);
      }
    }
  }

  /** The next slice of wanted bytes, or null at the end; resumes a broken body. */
  async pull(): Promise<Buffer | null> {
    for (;;) {
      const cur = this.current;
      if (this.pos >= this.endExcl) {
        await this.finish();
        await this.verify();
        return null;
      }
      if (!cur) {
        await this.finish();
        return null;
      }
      try {
        const next = await nextChunk(cur.it, cur.body, this.opts.idleTimeoutMs);
        if (next.done) {
          await this.ended(cur);
          continue;
        }
        const chunk = Buffer.isBuffer(next.value)
          ? next.value
          : Buffer.from(next.value as Uint8Array);
        const from = cur.at;
        cur.at += chunk.length;
        // The store may send bytes before the wanted ones (a range it ignored, a resumed response
        // that starts earlier) or past them: keep only [pos, endExcl).
        const lo = Math.max(0, this.pos - from);
        const hi = Math.min(chunk.length, this.endExcl - from);
        if (hi <= lo) continue;
        this.pos = from + hi;
        this.opts.attempts.progressed();
        const slice = lo === 0 && hi === chunk.length ? chunk : chunk.subarray(lo, hi);
        this.hash?.update(slice);
        return slice;
      } catch (err) {
        if (this.closed || mustStartOver(err)) throw err;
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

  /**
   * A response body ended before the wanted bytes did. With a length, it was cut short. Without
   * one (a chunked answer without Content-Length or Content-Range), a clean end may be the
   * object's end or a cut: a HEAD says the object's size. Returns when the end is verified; throws
   * the fault to resume from otherwise.
   */
  private async ended(cur: Current): Promise<void> {
    if (Number.isFinite(cur.end) || this.size !== undefined) throw this.cutShort(cur);
    this.size = await this.sizeByHead();
    this.object.size = this.size;
    if (cur.at > this.size)
      throw this.inconsistent(`sent ${cur.at} bytes of an object of ${this.size} bytes`);
    if (this.pos < this.endExcl) throw this.cutShort(cur);
  }

  /** Request the rest, on condition that the object is still the version we started reading. */
  private async resume(): Promise<Current> {
    const { etag } = this.object;
    if (!etag) throw this.changed(undefined);
    const last = Number.isFinite(this.endExcl) ? String(this.endExcl - 1) : '';
    let got: { out: GetObjectCommandOutput; span: Span };
    try {
      got = await this.request(`bytes=${this.pos}-${last}`, etag);
    } catch (err) {
      const status = statusOf(err);
      if (status === 412 || status === 416) throw this.changed(undefined, err);
      throw err;
    }
    return attach(got.out, got.span);
  }

  /**
   * One request, retried on transient faults before its headers arrive and on headers that
   * disagree with what was asked (./response-span.ts). A resumed response must also be the same
   * version (ETag) and size as the first.
   */
  private async request(
    range: string | undefined,
    ifMatch?: string,
  ): Promise<{ out: GetObjectCommandOutput; span: Span }> {
    for (;;) {
      if (this.closed) throw abortError();
      try {
        const out = await this.opts.get({
          ...(range ? { range } : {}),
          ...(ifMatch ? { ifMatch } : {}),
          signal: this.signal,
        });
        const span = this.checked(out, ifMatch);
        this.opts.attempts.succeeded();
        return { out, span };
      } catch (err) {
        if (this.closed || mustStartOver(err)) throw err;
        await this.opts.attempts.failed(err);
      }
    }
  }

  /** The response's span, or the fault its headers show (its body is dropped then). */
  private checked(out: GetObjectCommandOutput, ifMatch: string | undefined): Span {
    const drop = () => (out.Body as Readable | undefined)?.destroy();
    // A store that ignores If-Match (s3rver) answers with the new version: compare ETags too.
    if (ifMatch !== undefined && out.ETag !== ifMatch) {
      drop();
      throw this.changed(out.ETag);
    }
    const result = spanOf(out, this.pos);
    if ('fault' in result) {
      drop();
      throw this.badResponse(result.fault);
    }
    const { total } = result.span;
    if (
      ifMatch !== undefined &&
      total !== undefined &&
      this.size !== undefined &&
      total !== this.size
    ) {
      drop();
      throw this.inconsistent(
        `answered a size of ${total} bytes where the first response said ${this.size}`,
      );
    }
    return result.span;
  }

  /** The object's size from a HEAD (same version), retried like any request. */
  private async sizeByHead(): Promise<number> {
    const { etag } = this.object;
    for (;;) {
      if (this.closed) throw abortError();
      try {
        const out = await this.opts.head({ ifMatch: etag, signal: this.signal });
        if (out.ETag !== etag) throw this.changed(out.ETag);
        if (out.ContentLength === undefined)
          throw this.badResponse('answered a HEAD without Content-Length');
        this.opts.attempts.succeeded();
        return out.ContentLength;
      } catch (err) {
        const status = statusOf(err);
        if (status === 412 || status === 404) throw this.changed(undefined, err);
        if (this.closed || mustStartOver(err)) throw err;
        await this.opts.attempts.failed(err);
      }
    }
  }

  /** At the end of a whole-object read: its bytes must match the object's checksum. */
  private async verify(): Promise<void> {
    if (!this.whole || this.verified) return;
    this.verified = true;
    const { counter } = this.opts.checks;
    if (!this.hash) return counter.read('none');
    const actual = await this.hash.actual();
    if (actual !== this.hash.expected.value) throw this.mismatch(actual);
    counter.read(this.hash.expected.kind);
  }

  /** At the end: read the body's end (so its connection is reused) or drop what is left over. */
  private async finish(): Promise<void> {
    const cur = this.current;
    this.current = undefined;
    this.opts.signal?.removeEventListener('abort', this.onAbort);
    if (this.size !== undefined) this.object.size = this.size;
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
    const what =
      cur.at < cur.end
        ? `ended after ${cur.at} of ${cur.end} bytes`
        : `ended at byte ${cur.at}, before byte ${this.endExcl} of an object of ${this.size ?? 'unknown size'}`;
    return new StorageError(
      `[storage] S3 response body for ${JSON.stringify(key)} in ${uri} ${what}`,
      {
        kind: 'transient',
        context: { key, uri, fault: 'body cut short' },
      },
    );
  }

  /** A response whose headers disagree with the read (retried in place). */
  private badResponse(what: string): StorageError {
    const { key, uri } = this.opts.attempts.op;
    return new StorageError(`[storage] S3 GetObject of ${JSON.stringify(key)} in ${uri} ${what}`, {
      kind: 'transient',
      context: { key, uri, fault: 'inconsistent response', position: this.pos },
    });
  }

  /** Answers that disagree about the object itself: what was read cannot be trusted, start over. */
  private inconsistent(what: string): StorageError {
    const { key, uri } = this.opts.attempts.op;
    return new StorageError(
      `[storage] S3 object ${JSON.stringify(key)} in ${uri}: the store ${what}, after ${this.pos} bytes; the read starts over`,
      {
        kind: 'transient',
        context: { key, uri, startOver: true, position: this.pos, fault: 'inconsistent size' },
      },
    );
  }

  private mismatch(actual: string): StorageError {
    const { key, uri } = this.opts.attempts.op;
    const { kind, value } = this.hash!.expected;
    const why =
      kind === 'ETag MD5'
        ? " (a single-part object's ETag is taken for its MD5; for a store whose ETags are not, set storage.etagChecksum: false)"
        : '';
    return new StorageError(
      `[storage] S3 object ${JSON.stringify(key)} in ${uri}: the ${this.pos} bytes read do not match its ${kind} checksum ${value} (they hash to ${actual})${why}; the read starts over`,
      {
        kind: 'transient',
        context: {
          key,
          uri,
          startOver: true,
          checksum: kind,
          expected: value,
          actual,
          fault: 'checksum mismatch',
        },
      },
    );
  }

  private changed(newEtag: string | undefined, cause?: unknown): StorageError {
    const { key, uri } = this.opts.attempts.op;
    const was = this.object.etag || '(none)';
    const now = newEtag ? ` → ${newEtag}` : '';
    return new StorageError(
      `[storage] S3 object ${JSON.stringify(key)} in ${uri} changed while it was read (ETag ${was}${now}) after ${this.pos} bytes; ` +
        'the bytes read are not joined to the new version',
      {
        kind: 'transient',
        context: {
          key,
          uri,
          changed: true,
          startOver: true,
          etag: this.object.etag,
          position: this.pos,
          fault: 'object changed',
        },
        cause,
      },
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

function abortError(): Error {
  return Object.assign(new Error('read cancelled'), { name: 'AbortError' });
}
