/**
 * The config file's schema (SPEC §6), validated with zod. Every field has its default here,
 * so the rest of tidemark sees a complete, typed config.
 */
import { z } from 'zod';
import { parseDuration, parseSize } from './units.js';

const duration = (fallback: string) =>
  z
    .union([z.string(), z.number().int().nonnegative()])
    .default(fallback)
    .transform((v, ctx) => {
      const ms = typeof v === 'number' ? v : parseDuration(v);
      if (ms === null) {
        ctx.addIssue({ code: 'custom', message: `expected a duration such as 30s, 15m, 2h or 7d, got ${JSON.stringify(v)}` });
        return z.NEVER;
      }
      return ms;
    });

const size = (fallback: string) =>
  z
    .union([z.string(), z.number().int().positive()])
    .default(fallback)
    .transform((v, ctx) => {
      const bytes = typeof v === 'number' ? v : parseSize(v);
      if (bytes === null || bytes <= 0) {
        ctx.addIssue({ code: 'custom', message: `expected a size such as 64MiB or 1GiB, got ${JSON.stringify(v)}` });
        return z.NEVER;
      }
      return bytes;
    });

const nonEmpty = z.string().trim().min(1, 'must not be empty');
const columnList = z.array(nonEmpty).min(1, 'must name at least one column');

const common = {
  start: z.string().optional(),
  requireSuccessMarker: z.boolean().default(false),
  onOverwrite: z.enum(['reload', 'ignore']).default('reload'),
};

const discoverByPartition = z.strictObject({
  by: z.literal('partition'),
  layout: nonEmpty,
  lookback: z.number().int().nonnegative().default(2),
  timezone: z.string().default('UTC'),
  ...common,
});

const discoverByModified = z.strictObject({
  by: z.literal('modified'),
  settle: duration('15m'),
  ...common,
});

const csvOptions = z.strictObject({
  header: z.boolean().optional(),
  delimiter: z.string().min(1).max(4).optional(),
  quote: z.string().max(1).optional(),
  nullstr: z.string().optional(),
});

const source = z.strictObject({
  uri: nonEmpty,
  format: z.enum(['parquet', 'csv', 'tsv', 'json', 'ndjson']).optional(),
  csv: csvOptions.optional(),
  discover: z.discriminatedUnion('by', [discoverByPartition, discoverByModified]),
});

const target = z
  .strictObject({
    uri: nonEmpty,
    mode: z.enum(['merge', 'append']).default('merge'),
    key: columnList.optional(),
    orderBy: nonEmpty.optional(),
    partitionBy: z.array(nonEmpty).default([]),
    deleteWhen: nonEmpty.optional(),
    tombstoneRetention: duration('7d'),
    /**
     * Rows per data file the job writes. Smaller files make a MERGE rewrite less (cost follows
     * the change); `tidemark optimize` compacts small files later.
     */
    maxRowsPerFile: z.number().int().positive().default(250_000),
  })
  .superRefine((t, ctx) => {
    if (t.mode !== 'merge') return;
    if (!t.key) ctx.addIssue({ code: 'custom', path: ['key'], message: 'is required when mode is merge' });
    if (!t.orderBy) ctx.addIssue({ code: 'custom', path: ['orderBy'], message: 'is required when mode is merge' });
  });

const job = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, 'must be letters, digits, _ . - (starting with a letter or digit)'),
  source,
  target,
  maxFilesPerBatch: z.number().int().positive().default(1000),
  maxBytesPerBatch: size('1GiB'),
  onBadFile: z.enum(['fail', 'quarantine']).default('fail'),
  schemaEvolution: z.enum(['addColumns', 'fail']).default('addColumns'),
  concurrency: z.number().int().min(1).max(256).default(16),
});

const storage = z.strictObject({
  endpoint: z.url().optional(),
  region: z.string().optional(),
  forcePathStyle: z.boolean().optional(),
  /** The operator asserts tidemark is the table's only writer (stores without conditional PUT). */
  singleWriter: z.boolean().default(false),
});

export const configSchema = z
  .strictObject({
    storage: storage.default({ singleWriter: false }),
    jobs: z.array(job).min(1, 'must list at least one job'),
  })
  .superRefine((cfg, ctx) => {
    const seen = new Map<string, number>();
    cfg.jobs.forEach((j, i) => {
      const first = seen.get(j.name);
      if (first !== undefined) {
        ctx.addIssue({ code: 'custom', path: ['jobs', i, 'name'], message: `duplicates jobs[${first}].name ${JSON.stringify(j.name)}` });
      } else seen.set(j.name, i);
    });
  });

export type TidemarkConfig = z.output<typeof configSchema>;
export type JobConfig = TidemarkConfig['jobs'][number];
export type StorageConfig = TidemarkConfig['storage'];
export type DiscoverConfig = JobConfig['source']['discover'];
