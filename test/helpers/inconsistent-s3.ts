/**
 * A mock S3 endpoint for faults no real server produces on demand: it serves GetObject and
 * HeadObject for objects held in memory (path style, signatures ignored) and answers each GET
 * as a plan says, honest or deliberately inconsistent: a Content-Range that starts late or early,
 * a wrong total, a Content-Length that disagrees with it, no length at all, a short 206, a short
 * 200, a body cut or ended cleanly before its end. The bytes a plan sends are always the object's
 * bytes at the offsets the plan names, so a reader that trusts headers which disagree with each
 * other or with the request is caught by the length or the bytes it returns.
 *
 * ETags are the objects' MD5, as on s3rver, MinIO and AWS without SSE-KMS, unless `put` is given
 * another ETag and headers (checksums, encryption) for the object's whole answers. Tests using
 * this server say so in their names ("mock S3").
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** How one GET is answered. Offsets are absolute positions in the object. */
export interface AnswerPlan {
  status: 200 | 206 | 500 | 503;
  /** The body holds the object's bytes [from, to). */
  from: number;
  to: number;
  /** Content-Range header to send, if any (`total` '*' for an unknown size). */
  contentRange?: { start: number; last: number; total: number | '*' };
  /** Content-Length header; undefined sends the body chunked, without a length. */
  contentLength?: number;
  /** After the body's bytes: end the response cleanly, or destroy the connection. */
  ending: 'end' | 'destroy';
}

export interface GetRequestSeen {
  key: string;
  /** Absolute first and last byte asked (last: undefined to the end), from the Range header. */
  start: number;
  last?: number;
  ranged: boolean;
  ifMatch?: string;
}

/** Decides a GET's answer; `honest` is what S3 would answer. */
export type Planner = (req: GetRequestSeen, size: number, honest: AnswerPlan) => AnswerPlan;

export interface InconsistentS3 {
  endpoint: string;
  /** Store `body` under `bucket/key`; `headers` go with its 200 answers (not its ranges). */
  put(key: string, body: Buffer, opts?: { etag?: string; headers?: Record<string, string> }): void;
  /** The planner for the next GETs (default: honest). */
  setPlanner(planner: Planner): void;
  /** GETs and HEADs received. */
  readonly counts: { get: number; head: number };
  stop(): Promise<void>;
}

/** What S3 answers: 206 for a satisfiable Range, 200 for the whole object. */
export function honestPlan(req: GetRequestSeen, size: number): AnswerPlan {
  if (!req.ranged) return { status: 200, from: 0, to: size, contentLength: size, ending: 'end' };
  const last = Math.min(req.last ?? size - 1, size - 1);
  return {
    status: 206,
    from: req.start,
    to: last + 1,
    contentRange: { start: req.start, last, total: size },
    contentLength: last + 1 - req.start,
    ending: 'end',
  };
}

