/**
 * Spool folders of running jobs, removed on normal exit, on failure (the run's `finally`)
 * and on SIGINT/SIGTERM (the CLI exits through process.exit, which fires 'exit').
 */
import { rmSync } from 'node:fs';

const live = new Set<string>();
let hooked = false;

/** Remember a spool folder until `unregisterSpool`. */
export function registerSpool(dir: string): void {
  live.add(dir);
  if (!hooked) {
    hooked = true;
    process.once('exit', removeAllSpools);
  }
}

export function unregisterSpool(dir: string): void {
  live.delete(dir);
}

/** Remove every live spool folder now (synchronous: safe inside an 'exit' handler). */
export function removeAllSpools(): void {
  for (const dir of live) rmSync(dir, { recursive: true, force: true });
  live.clear();
}
