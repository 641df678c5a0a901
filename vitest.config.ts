import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Integration tests start real redis-server processes and measure time; running files
    // one after another keeps the two cores of a CI machine from skewing the timings.
    fileParallelism: false,
    testTimeout: 20_000,
    hookTimeout: 20_000,
    globalSetup: ['test/global-setup.ts'],
  },
});
