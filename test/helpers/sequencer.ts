/**
 * vitest file order: the longest files start first, so the workers finish together instead
 * of one running a 30 s file alone at the end. vitest does this itself from the durations it
 * caches (node_modules/.vite/vitest), but a fresh clone (CI) has no cache and it falls back to
 * file size, which put the packaging and model tests last (20–30 s of one worker alone). So a
 * file's expected time is the larger of its cached duration and its figure below (measured with
 * `npx vitest run --reporter=json`; update it when a file gets much slower or faster), else its
 * cached duration, else a small number by size: files not listed are short. Failed files still
 * run first, as vitest does.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Seconds on a 2-core machine of the files that take longest (the rest take under ~20 s), as
 * measured in a whole `npm test` run (three workers, each file with others beside it).
 */
const SLOW: Record<string, number> = {
  'test/job/s3-faults.e2e.test.ts': 127,
  'test/job/run-job.faults.test.ts': 84,
  'test/cli/kill9.test.ts': 55,
  'test/model/partitioned.test.ts': 45,
  'test/cli/scale-out.concurrent.test.ts': 21,
  'test/job/backfill.faults.test.ts': 34,
  'test/storage/s3.faults.test.ts': 31,
  'test/engine/load.property.test.ts': 29,
  'test/package/pack.test.ts': 27,
  'test/job/backfill.shards.test.ts': 27,
  'test/job/bad-input.test.ts': 25,
  'test/job/backfill.test.ts': 25,
  'test/job/scd2.test.ts': 24,
  'test/job/cdc.test.ts': 24,
  'test/model/unpartitioned.test.ts': 23,
  'test/job/run-job.state-bounded.test.ts': 21,
  'test/cli/scheduler.test.ts': 21,
  'test/cli/concurrent-runs.test.ts': 21,
  'test/cli/bin.test.ts': 20,
  'test/storage/s3.faults-mixed.test.ts': 20,
  'test/job/config-change.test.ts': 17,
  'test/cli/kill9-shard.test.ts': 17,
  'test/cli/demo-rerun.test.ts': 17,
};

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const estimate = new Map<TestSpecification, { failed: boolean; ms: number }>();
    for (const spec of files) {
      const rel = path.relative(root, spec.moduleId).split(path.sep).join('/');
      const cached = this.ctx.cache.getFileTestResults(`${spec.project.name}:${rel}`);
      const hint = SLOW[rel];
      // A listed file takes at least its figure: the cache holds the last run's duration, which a
      // run of part of the file (`-t`) makes far shorter, and a long file started last runs alone.
      // Unlisted and uncached: a byte of test is taken for a microsecond (a 20 kB file: 20 ms).
      const ms =
        hint !== undefined
          ? Math.max(hint * 1000, cached?.duration ?? 0)
          : (cached?.duration ??
            (await fsp.stat(spec.moduleId).then(
              (s) => s.size,
              () => 0,
            )) / 1000);
      estimate.set(spec, { failed: cached?.failed ?? false, ms });
    }
    return [...files].sort((a, b) => {
      const ea = estimate.get(a)!;
      const eb = estimate.get(b)!;
      if (ea.failed !== eb.failed) return ea.failed ? -1 : 1;
      return eb.ms - ea.ms;
    });
  }
}
