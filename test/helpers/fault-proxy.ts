/**
 * A fault-injecting HTTP proxy on 127.0.0.1 (random port) in front of the embedded S3 server.
 * It produces the failures S3 shows at scale, on real exchanges with a real store:
 *
 * - slowDown        503 with `<Code>SlowDown</Code>`; the request is not forwarded
 * - error500Before  500 InternalError; not forwarded
 * - error500After   forwarded (the store acts), then 500 instead of the store's answer
 * - resetAfter      forwarded (the store acts), then the connection is destroyed, no answer
 * - cutBody         the store's headers and half its body, then the connection is destroyed
 * - silent          the connection is accepted and never answered
 * - silentMidBody   the store's headers and half its body, then nothing
 *                   (both: an answer without a body is sent whole, and its connection closed)
 * - slow            answered normally after `slowMs`
 *
 * and, on GetObject answers only (ANSWER_FAULT_KINDS, not in the default random set), answers
 * that are whole and well-formed HTTP but wrong about the object, as a gateway or a store still
 * writing the object can give:
 *
 * - shortObject     a 200 of the object's first three quarters, its Content-Length theirs (as if
 *                   the object were shorter; only a checksum can tell); a 206 ends early, its
 *                   Content-Range saying so
 * - wrongTotal      a 206 whose Content-Range total is off (4 KiB more, or no more than its
 *                   last byte); a 200 becomes a 206 of an object 4 KiB longer
 * - lateStart       the answer starts 100 bytes later than asked (a 206 saying so)
 * - noLength        no Content-Length (chunked), and the body ends cleanly half-way
 * - corruptBody     one byte of the body flipped: of a GET's answer, or of a PUT on its way to
 *                   the store (a PUT with no body goes through unfaulted)
 *
 * and, on PUTs only (an object or a part; not in the default random set):
 *
 * - corruptStored   one byte flipped after the store's check of the body's checksum (with
 *                   `emulateChecksums`): a store that keeps other bytes than it verified, which
 *                   only the whole object's checksum in its answer can show
 *
 * Faults come at random (`rate`, `kinds`, a seeded PRNG, so a seed replays the same run when
 * requests are sequential) or deterministically (`faultNext`: the next request matching a method
 * and path). Requests are counted by method and logged with their Range and If-Match headers.
 *
 * `emulateConditionals` adds what s3rver lacks and S3 has: a PUT with `If-None-Match: *` on an
 * existing key and a GET whose `If-Match` names another ETag are answered 412 (the proxy asks
 * the store with a HEAD first; conditional PUTs to one key are serialised, so it is atomic for
 * requests through the proxy). `emulateChecksums` adds S3's checksums (./checksum-emulation.ts):
 * uploads whose body does not match their checksum are refused (BadDigest), and whole-object GETs
 * that ask for it get the object's full-object checksum.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { prng } from '../../scripts/lib/prng.js';
import { ChecksumEmulation } from './checksum-emulation.js';

export const FAULT_KINDS = [
  'slowDown',
  'error500Before',
  'error500After',
  'resetAfter',
  'cutBody',
  'silent',
  'silentMidBody',
  'slow',
] as const;
/** Wrong GetObject answers; a request of another kind they are drawn for goes through unfaulted. */
export const ANSWER_FAULT_KINDS = [
  'shortObject',
  'wrongTotal',
  'lateStart',
  'noLength',
  'corruptBody',
] as const;
type AnswerFault = (typeof ANSWER_FAULT_KINDS)[number];
export type FaultKind = (typeof FAULT_KINDS)[number] | AnswerFault | 'corruptStored';

/** How much later than asked a `lateStart` answer starts, and how much longer a `wrongTotal` object is. */
const LATE_BYTES = 100;
const EXTRA_TOTAL = 4096;

export interface FaultMatch {
  /** HTTP method, e.g. `PUT`. */
  method?: string;
  /** Substring of, or pattern for, the request path with its query (`/bucket/key?uploadId=…`). */
  path?: string | RegExp;
  /** Substring of the request body (DeleteObjects names its keys only there). */
  body?: string;
  /** How many matching requests to fault; default 1. */
  times?: number;
  /** Run before the fault is applied (after the store acted, for the kinds that forward). */
  before?: () => Promise<void>;
}

