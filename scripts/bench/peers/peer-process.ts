/**
 * A peer of the peers benchmark as a long-lived child process speaking JSON lines (./worker.py,
 * ./tidemark-worker.ts): started once (its start-up reported apart), then one measured step per
 * command: the step's own wall time, and the CPU time and peak RSS of the process and its
 * children (./proc-usage.ts), plus the bytes it added to the folders it wrote.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface, type Interface } from 'node:readline';
import { flushWrites } from '../clock.js';
import { watchUsage } from './proc-usage.js';

/** One measured step. */
export interface StepUsage {
  ms: number;
  cpuMs: number;
  peakRssBytes: number;
  /** Bytes of the files the step added under the watched folders. */
  bytesWritten: number;
  /** What the peer answered (its metrics). */
  answer: Record<string, unknown>;
}

/** A running peer. */
export class PeerProcess {
  private constructor(
    readonly name: string,
    private readonly child: ChildProcessWithoutNullStreams,
    private readonly lines: Interface,
    private readonly replies: AsyncIterator<string>,
    readonly hello: { version: string; startup_ms: number; pid: number },
    readonly startupMs: number,
    private readonly stderrTail: string[],
  ) {}

  /** Start `command args…` and wait for its ready line; `startupMs` is spawn to ready. */
  static async start(
    name: string,
    command: string,
    args: string[],
    env: NodeJS.ProcessEnv = process.env,
  ): Promise<PeerProcess> {
    const started = performance.now();
    const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'], env });
    const tail: string[] = [];
    child.stderr.on('data', (c: Buffer) => {
      tail.push(c.toString('utf8'));
      if (tail.length > 40) tail.shift();
    });
    const lines = createInterface({ input: child.stdout });
    const replies = lines[Symbol.asyncIterator]();
    try {
      const first = await replies.next();
      if (first.done)
        throw new Error(`[bench] ${name} exited before it was ready:\n${tail.join('')}`);
      const hello = JSON.parse(first.value) as PeerProcess['hello'];
      return new PeerProcess(name, child, lines, replies, hello, performance.now() - started, tail);
    } catch (err) {
      // Not ready: end it (a JVM left running would keep this process alive, and hold its memory).
      lines.close();
      child.kill('SIGKILL');
      throw err;
    }
  }

  /** Send a command and measure it; `writes` are the folders whose new files count as written. */
  async step(command: Record<string, unknown>, writes: readonly string[]): Promise<StepUsage> {
    flushWrites();
    const before = await filesUnder(writes);
    const watch = watchUsage(this.child.pid!);
    this.child.stdin.write(`${JSON.stringify(command)}\n`);
    const reply = await this.replies.next();
    const usage = watch.stop();
    if (reply.done)
      throw new Error(
        `[bench] ${this.name} exited during ${String(command['op'])}:\n${this.stderrTail.join('')}`,
      );
    const answer = JSON.parse(reply.value) as Record<string, unknown>;
    if (typeof answer['error'] === 'string')
      throw new Error(`[bench] ${this.name} failed ${String(command['op'])}: ${answer['error']}`);
    const after = await filesUnder(writes);
    let bytesWritten = 0;
    for (const [path, size] of after) if (before.get(path) !== size) bytesWritten += size;
    return {
      ms: Number(answer['ms']),
      cpuMs: usage.cpuMs,
      peakRssBytes: usage.peakRssBytes,
      bytesWritten,
      answer,
    };
  }

  /** Ask the peer to quit and wait for it. */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.stdin.end(`${JSON.stringify({ op: 'quit' })}\n`);
    const timer = setTimeout(() => this.child.kill('SIGTERM'), 60_000);
    await exited;
    clearTimeout(timer);
    this.lines.close();
  }
}

/** Every file under the folders, by path, with its size. */
export async function filesUnder(dirs: readonly string[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const dir of dirs) {
    const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      if (!e.isFile()) continue;
      const path = join(e.parentPath, e.name);
      const size = await stat(path).then(
        (s) => s.size,
        () => null,
      );
      if (size !== null) out.set(path, size);
    }
  }
  return out;
}
