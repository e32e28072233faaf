/**
 * makeFolder: `mkdir -p` that ends where Node's recursive mkdir loops forever (a folder under
 * /proc, whose parent exists but takes no folder), and otherwise creates what is missing.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { makeFolder } from '../../src/storage/make-folder.js';
import { cleanup, tempDir } from '../job/helpers.js';

const dirs: string[] = [];
afterAll(() => cleanup(dirs));

describe('makeFolder', () => {
  it('creates every missing parent, and accepts a folder that exists', async () => {
    const root = await tempDir('mkfolder', dirs);
    const deep = path.join(root, 'a', 'b', 'c');
    await makeFolder(deep);
    expect((await fsp.stat(deep)).isDirectory()).toBe(true);
    await makeFolder(deep);
    await makeFolder(root);
  });

  it('rejects with ENOENT under /proc instead of looping', async () => {
    await expect(makeFolder('/proc/nope/deeper')).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(makeFolder('/proc/nope')).rejects.toMatchObject({ code: 'ENOENT' });
  }, 5_000);

  it('rejects with ENOTDIR when a file is in the way', async () => {
    const root = await tempDir('mkfolder', dirs);
    await fsp.writeFile(path.join(root, 'f'), 'x');
    await expect(makeFolder(path.join(root, 'f'))).rejects.toMatchObject({ code: 'ENOTDIR' });
    await expect(makeFolder(path.join(root, 'f', 'g'))).rejects.toMatchObject({ code: 'ENOTDIR' });
  });
});
