/**
 * The structured logger. Logs go to stderr: JSON lines when stderr is not a terminal (schedulers,
 * log shippers), human lines through pino-pretty on a terminal. stdout stays reserved for `--json`
 * output. Every JSON line carries an ISO-8601 `time`, and the CLI binds the invocation's `runId`
 * into every line (`logger.child({ runId })`).
 */
import { Writable } from 'node:stream';
import { pino, type Logger, type LevelWithSilent } from 'pino';
import { prettyFactory } from 'pino-pretty';
import { redactText } from './redact.js';

export type { Logger };

export interface LoggerOptions {
  level?: LevelWithSilent;
  /** Force JSON lines (true) or human lines (false); default: JSON unless stderr is a TTY. */
  json?: boolean;
  /** Where lines go; default process.stderr. */
  stream?: NodeJS.WritableStream;
  /** Colours in human lines; default: when the stream is a terminal. */
  colorize?: boolean;
}

/** `12:00:01 INFO: message` plus the fields on the same line (the runId is left out: it is in every line). */
export function humanFormatter(colorize = false): (jsonLine: string) => string {
  return prettyFactory({
    colorize,
    translateTime: 'SYS:HH:MM:ss',
    ignore: 'runId',
    singleLine: true,
  });
}

/** A stream that redacts secrets and optionally reformats lines for humans. */
function sink(target: NodeJS.WritableStream, human: ((line: string) => string) | null): Writable {
  return new Writable({
    write(chunk: Buffer, _enc, done) {
      const text = redactText(chunk.toString('utf8'));
      // On a terminal a progress bar may own the current line: clear it before a log line.
      const out = human
        ? text
            .split('\n')
            .filter((l) => l.trim() !== '')
            .map((l) => '\r\x1b[2K' + human(l))
            .join('')
        : text;
      target.write(out, () => done());
    },
  });
}

/** Create the process logger. */
export function createLogger(opts: LoggerOptions = {}): Logger {
  const target = opts.stream ?? process.stderr;
  const tty = (target as { isTTY?: boolean }).isTTY ?? false;
  const json = opts.json ?? !(process.stderr.isTTY ?? false);
  return pino(
    {
      level: opts.level ?? process.env['TIDEMARK_LOG_LEVEL'] ?? 'info',
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    sink(target, json ? null : humanFormatter(opts.colorize ?? tty)),
  );
}

/** A logger that drops everything (tests, library use). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
