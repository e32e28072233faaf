/**
 * Run a benchmark's child process to its end and keep what it printed. stderr keeps its last
 * 100,000 characters once it passes 1,000,000: callers read only its tail (`/usr/bin/time`'s
 * figures, the end of an error), and a chatty child must not grow the parent's memory.
 */
import { spawn } from 'node:child_process';

export interface Captured {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function capture(command: string, args: string[]): Promise<Captured> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString('utf8');
      if (stderr.length > 1e6) stderr = stderr.slice(-1e5);
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
