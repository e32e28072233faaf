/**
 * The structured logger. Logs go to stderr: JSON lines when stderr is not a terminal (schedulers,
 * log shippers), short human lines on a terminal. stdout stays reserved for `--json` output.
 */
import { Writable } from 'node:stream';
import { pino, type Logger, type LevelWithSilent } from 'pino';
import { redactText } from './redact.js';

export type { Logger };

export interface LoggerOptions {
  level?: LevelWithSilent;
  /** Force JSON lines (true) or human lines (false); default: JSON unless stderr is a TTY. */
  json?: boolean;
  /** Where lines go; default process.stderr. */
  stream?: NodeJS.WritableStream;
}

const LEVEL_NAMES: Record<number, string> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };

/** Render one pino JSON line as `12:00:01 info  message key=value`. */
export function humanLine(jsonLine: string): string {
  const { level, time, msg, pid: _pid, hostname: _host, ...rest } = JSON.parse(jsonLine) as Record<string, unknown>;
  const clock = new Date(Number(time)).toISOString().slice(11, 19);
  const fields = Object.entries(rest)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
  const name = (LEVEL_NAMES[Number(level)] ?? String(level)).padEnd(5);
  return `${clock} ${name} ${String(msg ?? '')}${fields ? ' ' + fields : ''}\n`;
}

/** A stream that redacts secrets and optionally reformats lines for humans. */
function sink(target: NodeJS.WritableStream, human: boolean): Writable {
  return new Writable({
    write(chunk: Buffer, _enc, done) {
      const text = redactText(chunk.toString('utf8'));
      const out = human
        ? text
            .split('\n')
            .filter((l) => l.trim() !== '')
            .map(humanLine)
            .join('')
        : text;
      target.write(out, () => done());
    },
  });
}

/** Create the process logger. */
export function createLogger(opts: LoggerOptions = {}): Logger {
  const target = opts.stream ?? process.stderr;
  const json = opts.json ?? !(process.stderr.isTTY ?? false);
  return pino(
    { level: opts.level ?? process.env['TIDEMARK_LOG_LEVEL'] ?? 'info', base: undefined, timestamp: pino.stdTimeFunctions.epochTime },
    sink(target, !json),
  );
}

/** A logger that drops everything (tests, library use). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
