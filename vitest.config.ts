import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // DuckDB and s3rver are real; two cores, so keep parallelism modest.
    pool: 'forks',
    maxWorkers: 2,
    // tidemark supports Node 20; silence the AWS SDK's notice about newer Node versions.
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
  },
});
