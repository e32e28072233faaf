/**
 * Micro-benchmark of writeDataFiles: `npx tsx scripts/bench/write-files.ts [rows] [targetFileRows] [partitions]`.
 * Builds an orders-like table in memory (partitioned by `region` when partitions > 0), then times
 * writeDataFiles on it 3 times, each with the time of each statement kind on the session's own
 * connection (stage / stats / copy; COPYs on the extra connections are not in `copy`).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StructType } from '../../src/delta/schema.js';
import { writeDataFiles } from '../../src/engine/data-files.js';
import { DuckSession } from '../../src/engine/duckdb.js';

const rows = Number(process.argv[2] ?? 5_000_000);
const target = process.argv[3] ? Number(process.argv[3]) : undefined;
const partitions = Number(process.argv[4] ?? 0);

const schema: StructType = {
  type: 'struct',
  fields: [
    { name: 'id', type: 'long', nullable: false, metadata: {} },
    { name: 'customer', type: 'string', nullable: true, metadata: {} },
    { name: 'amount', type: 'decimal(18,2)', nullable: true, metadata: {} },
    { name: 'qty', type: 'integer', nullable: true, metadata: {} },
    { name: 'price', type: 'double', nullable: true, metadata: {} },
    { name: 'ts', type: 'timestamp', nullable: true, metadata: {} },
    { name: 'day', type: 'date', nullable: true, metadata: {} },
    { name: 'note', type: 'string', nullable: true, metadata: {} },
    { name: 'region', type: 'string', nullable: true, metadata: {} },
  ],
};

const session = await DuckSession.open();
await session.run(`CREATE TABLE src AS SELECT i AS id, 'customer-' || (i % 50000) AS customer,
  CAST((i % 100000) / 100 AS DECIMAL(18,2)) AS amount, CAST(i % 17 AS INTEGER) AS qty, (i % 997) * 1.5 AS price,
  TIMESTAMPTZ '2024-01-01 00:00:00+00' + INTERVAL (i) SECOND AS ts, DATE '2024-01-01' + CAST(i % 365 AS INTEGER) AS day,
  CASE WHEN i % 10 = 0 THEN NULL ELSE 'a fairly long note text that goes past thirty-two characters ' || i END AS note,
  ${partitions > 0 ? `'r' || (hash(i) % ${partitions})` : `'r1'`} AS region
  FROM range(${rows}) t(i)`);

const timings = new Map<string, number>();
const orig = { run: session.run.bind(session), all: session.all.bind(session) };
const kind = (sql: string) =>
  /^COPY/.test(sql)
    ? 'copy'
    : /^CREATE TEMP TABLE|^CREATE TABLE/.test(sql)
      ? 'stage'
      : /GROUP BY g/.test(sql) || /count\(\*\) AS n/.test(sql)
        ? 'stats'
        : 'other';
const timed =
  <A extends unknown[], R>(f: (sql: string, ...a: A) => Promise<R>) =>
  async (sql: string, ...a: A) => {
    const t0 = performance.now();
    try {
      return await f(sql, ...a);
    } finally {
      const k = kind(sql);
      timings.set(k, (timings.get(k) ?? 0) + performance.now() - t0);
    }
  };
session.run = timed(orig.run);
session.all = timed(orig.all);

const partitionColumns = partitions > 0 ? ['region'] : [];
for (let run = 0; run < 3; run++) {
  timings.clear();
  const dir = await mkdtemp(join(tmpdir(), 'bench-write-'));
  const t0 = performance.now();
  const files = await writeDataFiles(session, {
    relationSql: 'src',
    schema,
    partitionColumns,
    localDir: dir,
    targetFileRows: target,
  });
  const ms = performance.now() - t0;
  const bytes = files.reduce((s, f) => s + f.size, 0);
  const parts = [...timings].map(([k, v]) => `${k} ${v.toFixed(0)}`).join(', ');
  console.log(
    `rows ${rows} target ${target ?? '-'} partitions ${partitions}: ${files.length} files, ${(bytes / 1e6).toFixed(1)} MB, ${ms.toFixed(0)} ms (${parts})`,
  );
  await rm(dir, { recursive: true, force: true });
}
session.close();
