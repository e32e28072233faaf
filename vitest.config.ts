import { defineConfig } from 'vitest/config';
import { scaled } from './test/helpers/machine.js';
import LongestFirst from './test/helpers/sequencer.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Compiles the CLI once for the tests that start it as a process (test/cli/process.ts).
    globalSetup: ['test/helpers/cli-bundle.setup.ts'],
    // A default for tests and hooks of a few steps; tests that loop set their own timeout from
    // their step count (test/helpers/machine.ts). Both scale with how busy the machine is.
    testTimeout: scaled(60_000),
    hookTimeout: scaled(60_000),
    // DuckDB and s3rver are real. Three workers on two cores: a third of the suite's time is spent
    // waiting (timeouts, backoff, child processes, s3rver), which a third worker fills. Measured on
    // the 2-core machine: 457 s with 2 workers, 363 s with 3, 419 s with 4 (the same CPU time with
    // 3, a quarter more with 4).
    pool: 'forks',
    maxWorkers: 3,
    // Files share a worker and its module cache: DuckDB, the AWS SDK and src/ load once per
    // worker, not once per file (about a second per file). Each file still starts from the
    // worker's own environment, cwd and real timers (test/helpers/per-file.setup.ts).
    isolate: false,
    setupFiles: ['test/helpers/per-file.setup.ts'],
    // The longest files first, so both workers finish together, on a fresh clone too (no cached durations).
    sequence: { sequencer: LongestFirst },
    // tidemark supports Node 20; silence the AWS SDK's notice about newer Node versions.
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
  },
});
