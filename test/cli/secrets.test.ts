/**
 * Credentials never reach stdout, stderr, --json output or error messages (SPEC §7). The CLI
 * runs in process with recognizable fake AWS credentials against s3rver, which refuses them
 * (InvalidAccessKeyId: the SDK error carries the raw HTTP exchange and s3rver's answer), and
 * against a closed port, and against a fake endpoint that answers like S3 to a bad signature
 * (s3rver does not check signatures: fault injection), echoing the key id, the string to sign
 * and the canonical request with the session token. Every byte printed is searched for the
 * secrets, and so is the thrown error as `util.inspect` prints it (with its SDK cause).
 * Debug logging is on, so the most talkative logs are searched too.
 */
import { promises as fsp } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer } from 'node:net';
import { inspect } from 'node:util';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { errorInfo } from '../../src/cli/output.js';
import { StorageError } from '../../src/errors.js';
import { redactText } from '../../src/log/redact.js';
import { openStorage } from '../../src/storage/uri.js';
import { startS3rver, type S3rverHandle } from '../helpers/s3rver.js';
import { cleanup, tempDir } from '../job/helpers.js';
import { cli } from '../helpers/cli.js';

/** Fake credentials, shaped so that only the environment-based redaction can catch them. */
const SECRETS = {
  AWS_ACCESS_KEY_ID: 'TMFAKEKEYID7Q2W9E4R',
  AWS_SECRET_ACCESS_KEY: 'tmFakeSecret/9xK+2mQ7vL4pZ8rT1wY6nB3cD5',
  AWS_SESSION_TOKEN: 'tmFakeSessionToken//IQoJb3JpZ2luX2VjEJr+FAKE+TOKEN+0123456789abcdef==',
};

let s3: S3rverHandle;
const dirs: string[] = [];
const saved: Record<string, string | undefined> = {};

beforeAll(async () => {
  s3 = await startS3rver();
});
afterAll(async () => {
  await s3?.stop();
  await cleanup(dirs);
});
beforeEach(() => {
  for (const [k, v] of Object.entries(SECRETS)) {
    saved[k] = process.env[k];
    process.env[k] = v;
  }
});
afterEach(() => {
  for (const k of Object.keys(SECRETS)) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
});

async function configFile(
  storage: Record<string, unknown>,
  source: string,
  target: string,
): Promise<string> {
  const dir = await tempDir('secrets-cfg', dirs);
  const file = path.join(dir, 'tidemark.yaml');
  const job = {
    name: 'orders',
    source: { uri: source, discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}' } },
    target: { uri: target, key: ['id'], orderBy: 'seq' },
  };
  await fsp.writeFile(file, JSON.stringify({ storage, jobs: [job] }));
  return file;
}

function expectNoSecret(text: string): void {
  for (const [name, value] of Object.entries(SECRETS)) {
    expect(text.includes(value), `${name} appears in the output`).toBe(false);
    // Also not a recognizable part of it (the SDK may print only the key id, or a prefix).
    expect(text.includes(value.slice(0, 12)), `a prefix of ${name} appears in the output`).toBe(
      false,
    );
  }
}

