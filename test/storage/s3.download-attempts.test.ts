/**
 * A download is atomic per attempt: each attempt writes a temporary file of its own, closed
 * before the next attempt starts, and its size is checked against the object's before the
 * rename. The hazard: an attempt's file writes still landing after a later attempt has started
 * (a slow disk, mocked here by delaying fs.write on the first attempt's file) used to splice two
 * versions into one file, larger than either.
 */
import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startProxiedS3 } from './fault-setup.js';
import type { ProxiedS3 } from './fault-setup.js';

const fs = createRequire(import.meta.url)('node:fs') as typeof import('node:fs');
const original = { open: fs.open, write: fs.write, writev: fs.writev };

/** Writes to the first file opened under `folder` land `ms` late (what file streams call). */
function slowFirstFile(folder: string, ms: number): void {
  let slowFd: number | undefined;
  fs.open = ((file: string, ...rest: unknown[]) => {
    const cb = rest.pop() as (err: unknown, fd: number) => void;
    (original.open as (...a: unknown[]) => void)(file, ...rest, (err: unknown, fd: number) => {
      if (!err && slowFd === undefined && String(file).startsWith(folder)) slowFd = fd;
      cb(err, fd);
    });
  }) as typeof fs.open;
  const delayed =
    (write: (...a: unknown[]) => void) =>
    (fd: number, ...rest: unknown[]) => {
      if (fd !== slowFd) return write(fd, ...rest);
      setTimeout(() => write(fd, ...rest), ms);
    };
  fs.write = delayed(original.write as (...a: unknown[]) => void) as typeof fs.write;
  fs.writev = delayed(original.writev as (...a: unknown[]) => void) as typeof fs.writev;
}

/** The first write to the first file opened under `folder` stores half its bytes and reports them all (mock: a lying disk). */
function lossyFirstWrite(folder: string): void {
  let lossyFd: number | undefined;
  let lost = false;
  fs.open = ((file: string, ...rest: unknown[]) => {
    const cb = rest.pop() as (err: unknown, fd: number) => void;
    (original.open as (...a: unknown[]) => void)(file, ...rest, (err: unknown, fd: number) => {
      if (!err && lossyFd === undefined && String(file).startsWith(folder)) lossyFd = fd;
      cb(err, fd);
    });
  }) as typeof fs.open;
  fs.write = ((
    fd: number,
    buffer: Buffer,
    offset: number,
    length: number,
    position: number | null,
    cb: (err: unknown, n: number, b: Buffer) => void,
  ) => {
    if (fd !== lossyFd || lost)
      return (original.write as (...a: unknown[]) => void)(
        fd,
        buffer,
        offset,
        length,
        position,
        cb,
      );
    lost = true;
    (original.write as (...a: unknown[]) => void)(
      fd,
      buffer,
      offset,
      Math.floor(length / 2),
      position,
      (err: unknown) => cb(err, length, buffer),
    );
  }) as typeof fs.write;
  fs.writev = ((
    fd: number,
    buffers: Buffer[],
    position: number | null,
    cb: (err: unknown, n: number, b: Buffer[]) => void,
  ) => {
    if (fd !== lossyFd || lost)
      return (original.writev as (...a: unknown[]) => void)(fd, buffers, position, cb);
    lost = true;
    const total = buffers.reduce((n, b) => n + b.length, 0);
    (original.writev as (...a: unknown[]) => void)(
      fd,
      buffers.slice(0, 1),
      position,
      (err: unknown) => cb(err, total, buffers),
    );
  }) as typeof fs.writev;
}

let env: ProxiedS3;
let tmp: string;
beforeAll(async () => {
  env = await startProxiedS3();
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'tidemark-dl-attempts-'));
});
afterEach(() => Object.assign(fs, original));
afterAll(async () => {
  await env?.stop();
  await fsp.rm(tmp, { recursive: true, force: true });
});

const OLD = randomBytes(150_000);
const NEW = randomBytes(40_000);

describe('download attempts (fault injection: proxy in front of s3rver)', () => {
  it("fault injection: an object replaced mid-download while the first attempt's writes are slow (mock: delayed fs.write) is downloaded as exactly the new version", async () => {
    for (let i = 0; i < 3; i++) {
      const storage = env.storage();
      const direct = env.direct(storage.prefix);
      await direct.write('d.bin', OLD);
      env.proxy.faultNext('cutBody', {
        method: 'GET',
        path: `${storage.prefix}d.bin`,
        before: () => direct.write('d.bin', NEW),
      });
      const folder = path.join(tmp, `run-${i}`);
      await fsp.mkdir(folder);
      slowFirstFile(folder, 150);
      const dest = path.join(folder, 'd.bin');
      const info = await storage.download('d.bin', dest);
      Object.assign(fs, original);
      const got = await fsp.readFile(dest);
      expect(got.length, `run ${i}`).toBe(NEW.length);
      expect(got.equals(NEW), `run ${i}`).toBe(true);
      expect(info.size).toBe(NEW.length);
      // The first attempt's file is gone once its writes have landed.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(await fsp.readdir(folder), `run ${i}`).toEqual(['d.bin']);
      expect((await fsp.readFile(dest)).equals(NEW), `run ${i}`).toBe(true);
    }
  });

  it('a file that holds fewer bytes than the object (mock: a disk that loses half a write) is never renamed into place: the download starts over', async () => {
    const storage = env.storage();
    await env.direct(storage.prefix).write('l.bin', OLD);
    const folder = path.join(tmp, 'lossy');
    await fsp.mkdir(folder);
    lossyFirstWrite(folder);
    const dest = path.join(folder, 'l.bin');
    await storage.download('l.bin', dest);
    Object.assign(fs, original);
    const got = await fsp.readFile(dest);
    expect(got.length).toBe(OLD.length);
    expect(got.equals(OLD)).toBe(true);
    expect(await fsp.readdir(folder)).toEqual(['l.bin']);
    expect(storage.requestCounts().get).toBe(2);
  });
});
