/**
 * The DuckDB session: the only module that imports @duckdb/node-api. Everything else talks
 * to DuckDB through `DuckSession`, so the rest of tidemark sees rows as plain JS objects.
 */
import { DuckDBDataChunk, DuckDBInstance, INTEGER, type DuckDBConnection } from '@duckdb/node-api';

export type Row = Record<string, unknown>;

/** Rows per DuckDB data chunk (its vector size). */
const VECTOR_SIZE = 2048;

export interface DuckSessionOptions {
  /** DuckDB threads; default: DuckDB's own (number of cores). */
  threads?: number;
  /** DuckDB memory limit in bytes; past it DuckDB spills to `tempDirectory`. Default: DuckDB's own (80% of RAM). */
  memoryLimit?: number;
  /** Folder for DuckDB's spill files. */
  tempDirectory?: string;
}

export class DuckSession {
  private constructor(
    private readonly instance: DuckDBInstance,
    private readonly conn: DuckDBConnection,
    /** False for sessions from connect(): closing them leaves the shared database open. */
    private readonly ownsInstance = true,
  ) {}

  /** An in-memory database with the session time zone pinned to UTC (timestamps are instants). */
  static async open(opts: DuckSessionOptions = {}): Promise<DuckSession> {
    const config: Record<string, string> = {};
    if (opts.threads) config['threads'] = String(opts.threads);
    if (opts.memoryLimit) config['memory_limit'] = `${opts.memoryLimit}B`;
    if (opts.tempDirectory) config['temp_directory'] = opts.tempDirectory;
    const instance = await DuckDBInstance.create(':memory:', config);
    const conn = await instance.connect();
    const session = new DuckSession(instance, conn);
    await session.run("SET TimeZone = 'UTC'");
    return session;
  }

  /**
   * Another connection to the same database, for running statements in parallel with this one
   * (each connection runs one statement at a time). It sees this session's tables but not its
   * temp tables or settings other than the UTC time zone. close() it; the database stays open.
   */
  async connect(): Promise<DuckSession> {
    const session = new DuckSession(this.instance, await this.instance.connect(), false);
    await session.run("SET TimeZone = 'UTC'");
    return session;
  }

  /** Run statements, discarding results. */
  async run(sql: string): Promise<void> {
    await this.conn.run(sql);
  }

  /** Rows as JS objects: BIGINT as bigint, DECIMAL as string-free JS numbers where exact, etc. */
  async all(sql: string): Promise<Row[]> {
    const reader = await this.conn.runAndReadAll(sql);
    return reader.getRowObjectsJS() as Row[];
  }

  /** Rows as JSON-safe objects (BIGINT/DECIMAL as strings, timestamps as ISO text). */
  async allJson(sql: string): Promise<Row[]> {
    const reader = await this.conn.runAndReadAll(sql);
    return reader.getRowObjectsJson() as Row[];
  }

  /**
   * Append rows of INTEGER columns (all of one length) to `table`, a vector at a time: millions
   * of rows per second, where INSERT statements would take minutes. Values must be int32.
   */
  async appendIntegerColumns(
    table: string,
    columns: ReadonlyArray<ArrayLike<number>>,
  ): Promise<void> {
    const rows = columns[0]?.length ?? 0;
    if (columns.some((c) => c.length !== rows))
      throw new RangeError('[duckdb] appendIntegerColumns: columns of different lengths');
    const appender = await this.conn.createAppender(table);
    try {
      for (let start = 0; start < rows; start += VECTOR_SIZE) {
        const count = Math.min(VECTOR_SIZE, rows - start);
        const chunk = DuckDBDataChunk.create(
          columns.map(() => INTEGER),
          count,
        );
        chunk.setColumns(
          columns.map((c) => Array.from({ length: count }, (_, i) => c[start + i]!)),
        );
        appender.appendDataChunk(chunk);
      }
      appender.flushSync();
    } finally {
      appender.closeSync();
    }
  }

  /** First row, or undefined. */
  async one(sql: string): Promise<Row | undefined> {
    return (await this.all(sql))[0];
  }

  close(): void {
    this.conn.closeSync();
    if (this.ownsInstance) this.instance.closeSync();
  }
}
