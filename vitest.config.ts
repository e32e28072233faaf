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
    // DuckDB and s3rver are real; two cores, so keep parallelism modest.
    pool: 'forks',
    maxWorkers: 2,
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