/** A TCP port with nothing listening. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A fake S3 endpoint: every request gets S3's SignatureDoesNotMatch answer, echoing the request's credentials. */
async function signatureMismatchEndpoint(): Promise<{ endpoint: string; server: Server }> {
  const server = createHttpServer((req, res) => {
    const auth = String(req.headers['authorization'] ?? '');
    const token = String(req.headers['x-amz-security-token'] ?? '');
    const keyId = /Credential=([^/]+)\//.exec(auth)?.[1] ?? '';
    const canonical = `${req.method}\n${req.url}\n\nhost:${req.headers.host}\nx-amz-security-token:${token}\n`;
    res.writeHead(403, { 'content-type': 'application/xml', 'x-amz-request-id': 'FAKE' });
    res.end(
      `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SignatureDoesNotMatch</Code>` +
        `<Message>The request signature we calculated does not match the signature you provided.</Message>` +
        `<AWSAccessKeyId>${keyId}</AWSAccessKeyId><StringToSign>AWS4-HMAC-SHA256 ${auth}</StringToSign>` +
        `<SignatureProvided>${auth.split('Signature=')[1] ?? ''}</SignatureProvided><CanonicalRequest>${canonical}</CanonicalRequest>` +
        `<RequestId>FAKE</RequestId></Error>`,
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { endpoint: `http://127.0.0.1:${(server.address() as { port: number }).port}`, server };
}

describe('secrets never reach output', () => {
  it('a run refused by S3 (InvalidAccessKeyId): exit 1, the --json report and debug logs hold no secret', async () => {
    const storage = { endpoint: s3.endpoint, region: s3.region, forcePathStyle: true };
    const file = await configFile(
      storage,
      `s3://${s3.bucket}/landing/`,
      `s3://${s3.bucket}/lake/orders`,
    );
    const r = await cli(['run', '--config', file, '--json', '--log-level', 'debug']);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/"status":"failed"/);
    expect(r.out).toMatch(/StorageError/);
    expectNoSecret(r.out);
  });

  it('status against the refusing store, human and --json output', async () => {
    const storage = { endpoint: s3.endpoint, region: s3.region, forcePathStyle: true };
    const file = await configFile(
      storage,
      `s3://${s3.bucket}/landing/`,
      `s3://${s3.bucket}/lake/orders`,
    );
    for (const argv of [
      ['status', '--config', file],
      ['status', '--config', file, '--json', '--log-level', 'debug'],
    ]) {
      const r = await cli(argv);
      expect(r.code).not.toBe(0);
      expectNoSecret(r.out);
    }
  });

  it('a run against a closed port (network error after retries): exit 4, storage unavailable', async () => {
    const storage = {
      endpoint: `http://127.0.0.1:${await closedPort()}`,
      region: 'us-east-1',
      forcePathStyle: true,
    };
    const file = await configFile(storage, 's3://nowhere/landing/', 's3://nowhere/lake/orders');
    const r = await cli(['run', '--config', file, '--json', '--log-level', 'debug']);
    expect(r.code).toBe(4);
    expectNoSecret(r.out);
  });

  it('a store answering SignatureDoesNotMatch with the credentials echoed (fault injection: fake endpoint): output and the inspected error hold no secret', async () => {
    const fake = await signatureMismatchEndpoint();
    try {
      const storage = { endpoint: fake.endpoint, region: 'us-east-1', forcePathStyle: true };
      const file = await configFile(storage, 's3://landing/orders/', 's3://lake/orders');
      const r = await cli(['run', '--config', file, '--json', '--log-level', 'debug']);
      expect(r.code).toBe(1);
      expect(r.out).toContain('SignatureDoesNotMatch');
      expectNoSecret(r.out);
      const err = await openStorage('s3://lake/orders/', {
        endpoint: fake.endpoint,
        region: 'us-east-1',
        forcePathStyle: true,
      })
        .read('_delta_log/_last_checkpoint')
        .then(
          () => null,
          (e: unknown) => e,
        );
      expect(err).toBeInstanceOf(StorageError);
      const printed = inspect(err, { depth: 10 });
      expect(printed).toContain('SignatureDoesNotMatch');
      expectNoSecret(printed);
      expectNoSecret(JSON.stringify(err));
    } finally {
      await new Promise((resolve) => fake.server.close(resolve));
    }
  });

  it('error reports redact secrets, signed-URL parameters and AWS key ids in messages and context', () => {
    const signed =
      `https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=${SECRETS.AWS_ACCESS_KEY_ID}%2F20250101%2Fus-east-1%2Fs3%2Faws4_request` +
      `&X-Amz-Security-Token=${encodeURIComponent(SECRETS.AWS_SESSION_TOKEN)}&X-Amz-Signature=abcdef0123456789`;
    const err = new StorageError(
      `[storage] GET ${signed} failed with key ${SECRETS.AWS_SECRET_ACCESS_KEY}`,
      {
        context: { uri: signed, key: `AKIAABCDEFGHIJKLMNOP ${SECRETS.AWS_SESSION_TOKEN}` },
      },
    );
    const text = JSON.stringify(errorInfo(err));
    expectNoSecret(text);
    expect(text).not.toContain('abcdef0123456789');
    expect(text).not.toContain('AKIAABCDEFGHIJKLMNOP');
    expect(redactText(signed)).toContain('X-Amz-Signature=[redacted]');
  });
});
