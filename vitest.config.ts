import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // 2-core machines: a few files at a time, each with its own database.
    maxWorkers: 3,
    pool: 'forks',
    reporters: ['default'],
  },
});
