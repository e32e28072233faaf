/**
 * vitest file order: the longest files start first, so the workers finish together instead
 * of one running a 30 s file alone at the end. vitest does this itself from the durations it
 * caches (node_modules/.vite/vitest), but a fresh clone (CI) has no cache and it falls back to
 * file size, which put the packaging and model tests last (20–30 s of one worker alone). So a
 * file's expected time is its cached duration, else its figure below (measured with
 * `npx vitest run --reporter=json`; update it when a file gets much slower or faster), else a
 * small number by size: files not listed are short. Failed files still run first, as vitest does.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Seconds on a 2-core machine of the files that take longest (the rest take under ~10 s). */
const SLOW: Record<string, number> = {
  'test/job/s3-faults.e2e.test.ts': 80,
  'test/job/run-job.faults.test.ts': 40,
  'test/package/pack.test.ts': 12,
  'test/job/backfill.faults.test.ts': 30,
  'test/cli/kill9.test.ts': 30,
  'test/job/backfill.shards.test.ts': 28,
  'test/model/unpartitioned.test.ts': 25,
  'test/job/bad-input.test.ts': 22,
  'test/job/backfill.test.ts': 22,
  'test/model/partitioned.test.ts': 20,
  'test/cli/bin.test.ts': 18,
  'test/job/cdc.test.ts': 18,
  'test/job/config-change.test.ts': 17,
  'test/cli/scale-out.concurrent.test.ts': 17,
  'test/cli/kill9-shard.test.ts': 17,
  'test/storage/s3.faults.test.ts': 15,
  'test/job/run-job.list-count.test.ts': 12,
  'test/engine/load.property.test.ts': 11,
  'test/job/run-job.state-bounded.test.ts': 10,
};

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const estimate = new Map<TestSpecification, { failed: boolean; ms: number }>();
    for (const spec of files) {
      const rel = path.relative(root, spec.moduleId).split(path.sep).join('/');
      const cached = this.ctx.cache.getFileTestResults(`${spec.project.name}:${rel}`);
      const hint = SLOW[rel];
      // Unlisted and uncached: a byte of test is taken for a microsecond (a 20 kB file: 20 ms).
      const ms =
        cached?.duration ??
        (hint !== undefined
          ? hint * 1000
          : (await fsp.stat(spec.moduleId).then(
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