export interface FaultProxyOptions {
  /** The store, `http://127.0.0.1:<port>`. */
  target: string;
  /** Share of requests faulted at random, 0..1; default 0. */
  rate?: number;
  /** Kinds drawn from at random; default all. */
  kinds?: readonly FaultKind[];
  /** PRNG seed; default 1. */
  seed?: number;
  /** Delay of `slow`; default 50 ms. */
  slowMs?: number;
  /** Answer If-None-Match: * and If-Match with 412 like S3 (s3rver ignores both). */
  emulateConditionals?: boolean;
  /**
   * Forward PUTs with If-None-Match: * to one key one at a time, the store answering each: for a
   * store that honours the header with a check and then a write (moto), where two such PUTs in
   * flight at once can both succeed, which S3 never lets happen.
   */
  serializeConditionalPuts?: boolean;
  /** Send bodies chunked, without Content-Length, as some gateways in front of a store do. */
  chunked?: boolean;
  /** Verify uploads' checksums and answer GETs' checksum mode like S3 (s3rver does neither). */
  emulateChecksums?: boolean;
}

export interface ProxiedRequest {
  method: string;
  path: string;
  range?: string;
  ifMatch?: string;
  ifNoneMatch?: string;
  fault?: FaultKind;
  /** The status sent (undefined when none was: reset, silent). */
  status?: number;
}

export interface FaultProxy {
  /** `http://127.0.0.1:<port>` */
  endpoint: string;
  /** Requests received, by method. */
  readonly byMethod: Record<string, number>;
  /** Faults injected, by kind. */
  readonly faults: Partial<Record<FaultKind, number>>;
  /** Every request, in arrival order. */
  readonly log: ProxiedRequest[];
  /** Fault the next request(s) matching `match`, before any random fault; `hits` counts the faulted ones. */
  faultNext(kind: FaultKind, match?: FaultMatch): { readonly hits: number };
  /** Change the random faults (and restart the PRNG when a seed is given). */
  setRandom(opts: { rate: number; kinds?: readonly FaultKind[]; seed?: number }): void;
  /** Zero the counts and the log; drop pending deterministic faults. */
  reset(): void;
  stop(): Promise<void>;
}

interface Rule extends FaultMatch {
  kind: FaultKind;
  left: number;
  hits: number;
}

interface Upstream {
  status: number;
  headers: http.OutgoingHttpHeaders;
  body: Buffer;
}

