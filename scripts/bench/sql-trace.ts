/**
 * Which SQL statements take the time: a bench-only tracer that wraps DuckSession's statement
 * methods (run, all, allJson) on the prototype, so tidemark's own code paths are timed
 * statement by statement without touching src/. Tracing costs a clock and a CPU-time read per statement.
 */
import { performance } from 'node:perf_hooks';
import { DuckSession } from '../../src/engine/duckdb.js';

/** One executed statement. */
export interface TracedSql {
  ms: number;
  /** CPU time of the whole process meanwhile (DuckDB's threads included), in ms. */
  cpuMs: number;
  sql: string;
}

type Method = 'run' | 'all' | 'allJson';
const METHODS: readonly Method[] = ['run', 'all', 'allJson'];

let active: TracedSql[] | null = null;
let installed = false;

function install(): void {
  if (installed) return;
  installed = true;
  const proto = DuckSession.prototype as unknown as Record<
    Method,
    (sql: string) => Promise<unknown>
  >;
  for (const name of METHODS) {
    const original = proto[name];
    proto[name] = async function (this: unknown, sql: string): Promise<unknown> {
      const start = performance.now();
      const cpu = process.cpuUsage();
      try {
        return await original.call(this, sql);
      } finally {
        const used = process.cpuUsage(cpu);
        active?.push({
          ms: performance.now() - start,
          cpuMs: (used.user + used.system) / 1000,
          sql,
        });
      }
    };
  }
}

/** Record every statement `fn` runs (statements run by `one` count once, through `all`). */
export async function traceSql<T>(
  fn: () => Promise<T>,
): Promise<{ value: T; statements: TracedSql[] }> {
  install();
  const statements: TracedSql[] = [];
  const outer = active;
  active = statements;
  try {
    return { value: await fn(), statements };
  } finally {
    active = outer;
  }
}

/** Every statement in the order it ran, with its wall and CPU time, under a title line (`--trace`). */
export function statementListing(title: string, statements: readonly TracedSql[]): string {
  const total = (key: 'ms' | 'cpuMs') => statements.reduce((sum, s) => sum + s[key], 0).toFixed(1);
  const lines = statements.map((s, i) => {
    const sql = s.sql.replace(/\s+/g, ' ');
    const times = `${s.ms.toFixed(2).padStart(8)} ms ${s.cpuMs.toFixed(2).padStart(8)} ms CPU`;
    return `${String(i + 1).padStart(3)} ${times}  ${sql.length > 150 ? `${sql.slice(0, 149)}…` : sql}`;
  });
  return `\n${title}: ${statements.length}, ${total('ms')} ms (${total('cpuMs')} ms CPU) in all\n${lines.join('\n')}\n`;
}

/** Statements of one shape: total time and how many ran. */
export interface SlowSql {
  ms: number;
  count: number;
  sql: string;
}

/** Statements with the same shape summed (temp-table ids, paths and numbers folded), slowest first. */
export function slowest(statements: readonly TracedSql[], limit: number): SlowSql[] {
  const byShape = new Map<string, SlowSql>();
  for (const s of statements) {
    const shape = shapeOf(s.sql);
    const entry = byShape.get(shape) ?? { ms: 0, count: 0, sql: shape };
    entry.ms += s.ms;
    entry.count += 1;
    byShape.set(shape, entry);
  }
  return [...byShape.values()].sort((a, b) => b.ms - a.ms).slice(0, limit);
}

/** A statement with volatile parts folded, so repeated statements group together. */
function shapeOf(sql: string): string {
  return sql
    .replace(/\s+/g, ' ')
    .replace(/[0-9a-f]{32}/g, '…')
    .replace(/'[^']*\.parquet'/g, "'….parquet'")
    .replace(/(\['….parquet'(, '….parquet')+\])/g, "['….parquet', …]")
    .replace(/( UNION ALL (BY NAME )?SELECT .{0,60}).*$/, '$1… (more UNION ALL parts)')
    .replace(/\b\d+\b/g, 'N');
}
