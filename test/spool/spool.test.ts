/**
 * The spool: a run's scratch folder, its sub-folders, and the folders left by killed runs
 * (removed by the next run when their process is gone on this host, kept when it is alive or on
 * another host).
 */
import { spawnSync } from 'node:child_process';
import { promises as fsp } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { removeStaleSpools, Spool } from '../../src/spool/spool.js';
import { cleanup, tempDir } from '../job/helpers.js';

const dirs: string[] = [];
afterAll(() => cleanup(dirs));

describe('spool folders of killed runs', () => {
  it('the next run removes those of dead processes on this host and keeps the rest', async () => {
    const root = await tempDir('spool', dirs);
    const host =
      hostname()
        .replace(/[^A-Za-z0-9]/g, '_')
        .slice(0, 40) || 'host';
    const dead = spawnSync(process.execPath, ['-e', '']).pid!;
    const names = {
      dead: `tidemark-orders-v2-${host}-${dead}-AbC123`,
      alive: `tidemark-orders-${host}-${process.ppid}-XyZ789`,
      otherHost: `tidemark-orders-elsewhere-${dead}-QqQ111`,
      unrelated: `tidemark-scan-abcdef`,
    };
    for (const name of Object.values(names))
      await fsp.mkdir(path.join(root, name, 'merge-x'), { recursive: true });
    const own = await Spool.create('orders', root);

    expect(await removeStaleSpools(root)).toEqual([names.dead]);
    expect((await fsp.readdir(root)).sort()).toEqual(
      [names.alive, names.otherHost, names.unrelated, path.basename(own.dir)].sort(),
    );
    await own.close();
  });

  it('folders are fresh per call, shared ones stable, a child removes only itself, close removes everything', async () => {
    const root = await tempDir('spool', dirs);
    const spool = await Spool.create('orders', root);
    const a = await spool.folder('fetch');
    const b = await spool.folder('fetch');
    expect(a).not.toBe(b);
    expect(await spool.shared('cache')).toBe(await spool.shared('cache'));
    const child = await spool.child('merge');
    await fsp.writeFile(path.join(child.dir, 'x.parquet'), 'x');
    await child.close();
    expect((await fsp.readdir(spool.dir)).sort()).toEqual(
      [path.basename(a), path.basename(b), 'cache'].sort(),
    );
    await spool.close();
    expect(await fsp.readdir(root)).toEqual([]);
  });
});

describe('closing while a straggling write lands', () => {
  // A download abandoned by a failing run can still create its file while the run removes its
  // spool: the removal must retry (Node's rm gives ENOTEMPTY), not replace the run's own error.
  it('close() removes the spool even when files keep appearing in it for a while', async () => {
    for (let round = 0; round < 20; round++) {
      const spool = await Spool.create('test', await tempDir('spool-close', dirs));
      const dir = await spool.shared('tombstones-in');
      let writing = true;
      const writer = (async () => {
        for (let i = 0; writing && i < 200; i++) {
          await fsp.mkdir(dir, { recursive: true }).catch(() => undefined);
          await fsp.writeFile(path.join(dir, `f${i}`), 'x').catch(() => undefined);
        }
      })();
      await new Promise((resolve) => setTimeout(resolve, 1));
      const closed = spool.close();
      setTimeout(() => (writing = false), 30);
      await expect(closed).resolves.toBeUndefined();
      writing = false;
      await writer;
      await fsp.rm(dir, { recursive: true, force: true });
    }
  });
});
