/**
 * Progress for long work. On a terminal one bar on stderr (cli-progress) says where a run is:
 * `orders batch 2/5 fetch [#####...] 12/40 files 3.1 MB`, then load, dedupe, merge, commit.
 * Off a terminal it stays quiet and structured: a JSON log line per batch started, and the
 * running counts of a long fetch at most every `intervalMs`.
 */
import cliProgress from 'cli-progress';
import prettyBytes from 'pretty-bytes';
import type { Logger } from 'pino';

export interface Progress {
  /** Advance by `n` units (and `bytes`, if the work is measured in bytes too). */
  tick(n?: number, bytes?: number): void;
  /** Finish: stop the bar, log the final count. Safe to call again (a failure path stops it too). */
  done(): void;
}

export interface ProgressOptions {
  label: string;
  total?: number;
  logger: Logger;
  /** Defaults to the stream's isTTY. */
  tty?: boolean;
  intervalMs?: number;
  stream?: NodeJS.WritableStream;
}

/** How often a terminal bar is redrawn at most. */
const TTY_INTERVAL_MS = 100;
/** How often a long piece of work logs its counts off a terminal. */
const LOG_INTERVAL_MS = 10_000;

interface Payload {
  label: string;
  unit: string;
  size: string;
}

function isTTY(stream: NodeJS.WritableStream): boolean {
  return (stream as { isTTY?: boolean }).isTTY ?? false;
}

/** A cli-progress bar on `stream`, drawn even when `stream` is not a real terminal (tests force it). */
function terminalBar(stream: NodeJS.WritableStream): cliProgress.SingleBar {
  return new cliProgress.SingleBar(
    {
      stream: stream as NodeJS.WriteStream,
      format: '{label} [{bar}] {value}/{total}{unit}{size}',
      barsize: 24,
      barCompleteChar: '#',
      barIncompleteChar: '.',
      hideCursor: false,
      noTTYOutput: true,
      notTTYSchedule: TTY_INTERVAL_MS,
      forceRedraw: true,
      linewrap: false,
    },
    cliProgress.Presets.legacy,
  );
}

function sizeText(bytes: number): string {
  return bytes > 0 ? ' ' + prettyBytes(bytes, { binary: true }) : '';
}

/** Start tracking progress of one piece of work (a fetch, a backfill's files). */
export function startProgress(opts: ProgressOptions): Progress {
  const stream = opts.stream ?? process.stderr;
  const tty = opts.tty ?? isTTY(stream);
  const total = opts.total ?? 0;
  let count = 0;
  let bytes = 0;
  if (tty) {
    const bar = terminalBar(stream);
    bar.start(total, 0, { label: opts.label, unit: '', size: '' } satisfies Payload);
    let stopped = false;
    return {
      tick(n = 1, b = 0) {
        count += n;
        bytes += b;
        bar.update(count, { label: opts.label, unit: '', size: sizeText(bytes) } satisfies Payload);
      },
      done() {
        if (stopped) return;
        stopped = true;
        bar.stop();
      },
    };
  }
  const interval = opts.intervalMs ?? LOG_INTERVAL_MS;
  // Off a terminal, short work stays silent: the first line comes after one interval.
  let last = Date.now();
  let reported = false;
  const log = () => {
    const of = opts.total !== undefined ? `/${opts.total}` : '';
    opts.logger.info(
      { progress: opts.label, done: count, total: opts.total, bytes: bytes || undefined },
      `${opts.label} ${count}${of}`,
    );
  };
  return {
    tick(n = 1, b = 0) {
      count += n;
      bytes += b;
      const now = Date.now();
      if (now - last >= interval) {
        last = now;
        reported = true;
        log();
      }
    },
    done() {
      if (reported) log();
      reported = false;
    },
  };
}

/** Where one job's run is: the phase, the batch, the files of the batch fetched so far. */
export interface RunProgress {
  /** A phase starts (`list`, `fetch`, `load`, `dedupe`, `merge`, `commit`). */
  phase(name: string): void;
  /** Batch `n` (1-based) of `of` starts. */
  batch(n: number, of: number): void;
  /** The current batch's fetch of `total` files starts; tick it per file. */
  fetch(total: number): Progress;
  /** The run is over: stop the bar. Safe to call twice. */
  done(): void;
}

export interface RunProgressOptions {
  job: string;
  logger: Logger;
  /** Defaults to the stream's isTTY. */
  tty?: boolean;
  stream?: NodeJS.WritableStream;
  intervalMs?: number;
}

/** Progress of one job's run; see the module comment. */
export function startRunProgress(opts: RunProgressOptions): RunProgress {
  const stream = opts.stream ?? process.stderr;
  return (opts.tty ?? isTTY(stream))
    ? new TerminalRunProgress(opts.job, stream)
    : new LoggedRunProgress(opts);
}

/** One bar whose label follows the phases: `orders listing`, `orders batch 2/5 merge`. */
class TerminalRunProgress implements RunProgress {
  private bar: cliProgress.SingleBar | null = null;
  private batchText = '';
  private stage = '';
  private value = 0;
  private total = 0;
  private bytes = 0;

  constructor(
    private readonly job: string,
    private readonly stream: NodeJS.WritableStream,
  ) {}

  phase(name: string): void {
    this.stage = name === 'list' ? 'listing' : name;
    this.render(true);
  }

  batch(n: number, of: number): void {
    this.batchText = `batch ${n}/${of} `;
    this.value = 0;
    this.total = 0;
    this.bytes = 0;
    this.render(true);
  }

  fetch(total: number): Progress {
    this.stage = 'fetch';
    this.total = total;
    this.value = 0;
    this.bytes = 0;
    this.render(true);
    return {
      tick: (n = 1, b = 0) => {
        this.value += n;
        this.bytes += b;
        this.render();
      },
      done: () => undefined,
    };
  }

  done(): void {
    this.bar?.stop();
    this.bar = null;
  }

  /** Redraw; `now`: at once (a new phase or batch), else at the bar's pace (file ticks). */
  private render(now = false): void {
    const payload: Payload = {
      label: `${this.job} ${this.batchText}${this.stage}`.trimEnd(),
      unit: this.total > 0 ? ' files' : '',
      size: sizeText(this.bytes),
    };
    if (!this.bar) {
      this.bar = terminalBar(this.stream);
      this.bar.start(this.total, this.value, payload);
      return;
    }
    this.bar.setTotal(this.total);
    this.bar.update(this.value, payload);
    if (now) this.bar.render(); // forceRedraw is on: draws even if only the label changed
  }
}

/** JSON log lines: one per batch started (info), phases at debug, a long fetch's counts every interval. */
class LoggedRunProgress implements RunProgress {
  private batchNo = 0;
  private batches = 0;

  constructor(private readonly opts: RunProgressOptions) {}

  phase(name: string): void {
    this.opts.logger.debug(
      { job: this.opts.job, progress: 'phase', phase: name, ...this.where() },
      `${name}`,
    );
  }

  batch(n: number, of: number): void {
    this.batchNo = n;
    this.batches = of;
    this.opts.logger.info(
      { job: this.opts.job, progress: 'batch', batch: n, of },
      `batch ${n}/${of}`,
    );
  }

  fetch(total: number): Progress {
    return startProgress({
      label: `${this.opts.job}: fetch`,
      total,
      logger: this.opts.logger,
      tty: false,
      ...(this.opts.intervalMs !== undefined ? { intervalMs: this.opts.intervalMs } : {}),
    });
  }

  done(): void {}

  private where(): { batch?: number; of?: number } {
    return this.batchNo > 0 ? { batch: this.batchNo, of: this.batches } : {};
  }
}
