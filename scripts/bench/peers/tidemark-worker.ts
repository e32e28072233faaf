/**
 * tidemark as a peer of the peers benchmark (scripts/bench/peers.ts), in the same form as
 * ./worker.py: a long-lived process answering one JSON line per command on stdin.
 *
 *   {"op": "merge", "table": DIR, "source": PARQUET}
 *
 * reads the file into DuckDB and MERGEs it by order_id (latest updated_at wins) with the engine
 * the job uses (stageMerge + commit, deletion vectors as the table has them) and the job's
 * defaults (target.maxRowsPerFile, concurrency), on a fresh session with the job's default memory
 * limit, as `npm run bench -- merge` does.
 */
import { createInterface } from 'node:readline';
import { str } from '../../../src/engine/sql.js';
import { LocalStorage } from '../../../src/storage/local.js';
import { mergeAndCommit, openTable } from '../../lib/tables.js';
import { ordersJob } from '../job.js';
import { ORDER_KEY, ORDER_VERSION } from '../orders.js';
import { withSession } from '../session.js';

/** A job's defaults, from the config schema. */
const DEFAULTS = ordersJob({ name: 'peers', source: '.', target: '.', spoolRoot: '.' }).job;

interface Command {
  op: string;
  table: string;
  source: string;
}

async function merge(cmd: Command): Promise<Record<string, unknown>> {
  return withSession(async (session) => {
    const started = performance.now();
    await session.run(
      `CREATE TEMP TABLE changes AS SELECT * FROM read_parquet(${str(cmd.source)})`,
    );
    const m = await mergeAndCommit(
      openTable(LocalStorage.at(cmd.table), session, { singleWriter: true }),
      session,
      {
        batch: 'changes',
        keyColumns: [ORDER_KEY],
        orderBy: ORDER_VERSION,
        targetFileRows: DEFAULTS.target.maxRowsPerFile,
        concurrency: DEFAULTS.concurrency,
      },
    );
    const ms = performance.now() - started;
    return {
      ms,
      metrics: {
        version: m.version,
        durations: m.durations,
        bytesAdded: m.bytesAdded,
        dvBytes: m.dvBytes,
      },
    };
  });
}

const lines = createInterface({ input: process.stdin });
process.stdout.write(
  `${JSON.stringify({ ready: true, version: 'tidemark (this checkout)', startup_ms: performance.now(), pid: process.pid })}\n`,
);
for await (const line of lines) {
  const cmd = JSON.parse(line) as Command;
  if (cmd.op === 'quit') break;
  let out: Record<string, unknown>;
  try {
    if (cmd.op !== 'merge') throw new Error(`unknown op ${cmd.op}`);
    out = await merge(cmd);
  } catch (err) {
    out = { error: err instanceof Error ? (err.stack ?? err.message) : String(err) };
  }
  process.stdout.write(`${JSON.stringify(out)}\n`);
}
lines.close();