export async function startInconsistentS3(bucket: string): Promise<InconsistentS3> {
  const objects = new Map<
    string,
    { body: Buffer; etag: string; modified: Date; headers: Record<string, string> }
  >();
  let planner: Planner = (_req, _size, honest) => honest;
  const counts = { get: 0, head: 0 };
  const sockets = new Set<Socket>();

  const server = http.createServer((req, res) => {
    req.resume();
    const url = new URL(req.url ?? '/', 'http://mock');
    const prefix = `/${bucket}/`;
    const key = url.pathname.startsWith(prefix)
      ? decodeURIComponent(url.pathname.slice(prefix.length))
      : '';
    const object = objects.get(key);
    if (req.method === 'HEAD') counts.head++;
    else counts.get++;
    if (!object) return s3Error(res, 404, 'NoSuchKey');
    const ifMatch = req.headers['if-match'];
    if (typeof ifMatch === 'string' && ifMatch !== object.etag)
      return s3Error(res, 412, 'PreconditionFailed');
    const common = {
      etag: object.etag,
      'last-modified': object.modified.toUTCString(),
      'accept-ranges': 'bytes',
    };
    if (req.method === 'HEAD') {
      res.writeHead(200, { ...common, 'content-length': object.body.length });
      return res.end();
    }
    const size = object.body.length;
    const seen = parseRange(
      key,
      req.headers['range'],
      typeof ifMatch === 'string' ? ifMatch : undefined,
    );
    if (seen.ranged && seen.start >= size) return s3Error(res, 416, 'InvalidRange');
    const plan = planner(seen, size, honestPlan(seen, size));
    if (plan.status >= 500)
      return s3Error(res, plan.status, plan.status === 503 ? 'SlowDown' : 'InternalError');
    const headers: http.OutgoingHttpHeaders = {
      ...common,
      ...(plan.status === 200 ? object.headers : {}),
      'content-type': 'application/octet-stream',
    };
    if (plan.contentRange) {
      const { start, last, total } = plan.contentRange;
      headers['content-range'] = `bytes ${start}-${last}/${total}`;
    }
    if (plan.contentLength !== undefined) headers['content-length'] = plan.contentLength;
    res.writeHead(plan.status, headers);
    const bytes = object.body.subarray(plan.from, plan.to);
    if (plan.ending === 'destroy') {
      res.write(bytes, () => req.socket.destroy());
      return;
    }
    // With a Content-Length larger than the bytes, Node would wait for the rest: close instead.
    if (plan.contentLength !== undefined && plan.contentLength > bytes.length) {
      res.write(bytes, () => req.socket.destroy());
      return;
    }
    res.end(bytes);
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    counts,
    put(key, body, opts = {}) {
      const etag = opts.etag ?? `"${createHash('md5').update(body).digest('hex')}"`;
      objects.set(key, { body, etag, modified: new Date(), headers: opts.headers ?? {} });
    },
    setPlanner(p) {
      planner = p;
    },
    async stop() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function parseRange(
  key: string,
  header: string | string[] | undefined,
  ifMatch: string | undefined,
): GetRequestSeen {
  const m = typeof header === 'string' ? /^bytes=(\d+)-(\d*)$/.exec(header) : null;
  const base = { key, ...(ifMatch ? { ifMatch } : {}) };
  if (!m) return { ...base, start: 0, ranged: false };
  return { ...base, start: Number(m[1]), ...(m[2] ? { last: Number(m[2]) } : {}), ranged: true };
}

function s3Error(res: http.ServerResponse, status: number, code: string): void {
  const body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${code}</Message><RequestId>mock</RequestId></Error>`;
  res.writeHead(status, {
    'content-type': 'application/xml',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

/** The lies `lyingPlanner` tells. Those marked whole-only look like a shorter or other object: only a checksum tells. */
export const LIES = [
  'cut',
  'cleanShort',
  'lateStart',
  'earlyStart',
  'wrongTotal',
  'lengthMismatch',
  'short206',
  'missingRange206',
  'noLength',
  'serverError',
  'shortObject',
  'shiftedBody',
] as const;
export type Lie = (typeof LIES)[number];

/**
 * A planner that answers a share `rate` of GETs with a lie drawn from `random`, the others
 * honestly; `told` counts the lies told. A lie that cannot apply (an empty body to cut) gives way to one not yet told that can, else the answer is honest.
 * shortObject and shiftedBody (a 200 of fewer bytes, its length theirs) are told to unranged GETs
 * only: to a range they would be a consistent answer of another object, which nothing can tell.
 */
export function lyingPlanner(
  rate: number,
  random: () => number,
): { planner: Planner; told: Partial<Record<Lie, number>> } {
  const told: Partial<Record<Lie, number>> = {};
  const below = (n: number) => Math.floor(random() * n);
  const planner: Planner = (req, size, honest) => {
    if (random() >= rate) return honest;
    const drawn = LIES[below(LIES.length)]!;
    // A lie that cannot apply to this request gives way to one not yet told that can, so a run
    // tells every lie however its requests interleave (which lie meets which request is timing).
    for (const lie of [drawn, ...LIES.filter((l) => l !== drawn && !told[l])]) {
      const plan = lieOf(lie, req, size, honest, below);
      if (plan === honest) continue;
      told[lie] = (told[lie] ?? 0) + 1;
      return plan;
    }
    return honest;
  };
  return { planner, told };
}

function lieOf(
  lie: Lie,
  req: GetRequestSeen,
  size: number,
  honest: AnswerPlan,
  below: (n: number) => number,
): AnswerPlan {
  const length = honest.to - honest.from;
  const last = honest.to - 1;
  const partial = (from: number, to: number, total: number | '*' = size): AnswerPlan => ({
    status: 206,
    from,
    to,
    contentRange: { start: from, last: to - 1, total },
    contentLength: to - from,
    ending: 'end',
  });
  switch (lie) {
    case 'cut':
      return length < 2
        ? honest
        : { ...honest, to: honest.from + 1 + below(length - 1), ending: 'destroy' };
    case 'cleanShort': {
      if (length < 2) return honest;
      const { contentLength: _dropped, ...rest } = honest;
      return { ...rest, to: honest.from + 1 + below(length - 1), ending: 'end' };
    }
    case 'lateStart':
      return length < 2 ? honest : partial(honest.from + 1 + below(length - 1), honest.to);
    case 'earlyStart':
      return req.start === 0 || length === 0
        ? honest
        : partial(Math.max(0, req.start - 1 - below(100)), honest.to);
    case 'wrongTotal':
      if (length === 0) return honest;
      return partial(
        honest.from,
        honest.to,
        below(2) === 0 ? size + 1 + below(5000) : Math.max(0, last - below(3)),
      );
    case 'lengthMismatch': {
      if (length < 2 || !honest.contentRange) return honest;
      const shorter = 1 + below(length - 1);
      return { ...honest, to: honest.from + shorter, contentLength: shorter };
    }
    case 'short206':
      return length < 2 ? honest : partial(honest.from, honest.from + 1 + below(length - 1));
    case 'missingRange206': {
      if (!honest.contentRange) return honest;
      const { contentRange: _dropped, ...rest } = honest;
      return { ...rest, status: 206 };
    }
    case 'noLength': {
      const { contentLength: _dropped, ...rest } = honest;
      return rest;
    }
    case 'serverError':
      return { ...honest, status: below(2) === 0 ? 500 : 503 };
    case 'shortObject': {
      if (req.ranged || length < 2) return honest;
      const shorter = 1 + below(length - 1);
      return { ...honest, to: shorter, contentLength: shorter };
    }
    case 'shiftedBody': {
      if (req.ranged || length < 2) return honest;
      const shift = 1 + below(length - 1);
      return { ...honest, from: shift, contentLength: size - shift };
    }
  }
}
