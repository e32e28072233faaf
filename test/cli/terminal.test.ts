/**
 * The real `tidemark` process on a terminal: stderr is a pseudo-terminal made by script(1), so
 * the progress bars are drawn as for a person at a shell. A command that fails must still stop
 * its bar and exit: a bar left running keeps Node's event loop alive, and the shell never gets
 * its prompt back (a backfill that failed on a bad file did exactly that).
 */
import { spawn } from 'node:child_process';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { withinStep } from '../helpers/machine.js';
import { cleanup, tempDir } from '../job/helpers.js';
import { CLI_ENTRY } from './process.js';

const dirs: string[] = [];
afterAll(async () => {
  await cleanup(dirs);
});

const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/** Run the CLI under script(1): its exit code, and what the terminal showed. */
function onTerminal(args: string[]): {
  done: Promise<{ code: number | null; screen: string }>;
  kill: () => void;
} {
  const command = [process.execPath, ...CLI_ENTRY, ...args].map(quote).join(' ');
  const child = spawn('script', ['-qec', command, '/dev/null'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let screen = '';
  child.stdout.on('data', (c: Buffer) => (screen += c.toString('utf8')));
  child.stderr.on('data', (c: Buffer) => (screen += c.toString('utf8')));
  const done = new Promise<{ code: number | null; screen: string }>((resolve) =>
    child.on('close', (code) => resolve({ code, screen })),
  );
  return { done, kill: () => process.kill(-child.pid!, 'SIGKILL') };
}

describe('on a terminal', () => {
  it.each([
    ['backfill', ['--from', '2025-03-01', '--to', '2025-03-02']],
    ['run', []],
  ])('a %s that fails on a bad file stops its progress bar and exits 1', async (command, extra) => {
    const dir = await tempDir('tty', dirs);
    await fsp.mkdir(path.join(dir, 'src/2025/03/01'), { recursive: true });
    await fsp.mkdir(path.join(dir, 'src/2025/03/02'), { recursive: true });
    await fsp.writeFile(
      path.join(dir, 'src/2025/03/01/a.csv'),
      'order_id,status,seq\n1,placed,1\n',
    );
    await fsp.writeFile(
      path.join(dir, 'src/2025/03/02/b.csv'),
      'order_id,status,seq\n2,placed,1,extra,fields\n',
    );
    const job = {
      name: 'orders',
      source: { uri: './src', discover: { by: 'partition', layout: '{yyyy}/{mm}/{dd}' } },
      target: { uri: './table', key: ['order_id'], orderBy: 'seq' },
      maxFilesPerBatch: 1,
    };
    const config = path.join(dir, 'tidemark.yaml');
    await fsp.writeFile(config, JSON.stringify({ jobs: [job] }));

    const proc = onTerminal([command, '--config', config, ...extra]);
    const { code, screen } = await withinStep(
      `tidemark ${command} on a terminal`,
      20_000,
      () => proc.done,
      proc.kill,
    );
    expect(code).toBe(1);
    // The bar was drawn (a terminal), and the failure names the file and its line.
    expect(screen).toMatch(/orders/);
    expect(screen).toContain('\x1b[');
    expect(screen).toMatch(/src\/2025\/03\/02\/b\.csv: line 2/);
  });
});
