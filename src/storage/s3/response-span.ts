/**
 * Which bytes of an object a GetObject response holds, from its status, Content-Range and
 * Content-Length, and whether those agree with each other and with the read that asked. A
 * response whose headers disagree is a fault (a gateway or store answering wrongly), never a
 * reason to take fewer or other bytes than asked: the reader retries it like a broken body.
 */

/** Bytes a response covers: [start, end) of an object of `total` bytes (when known). */
export interface Span {
  start: number;
  /** Just past the last byte; Infinity when the response has no length (a chunked 200). */
  end: number;
  total?: number;
}

/** The response fields the span is read from. */
export interface SpanHeaders {
  ContentRange?: string;
  ContentLength?: number;
  $metadata?: { httpStatusCode?: number };
}

export type SpanResult = { span: Span } | { fault: string };

const CONTENT_RANGE = /^bytes (\d+)-(\d+)\/(\d+|\*)$/;

/**
 * The span of a response to a read that starts at byte `askedStart`. A response may start earlier
 * (a store that ignored the Range: the reader drops the bytes before), never later.
 */
export function spanOf(out: SpanHeaders, askedStart: number): SpanResult {
  const status = out.$metadata?.httpStatusCode;
  const length = out.ContentLength;
  let span: Span;
  if (out.ContentRange !== undefined) {
    const m = CONTENT_RANGE.exec(out.ContentRange);
    if (!m)
      return { fault: `answered an unreadable Content-Range ${JSON.stringify(out.ContentRange)}` };
    const start = Number(m[1]);
    const last = Number(m[2]);
    const total = m[3] === '*' ? undefined : Number(m[3]);
    if (last < start)
      return { fault: `answered Content-Range ${out.ContentRange}, which ends before it starts` };
    if (total !== undefined && last >= total)
      return {
        fault: `answered Content-Range ${out.ContentRange}, which ends past the object's size`,
      };
    if (length !== undefined && length !== last - start + 1) {
      return { fault: `answered Content-Range ${out.ContentRange} with Content-Length ${length}` };
    }
    span = { start, end: last + 1, ...(total === undefined ? {} : { total }) };
  } else {
    // Without Content-Range the answer must be the whole object (a 200), its length its size.
    if (status === 206) return { fault: 'answered 206 Partial Content without a Content-Range' };
    span =
      length === undefined
        ? { start: 0, end: Number.POSITIVE_INFINITY }
        : { start: 0, end: length, total: length };
  }
  if (span.start > askedStart)
    return {
      fault: `answered bytes from ${span.start} to a read from byte ${askedStart} (the range started late)`,
    };
  return { span };
}
