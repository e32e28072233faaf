/**
 * Progress for long work (listing many partitions, downloads, backfills). On a terminal it
 * redraws one line on stderr; elsewhere it logs a structured line at most every `intervalMs`.
 */
import type { Logger } from 'pino';

export interface Progress {
  /** Advance by `n` units (and `bytes`, if the work is measured in bytes too). */
  tick(n?: number, bytes?: number): void;
  /** Finish: clear the terminal line, log the final count. */
  done(): void;
}

export interface ProgressOptions {
  label: string;
  total?: number;
  logger: Logger;
  /** Defaults to process.stderr.isTTY. */
  tty?: boolean;
  intervalMs?: number;
  stream?: NodeJS.WriteStream;
}

function bar(done: number, total: number, width = 24): string {
  const filled = total > 0 ? Math.min(width, Math.round((done / total) * width)) : 0;
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}]`;
}

function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** Start tracking progress of a unit of work. */
export function startProgress(opts: ProgressOptions): Progress {
  const stream = opts.stream ?? process.stderr;
  const tty = opts.tty ?? (stream.isTTY ?? false);
  const interval = opts.intervalMs ?? (tty ? 100 : 10_000);
  let count = 0;
  let bytes = 0;
  // Off a terminal, short work stays silent: the first line comes after one interval.
  let last = tty ? 0 : Date.now();
  let reported = false;
  const render = (final: boolean) => {
    const of = opts.total !== undefined ? `/${opts.total}` : '';
    if (tty) {
      const graphic = opts.total !== undefined ? bar(count, opts.total) + ' ' : '';
      stream.write(`\r\x1b[2K${opts.label} ${graphic}${count}${of}${bytes ? ' ' + mib(bytes) : ''}${final ? '\n' : ''}`);
    } else {
      opts.logger.info({ progress: opts.label, done: count, total: opts.total, bytes: bytes || undefined }, `${opts.label} ${count}${of}`);
    }
  };
  return {
    tick(n = 1, b = 0) {
      count += n;
      bytes += b;
      const now = Date.now();
      if (now - last >= interval) {
        last = now;
        reported = true;
        render(false);
      }
    },
    done() {
      if (reported) render(true);
    },
  };
}
