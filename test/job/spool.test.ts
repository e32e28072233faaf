/**
 * Spool folders left by killed runs: removed by the next run when their process is gone on
 * this host, kept when it is alive or on another host.
 */
import { spawnSync } from 'node:child_process';
import { promises as fsp } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createSpool, removeStaleSpools, unregisterSpool } from '../../src/job/spool.js';
import { cleanup, tempDir } from './helpers.js';

const dirs: string[] = [];
afterAll(() => cleanup(dirs));

describe('spool folders of killed runs', () => {
  it('the next run removes those of dead processes on this host and keeps the rest', async () => {
    const root = await tempDir('spool', dirs);
    const host = hostname().replace(/[^A-Za-z0-9]/g, '_').slice(0, 40) || 'host';
    const dead = spawnSync(process.execPath, ['-e', '']).pid!;
    const names = {
      dead: `tidemark-orders-v2-${host}-${dead}-AbC123`,
      alive: `tidemark-orders-${host}-${process.ppid}-XyZ789`,
      otherHost: `tidemark-orders-elsewhere-${dead}-QqQ111`,
      unrelated: `tidemark-scan-abcdef`,
    };
    for (const name of Object.values(names)) await fsp.mkdir(path.join(root, name, 'merge-x'), { recursive: true });
    const own = await createSpool(root, 'orders');

    expect(await removeStaleSpools(root)).toEqual([names.dead]);
    expect((await fsp.readdir(root)).sort()).toEqual([names.alive, names.otherHost, names.unrelated, path.basename(own)].sort());
    unregisterSpool(own);
  });
});
