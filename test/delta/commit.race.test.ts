/**
 * Two writer processes racing on the local driver (real fs.link put-if-absent): appends must
 * both commit with contiguous versions, conflicting rewrites must leave exactly one winner,
 * and no commit file is ever overwritten.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commitWithRetry } from '../../src/delta/commit.js';
import { LocalStorage } from '../../src/storage/local.js';
import {
  addPaths,
  appendRequest,
  createRequest,
  readCommit,
  replayPaths,
} from './commit-helpers.js';

const CHILD = fileURLToPath(new URL('./race-writer.child.ts', import.meta.url));

/** A child writer answering one JSON line per command. */
class Writer {
  private readonly replies: AsyncIterator<string>;
  constructor(private readonly proc: ChildProcessWithoutNullStreams) {
    this.replies = createInterface({ input: proc.stdout })[Symbol.asyncIterator]();
  }
  static start(tableDir: string): Writer {
    return new Writer(
      spawn(process.execPath, ['--import', 'tsx', CHILD, tableDir], { stdio: 'pipe' }),
    );
  }
  async send(cmd: object): Promise<Record<string, unknown>> {
    this.proc.stdin.write(JSON.stringify(cmd) + '\n');
    const next = await this.replies.next();
    if (next.done) throw new Error('writer exited early');
    const reply = JSON.parse(next.value) as Record<string, unknown>;
    if (reply['error']) throw new Error(`writer failed: ${String(reply['error'])}`);
    return reply;
  }
  stop(): void {
    this.proc.stdin.end();
  }
}

let dir: string;
let table: LocalStorage;
let a: Writer;
let b: Writer;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'tidemark-race-'));
  table = new LocalStorage(dir);
  await commitWithRetry(table, createRequest());
  a = Writer.start(dir);
  b = Writer.start(dir);
});
afterAll(async () => {
  a?.stop();
  b?.stop();
  await rm(dir, { recursive: true, force: true });
});

/** Every reported commit's version file holds exactly the adds that writer sent. */
async function expectCommitted(reply: Record<string, unknown>, paths: string[]): Promise<void> {
  expect(reply).toMatchObject({ ok: true });
  const actions = await readCommit(table, reply['version'] as number);
  expect(addPaths(actions!)).toEqual(paths);
}

describe('two writers racing on the local driver', () => {
  it('non-conflicting appends planned on the same version both commit, contiguously', async () => {
    for (let round = 0; round < 15; round++) {
      const { version } = await replayPaths(table);
      const pa = [`p=a/a${round}-1.parquet`, `p=a/a${round}-2.parquet`];
      const pb = [`p=a/b${round}-1.parquet`];
      const [ra, rb] = await Promise.all([
        a.send({ op: 'append', readVersion: version, paths: pa }),
        b.send({ op: 'append', readVersion: version, paths: pb }),
      ]);
      await expectCommitted(ra, pa);
      await expectCommitted(rb, pb);
      expect([ra['version'] as number, rb['version'] as number].sort((x, y) => x - y)).toEqual([
        version + 1,
        version + 2,
      ]);
      expect([ra['attempts'] as number, rb['attempts'] as number].sort((x, y) => x - y)).toEqual([
        1, 2,
      ]);
    }
    const { version, live } = await replayPaths(table);
    expect(version).toBe(30);
    expect(live.size).toBe(15 * 3);
  });

  it('free-running appends on stale versions: every commit lands, none overwritten', async () => {
    const before = await replayPaths(table);
    const [ra, rb] = await Promise.all([
      a.send({ op: 'appendMany', count: 20, prefix: 'p=a/free-a' }),
      b.send({ op: 'appendMany', count: 20, prefix: 'p=a/free-b' }),
    ]);
    const commits = [
      ...(ra['commits'] as Array<Record<string, unknown>>),
      ...(rb['commits'] as Array<Record<string, unknown>>),
    ];
    for (const c of commits) await expectCommitted(c, c['paths'] as string[]);
    const versions = commits.map((c) => c['version'] as number).sort((x, y) => x - y);
    expect(versions).toEqual(Array.from({ length: 40 }, (_, i) => before.version + 1 + i));
    const after = await replayPaths(table);
    expect(after.version).toBe(before.version + 40);
    expect(after.live.size).toBe(before.live.size + 40 * 2);
  });

  it('conflicting rewrites of the same file: exactly one commits, the other gets CommitConflictError', async () => {
    for (let round = 0; round < 10; round++) {
      const seed = `p=a/seed${round}.parquet`;
      const { version: seeded } = await commitWithRetry(
        table,
        appendRequest((await replayPaths(table)).version, [seed]),
      );
      const [ra, rb] = await Promise.all([
        a.send({
          op: 'rewrite',
          readVersion: seeded,
          remove: seed,
          add: `p=a/seed${round}-a.parquet`,
        }),
        b.send({
          op: 'rewrite',
          readVersion: seeded,
          remove: seed,
          add: `p=a/seed${round}-b.parquet`,
        }),
      ]);
      const winners = [ra, rb].filter((r) => r['ok'] === true);
      const losers = [ra, rb].filter((r) => r['ok'] === false);
      expect(winners).toHaveLength(1);
      expect(winners[0]).toMatchObject({ version: seeded + 1, attempts: 1 });
      expect(losers).toHaveLength(1);
      expect(['ConcurrentDeleteRead', 'ConcurrentAppend', 'ConcurrentDeleteDelete']).toContain(
        losers[0]!['conflict'],
      );
      const { version, live } = await replayPaths(table);
      expect(version).toBe(seeded + 1);
      expect(live.has(seed)).toBe(false);
      expect(
        [`p=a/seed${round}-a.parquet`, `p=a/seed${round}-b.parquet`].filter((p) => live.has(p)),
      ).toHaveLength(1);
    }
  });
});