/** Start a proxy in front of `opts.target`. */
export async function startFaultProxy(opts: FaultProxyOptions): Promise<FaultProxy> {
  const target = new URL(opts.target);
  const agent = new http.Agent({ keepAlive: true });
  const sockets = new Set<Socket>();
  const locks = new Map<string, Promise<void>>();
  const rules: Rule[] = [];
  let random = {
    rate: opts.rate ?? 0,
    kinds: opts.kinds ?? FAULT_KINDS,
    next: prng(opts.seed ?? 1),
  };
  const byMethod: Record<string, number> = {};
  const faults: Partial<Record<FaultKind, number>> = {};
  const log: ProxiedRequest[] = [];
  const slowMs = opts.slowMs ?? 50;
  const checksums = opts.emulateChecksums ? new ChecksumEmulation() : undefined;

  function pick(
    method: string,
    path: string,
    body: Buffer,
  ): { kind?: FaultKind; before?: () => Promise<void> } {
    const applies = (kind: FaultKind) =>
      kind === 'corruptStored'
        ? method === 'PUT' && body.length > 0
        : !isAnswerFault(kind) ||
          isObjectGet(method, path) ||
          (kind === 'corruptBody' && method === 'PUT' && body.length > 0);
    const rule = rules.find(
      (r) =>
        (!r.method || r.method === method) &&
        matches(r.path, path) &&
        (!r.body || body.includes(r.body)) &&
        applies(r.kind),
    );
    if (rule) {
      rule.hits++;
      if (--rule.left <= 0) rules.splice(rules.indexOf(rule), 1);
      return { kind: rule.kind, ...(rule.before ? { before: rule.before } : {}) };
    }
    if (random.rate > 0 && random.next() < random.rate) {
      const kind = random.kinds[Math.floor(random.next() * random.kinds.length)]!;
      if (applies(kind)) return { kind };
      // A kind that cannot apply here gives way to one not yet injected that can, so a run injects
      // every kind however its requests interleave (which kind meets which request is timing).
      const untried = random.kinds.find((k) => !faults[k] && applies(k));
      return untried ? { kind: untried } : {};
    }
    return {};
  }

  /** Forward to the store and read its whole answer. */
  function forward(
    req: http.IncomingMessage,
    body: Buffer,
    method = req.method ?? 'GET',
  ): Promise<Upstream> {
    const headers = { ...req.headers };
    delete headers['expect']; // the body is already here; the store need not ask for it
    delete headers['connection'];
    return new Promise((resolve, reject) => {
      const up = http.request(
        { host: target.hostname, port: target.port, method, path: req.url, headers, agent },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const answer = Buffer.concat(chunks);
            const out = answerHeaders(res.headers);
            // A length, not chunks: a client then knows when a body was cut short (unless told to chunk).
            if (opts.chunked && method !== 'HEAD') delete out['content-length'];
            else if (method !== 'HEAD') out['content-length'] = answer.length;
            resolve({ status: res.statusCode ?? 502, headers: out, body: answer });
          });
          res.on('error', reject);
        },
      );
      up.on('error', reject);
      up.end(body);
    });
  }

  /**
   * The store's answer, with S3's checksums where emulated: `body` is checked, `stored` (the
   * same, but for corruptStored) goes to the store.
   */
  async function exchange(
    req: http.IncomingMessage,
    body: Buffer,
    stored = body,
  ): Promise<Upstream> {
    if (!checksums) return conditionalExchange(req, stored);
    const url = new URL(req.url ?? '/', 'http://proxy');
    const bad = await checksums.checkUpload(req, url.pathname, url.searchParams, body);
    if (bad) return s3Error(400, bad.code, bad.message);
    const up = await conditionalExchange(req, stored);
    if (!isObjectGet(req.method ?? 'GET', req.url ?? '/')) {
      const object = () => getObject(url.pathname);
      return {
        ...up,
        ...(await checksums.answerUpload(req, url.pathname, url.searchParams, up, {
          body: stored,
          object,
        })),
      };
    }
    return {
      ...up,
      headers: {
        ...up.headers,
        ...(await checksums.answerHeaders(req, url.pathname, up.status, up.body)),
      },
    };
  }

  /** An object's bytes as the store holds them (s3rver serves unsigned requests). */
  async function getObject(path: string): Promise<Buffer> {
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const up = http.request(
        { host: target.hostname, port: target.port, method: 'GET', path, agent },
        resolve,
      );
      up.on('error', reject);
      up.end();
    });
    return readAll(res);
  }

  /** The store's answer, or a 412 where S3 would give one and s3rver does not. */
  async function conditionalExchange(req: http.IncomingMessage, body: Buffer): Promise<Upstream> {
    const url = new URL(req.url ?? '/', 'http://proxy');
    // The SDK adds `?x-id=PutObject`; any other query names a sub-resource (parts, uploads, ACLs).
    const isObjectPath = [...url.searchParams.keys()].every((k) => k === 'x-id');
    const putIfAbsent =
      req.method === 'PUT' && isObjectPath && req.headers['if-none-match'] === '*';
    if (!opts.emulateConditionals)
      return putIfAbsent && opts.serializeConditionalPuts
        ? withLock(url.pathname, () => forward(req, body))
        : forward(req, body);
    if (putIfAbsent) {
      return withLock(url.pathname, async () =>
        (await headStatus(url.pathname)).exists ? preconditionFailed() : forward(req, body),
      );
    }
    const ifMatch = req.headers['if-match'];
    if (req.method === 'GET' && isObjectPath && typeof ifMatch === 'string') {
      const head = await headStatus(url.pathname);
      if (head.exists && unquote(head.etag) !== unquote(ifMatch)) return preconditionFailed();
    }
    return forward(req, body);
  }

  async function headStatus(path: string): Promise<{ exists: boolean; etag: string }> {
    // s3rver serves unsigned requests; the client's signature covers its own method only.
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const up = http.request(
        { host: target.hostname, port: target.port, method: 'HEAD', path, agent },
        resolve,
      );
      up.on('error', reject);
      up.end();
    });
    res.resume();
    return { exists: res.statusCode === 200, etag: String(res.headers['etag'] ?? '') };
  }

  async function withLock<T>(key: string, run: () => Promise<T>): Promise<T> {
    const previous = locks.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => (release = resolve));
    const chained = previous.then(() => mine);
    locks.set(key, chained);
    await previous;
    try {
      return await run();
    } finally {
      release();
      if (locks.get(key) === chained) locks.delete(key);
    }
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const received = await readAll(req);
    const method = req.method ?? 'GET';
    const path = req.url ?? '/';
    byMethod[method] = (byMethod[method] ?? 0) + 1;
    const { kind, before } = pick(method, path, received);
    // A PUT body damaged on its way to the store (the client's checksum no longer matches it).
    const body = kind === 'corruptBody' && method === 'PUT' ? flipByte(received) : received;
    const entry: ProxiedRequest = {
      method,
      path,
      ...conditionalHeaders(req),
      ...(kind ? { fault: kind } : {}),
    };
    log.push(entry);
    if (kind) faults[kind] = (faults[kind] ?? 0) + 1;
    const answer = (up: Upstream) => {
      entry.status = up.status;
      res.writeHead(up.status, up.headers);
      res.end(method === 'HEAD' ? undefined : up.body);
    };

    switch (kind) {
      case 'slowDown':
        await before?.();
        return answer(s3Error(503, 'SlowDown', 'Please reduce your request rate.'));
      case 'error500Before':
        await before?.();
        return answer(
          s3Error(500, 'InternalError', 'We encountered an internal error. Please try again.'),
        );
      case 'silent':
        await before?.();
        return; // the socket stays open until the client gives up (or stop())
      case 'slow':
        await sleep(slowMs);
        break;
      default:
        break;
    }
    const up = await exchange(req, body, kind === 'corruptStored' ? flipByte(body) : body);
    await before?.();
    switch (kind) {
      case 'error500After':
        return answer(
          s3Error(500, 'InternalError', 'We encountered an internal error. Please try again.'),
        );
      case 'resetAfter':
        req.socket.destroy();
        return;
      case 'shortObject':
      case 'wrongTotal':
      case 'lateStart':
        return answer(wrongAnswer(kind, up, random.next));
      case 'corruptBody':
        return answer(
          method === 'GET' && up.body.length > 0 ? { ...up, body: flipByte(up.body) } : up,
        );
      case 'noLength': {
        if (up.status !== 200 && up.status !== 206) return answer(up);
        entry.status = up.status;
        const headers = { ...up.headers };
        delete headers['content-length'];
        res.writeHead(up.status, headers);
        res.end(up.body.subarray(0, Math.floor(up.body.length / 2)));
        return;
      }
      case 'cutBody':
      case 'silentMidBody': {
        entry.status = up.status;
        res.writeHead(up.status, up.headers);
        // An answer without body bytes (HEAD, an empty object) is whole once its headers are out:
        // the client would reuse a connection this proxy never answers on again, so close it.
        if (method === 'HEAD' || up.body.length === 0)
          return void res.end(() => req.socket.destroy());
        const half = up.body.subarray(0, Math.floor(up.body.length / 2));
        if (kind === 'cutBody') res.write(half, () => req.socket.destroy());
        else res.write(half);
        return;
      }
      default:
        return answer(up);
    }
  }

  const server = http.createServer((req, res) => {
    handle(req, res).catch(() => req.socket.destroy());
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    endpoint: `http://127.0.0.1:${port}`,
    byMethod,
    faults,
    log,
    faultNext(kind, match = {}) {
      const rule: Rule = { ...match, kind, left: match.times ?? 1, hits: 0 };
      rules.push(rule);
      return rule;
    },
    setRandom({ rate, kinds = FAULT_KINDS, seed }) {
      random = { rate, kinds, next: seed === undefined ? random.next : prng(seed) };
    },
    reset() {
      for (const k of Object.keys(byMethod)) delete byMethod[k];
      for (const k of Object.keys(faults)) delete faults[k as FaultKind];
      log.length = 0;
      rules.length = 0;
    },
    async stop() {
      for (const socket of sockets) socket.destroy();
      agent.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A copy of `bytes` with its middle byte inverted. */
function flipByte(bytes: Buffer): Buffer {
  const copy = Buffer.from(bytes);
  const at = Math.floor(copy.length / 2);
  copy[at] = copy[at]! ^ 0xff;
  return copy;
}

function isAnswerFault(kind: FaultKind): kind is AnswerFault {
  return (ANSWER_FAULT_KINDS as readonly string[]).includes(kind);
}

/** A GetObject (a key below the bucket), not a listing or another bucket request. */
function isObjectGet(method: string, path: string): boolean {
  const url = new URL(path, 'http://proxy');
  return method === 'GET' && /^\/[^/]+\/./.test(url.pathname) && !url.searchParams.has('list-type');
}

/** The store's GetObject answer made wrong in the way `kind` names (other answers as they are). */
function wrongAnswer(
  kind: 'shortObject' | 'wrongTotal' | 'lateStart',
  up: Upstream,
  random: () => number,
): Upstream {
  if (up.status !== 200 && up.status !== 206) return up;
  const range = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(String(up.headers['content-range'] ?? ''));
  const start = range ? Number(range[1]) : 0;
  const total = range ? Number(range[3]) : up.body.length;
  const partial = (from: number, body: Buffer, size = total): Upstream => ({
    status: 206,
    headers: {
      ...up.headers,
      'content-range': `bytes ${from}-${from + body.length - 1}/${size}`,
      'content-length': body.length,
    },
    body,
  });
  const length = up.body.length;
  switch (kind) {
    case 'shortObject': {
      const short = up.body.subarray(0, Math.floor((length * 3) / 4));
      if (short.length === 0) return up;
      if (!range)
        return { ...up, headers: { ...up.headers, 'content-length': short.length }, body: short };
      return partial(start, short);
    }
    case 'wrongTotal': {
      if (length === 0) return up;
      const last = start + length - 1;
      return partial(
        start,
        up.body,
        !range || random() < 0.5
          ? total + EXTRA_TOTAL
          : Math.max(0, last - Math.floor(random() * 3)),
      );
    }
    case 'lateStart': {
      const late = Math.min(LATE_BYTES, length - 1);
      if (late <= 0) return up;
      return partial(start + late, up.body.subarray(late));
    }
  }
}

function matches(pattern: string | RegExp | undefined, path: string): boolean {
  if (pattern === undefined) return true;
  return typeof pattern === 'string' ? path.includes(pattern) : pattern.test(path);
}

function readAll(req: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** The store's headers minus hop-by-hop ones; the body is sent with its length. */
function answerHeaders(headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = { ...headers };
  delete out['connection'];
  delete out['keep-alive'];
  delete out['transfer-encoding'];
  return out;
}

function s3Error(status: number, code: string, message: string): Upstream {
  const body = Buffer.from(
    `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message><RequestId>fault-proxy</RequestId></Error>`,
  );
  return {
    status,
    headers: { 'content-type': 'application/xml', 'content-length': body.length },
    body,
  };
}

function preconditionFailed(): Upstream {
  return s3Error(
    412,
    'PreconditionFailed',
    'At least one of the pre-conditions you specified did not hold',
  );
}

function conditionalHeaders(req: http.IncomingMessage): Partial<ProxiedRequest> {
  const h = req.headers;
  return {
    ...(typeof h['range'] === 'string' ? { range: h['range'] } : {}),
    ...(typeof h['if-match'] === 'string' ? { ifMatch: h['if-match'] } : {}),
    ...(typeof h['if-none-match'] === 'string' ? { ifNoneMatch: h['if-none-match'] } : {}),
  };
}

function unquote(etag: string): string {
  return etag.replace(/^W\//, '').replace(/"/g, '');
}
