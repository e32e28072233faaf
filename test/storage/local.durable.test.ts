/**
 * The local driver's writes survive a power cut in the order a Delta table needs: a data file's
 * contents reach the disk before its name appears, and a commit (put-if-absent) is flushed with
 * its folder before it is reported done. A power cut cannot be produced here, so these tests spy
 * on the fs calls (real files are written) and check the order of the flushes against the
 * renames and links that make files visible.
 */
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { LocalStorage } from '../../src/storage/local.js';

const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((d) => fsp.rm(d, { recursive: true, force: true })));
});
afterEach(() => {
  vi.restoreAllMocks();
});

async function freshRoot(): Promise<string> {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'tidemark-durable-'));
  dirs.push(dir);
  return dir;
}

/** Record every fsync (of which path), rename and link, in order. */
function recordFsCalls(): string[] {
  const events: string[] = [];
  const realOpen = fsp.open.bind(fsp);
  vi.spyOn(fsp, 'open').mockImplementation(async (file, ...rest) => {
    const handle = await realOpen(file, ...rest);
    const realSync = handle.sync.bind(handle);
    handle.sync = async () => {
      await realSync();
      events.push(`sync ${path.basename(String(file))}`);
    };
    return handle;
  });
  const realRename = fsp.rename.bind(fsp);
  vi.spyOn(fsp, 'rename').mockImplementation(async (from, to) => {
    await realRename(from, to);
    events.push(`rename ${path.basename(String(from))} -> ${path.basename(String(to))}`);
  });
  const realLink = fsp.link.bind(fsp);
  vi.spyOn(fsp, 'link').mockImplementation(async (from, to) => {
    await realLink(from, to);
    events.push(`link ${path.basename(String(from))} -> ${path.basename(String(to))}`);
  });
  return events;
}

describe('LocalStorage durability (spied fs calls: a power cut cannot be produced here)', () => {
  it('an uploaded data file is flushed before it is renamed into place', async () => {
    const root = await freshRoot();
    const local = path.join(await freshRoot(), 'part-0.parquet');
    await fsp.writeFile(local, 'rows');
    const events = recordFsCalls();
    await LocalStorage.at(root).upload('data/part-0.parquet', local);
    const rename = events.findIndex((e) => e.endsWith('-> part-0.parquet'));
    expect(rename).toBeGreaterThan(0);
    const tmp = events[rename]!.split(' ')[1]!;
    expect(events.slice(0, rename)).toContain(`sync ${tmp}`);
    expect(await fsp.readFile(path.join(root, 'data/part-0.parquet'), 'utf8')).toBe('rows');
  });

  it('a commit is flushed before its link, and its folder after it', async () => {
    const root = await freshRoot();
    const events = recordFsCalls();
    const created = await LocalStorage.at(root).writeIfAbsent(
      '_delta_log/00000000000000000000.json',
      new TextEncoder().encode('{"commitInfo":{}}\n'),
    );
    expect(created).toBe(true);
    const link = events.findIndex((e) => e.endsWith('-> 00000000000000000000.json'));
    expect(link).toBeGreaterThan(0);
    const tmp = events[link]!.split(' ')[1]!;
    expect(events.slice(0, link)).toContain(`sync ${tmp}`);
    expect(events.slice(link + 1)).toContain('sync _delta_log');
  });
});
