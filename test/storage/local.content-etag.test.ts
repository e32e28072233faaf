/**
 * Local folders identify a small file by its content (issue 20, item 7): the ETag of a file up to
 * `contentDigestMaxBytes` is a digest of its bytes, so a touch, a chmod or a copy of the same bytes
 * keeps it, and any other content changes it, whatever the stats say; larger files, and a storage
 * opened without the option (tables), keep the digest of their stats. Real files in a temp folder.
 */
import { chmod, mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { comparableEtags, LocalStorage } from '../../src/storage/local.js';
import { openSource } from '../../src/job/open.js';
import { validateConfig } from '../../src/config/load.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tidemark-etag-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const etagOf = async (storage: LocalStorage, key: string) =>
  (await storage.listAll()).objects.find((o) => o.key === key)!.etag;

describe('local ETags by content', () => {
  it('a small file keeps its ETag through a touch, a chmod and a copy of the same bytes; other bytes of the same size and time change it', async () => {
    const storage = new LocalStorage(dir, { contentDigestMaxBytes: 1024 });
    const file = join(dir, 'a.csv');
    await writeFile(file, 'id\n1\n');
    const first = await etagOf(storage, 'a.csv');
    expect(first).toMatch(/^sha256:[0-9a-f]{32}$/);
    expect((await storage.head('a.csv'))!.etag).toBe(first);
    const stamp = new Date(Date.now() + 60_000);
    await utimes(file, stamp, stamp);
    await chmod(file, 0o600);
    await writeFile(join(dir, 'copy.tmp'), 'id\n1\n');
    await rm(file);
    await writeFile(file, 'id\n1\n');
    expect(await etagOf(storage, 'a.csv')).toBe(first);
    // Same size, the time set back: other content, another ETag.
    await writeFile(file, 'id\n2\n');
    await utimes(file, stamp, stamp);
    expect(await etagOf(storage, 'a.csv')).not.toBe(first);
  });

  it('a file above the limit, and a storage without the option, are known by their stats; the kinds do not compare', async () => {
    const big = new LocalStorage(dir, { contentDigestMaxBytes: 4 });
    await writeFile(join(dir, 'b.csv'), 'id\n1\n');
    const byStats = await etagOf(big, 'b.csv');
    expect(byStats).toMatch(/^[0-9a-f]{32}$/);
    expect(await etagOf(new LocalStorage(dir), 'b.csv')).toBe(byStats);
    const byContent = await etagOf(new LocalStorage(dir, { contentDigestMaxBytes: 1024 }), 'b.csv');
    expect(comparableEtags(byStats, byContent)).toBe(false);
    expect(comparableEtags(byContent, byContent)).toBe(true);
  });

  it('a listing that defers content ETags gives stats; identify gives what a plain listing gives, and leaves large files and missing ones as listed', async () => {
    const storage = new LocalStorage(dir, { contentDigestMaxBytes: 8 });
    await writeFile(join(dir, 'd-small.csv'), 'id\n1\n');
    await writeFile(join(dir, 'd-large.csv'), 'id\n1\n2\n3\n');
    await writeFile(join(dir, 'd-gone.csv'), 'id\n');
    const plain = (await storage.listAll({ prefix: 'd-' })).objects;
    const deferred = (await storage.listAll({ prefix: 'd-', deferContentEtags: true })).objects;
    expect(deferred.map((o) => o.key)).toEqual(plain.map((o) => o.key));
    expect(deferred.every((o) => /^[0-9a-f]{32}$/.test(o.etag))).toBe(true);
    expect(deferred).toEqual(
      await new LocalStorage(dir).listAll({ prefix: 'd-' }).then((r) => r.objects),
    );
    await rm(join(dir, 'd-gone.csv'));
    const identified = await storage.identify(deferred);
    const gone = deferred.find((o) => o.key === 'd-gone.csv')!;
    expect(identified).toEqual(plain.map((o) => (o.key === 'd-gone.csv' ? gone : o)));
    expect(identified.find((o) => o.key === 'd-small.csv')!.etag).toMatch(/^sha256:/);
    expect(await new LocalStorage(dir).identify(deferred)).toEqual(deferred);
  });

  it("a job's local source digests small files; a child storage keeps the option", async () => {
    const config = validateConfig(
      {
        jobs: [
          {
            name: 'j',
            source: { uri: dir, discover: { by: 'modified' } },
            target: { uri: join(dir, 't'), mode: 'append' },
          },
        ],
      },
      'test',
    );
    const source = openSource(config.jobs[0]!, config.storage) as LocalStorage;
    await writeFile(join(dir, 'c.csv'), 'id\n1\n');
    expect(await etagOf(source, 'c.csv')).toMatch(/^sha256:/);
    expect((await source.child('').head('c.csv'))!.etag).toMatch(/^sha256:/);
  });
});
