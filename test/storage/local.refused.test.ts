/**
 * The local driver names a refused operation: the OS's reason, the errno and the path it refused,
 * as a terminal StorageError that keeps the errno error as its cause (not a bare code, and never
 * ENOENT for a read-only folder). Tests may run as root, where file modes do not stop writes:
 * an immutable folder (`chattr +i`) refuses even root (EPERM) where the file system supports it;
 * mode 0555 (EACCES) is tried only when not root.
 */
import { execFileSync } from 'node:child_process';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { StorageError } from '../../src/errors.js';
import { LocalStorage } from '../../src/storage/local.js';
import { failure } from '../helpers/cli.js';

const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((d) => fsp.rm(d, { recursive: true, force: true })));
});

async function freshRoot(): Promise<string> {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'tidemark-refused-'));
  dirs.push(dir);
  return dir;
}

const isRoot = process.getuid?.() === 0;

/** chattr +i on `dir`, when it works here and stops a write; false otherwise (nothing changed). */
function makeImmutable(dir: string): boolean {
  try {
    execFileSync('chattr', ['+i', dir], { stdio: 'ignore' });
  } catch {
    return false;
  }
  try {
    execFileSync('touch', [path.join(dir, '.probe')], { stdio: 'ignore' });
  } catch {
    return true;
  }
  execFileSync('chattr', ['-i', dir]);
  return false;
}

describe('LocalStorage: refused operations name the reason, the errno and the path', () => {
  it('an immutable folder (EPERM, also for root): write and delete fail terminally', async (ctx) => {
    const root = await freshRoot();
    const s = new LocalStorage(root);
    await s.write('kept.csv', 'x');
    if (!makeImmutable(root)) ctx.skip();
    try {
      const write = await failure<StorageError>(s.write('a/b.csv', 'x'));
      expect(write).toBeInstanceOf(StorageError);
      expect(write.message).toBe(
        `[storage] write failed for "a/b.csv" in ${s.uri}: operation not permitted (EPERM) at ${root}/a`,
      );
      expect(write).toMatchObject({
        kind: 'terminal',
        context: { key: 'a/b.csv', uri: s.uri, code: 'EPERM', path: `${root}/a` },
      });
      expect((write.cause as NodeJS.ErrnoException).code).toBe('EPERM');
      const del = await failure<StorageError>(s.delete(['kept.csv']));
      expect(del.message).toBe(
        `[storage] delete failed for "kept.csv" in ${s.uri}: operation not permitted (EPERM) at ${root}/kept.csv`,
      );
    } finally {
      execFileSync('chattr', ['-i', root]);
    }
  });

  it.skipIf(isRoot)(
    'a folder of mode 0555 (EACCES; skipped as root, where modes do not stop writes)',
    async () => {
      const root = await freshRoot();
      await fsp.chmod(root, 0o555);
      try {
        const s = new LocalStorage(root);
        const err = await failure<StorageError>(s.write('x.csv', 'x'));
        expect(err).toMatchObject({ kind: 'terminal', context: { code: 'EACCES' } });
        expect(err.message).toMatch(/: permission denied \(EACCES\) at /);
      } finally {
        await fsp.chmod(root, 0o755);
      }
    },
  );

  it('a missing folder stays "missing", not refused', async () => {
    const s = new LocalStorage(path.join(await freshRoot(), 'nothing'));
    expect(await s.read('x')).toBeNull();
    expect(await s.inspectRoot()).toBe('missing');
  });
});
