/**
 * A small Delta table written by hand the way Spark writes one (none of the shared fixture tables
 * records a change data feed or has constraints): version 0 holds commitInfo, a legacy protocol
 * (writer 4: invariants, CHECK constraints and change data feed supported), a metaData with the
 * given configuration and schema (field metadata included), and one add of a Parquet file written
 * by DuckDB with the given rows.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { StructField } from '../../src/delta/schema.js';
import type { DuckSession } from '../../src/engine/duckdb.js';
import { str } from '../../src/engine/sql.js';

/** What the hand-written table holds. */
export interface SparkLikeTable {
  /** Spark StructType fields, in order; the data file's columns must match them. */
  fields: StructField[];
  /** Table properties (`delta.enableChangeDataFeed`, `delta.constraints.<name>`, …). */
  configuration: Record<string, string>;
  /** A SELECT giving the rows of the one data file, columns named and typed like `fields`. */
  rowsSql: string;
  protocol?: {
    minReaderVersion: number;
    minWriterVersion: number;
    readerFeatures?: string[];
    writerFeatures?: string[];
  };
}

/** Write the table into the (empty) folder `dir`. */
export async function writeSparkLikeTable(
  session: DuckSession,
  dir: string,
  table: SparkLikeTable,
): Promise<void> {
  await mkdir(join(dir, '_delta_log'), { recursive: true });
  const name = `part-00000-${randomUUID()}-c000.snappy.parquet`;
  await session.run(
    `COPY (${table.rowsSql}) TO ${str(join(dir, name))} (FORMAT parquet, COMPRESSION snappy)`,
  );
  const rows = Number((await session.one(`SELECT count(*) AS n FROM (${table.rowsSql})`))!['n']);
  const now = Date.now();
  const actions = [
    {
      commitInfo: {
        timestamp: now,
        operation: 'CREATE TABLE AS SELECT',
        operationParameters: {},
        isBlindAppend: true,
        engineInfo: 'Apache-Spark/3.5.1 Delta-Lake/3.2.0',
      },
    },
    { protocol: table.protocol ?? { minReaderVersion: 1, minWriterVersion: 4 } },
    {
      metaData: {
        id: randomUUID(),
        format: { provider: 'parquet', options: {} },
        schemaString: JSON.stringify({ type: 'struct', fields: table.fields }),
        partitionColumns: [],
        configuration: table.configuration,
        createdTime: now,
      },
    },
    {
      add: {
        path: name,
        partitionValues: {},
        size: (await stat(join(dir, name))).size,
        modificationTime: now,
        dataChange: true,
        stats: JSON.stringify({ numRecords: rows }),
      },
    },
  ];
  await writeFile(
    join(dir, '_delta_log', '00000000000000000000.json'),
    actions.map((a) => JSON.stringify(a)).join('\n') + '\n',
  );
}

/** A nullable field without metadata. */
export function field(
  name: string,
  type: StructField['type'],
  extra: Partial<StructField> = {},
): StructField {
  return { name, type, nullable: true, metadata: {}, ...extra };
}
