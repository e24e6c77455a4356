import { defineConfig } from 'vitest/config';
import { LongestFirst } from './test/sequencer.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // CLI tests spawn real processes; two cores, so keep the pool small.
    maxWorkers: 2,
    // Longest files first (test/durations.json), so that both workers finish together.
    sequence: { sequencer: LongestFirst },
    // TEST_CPU_REPORT=<file>: each file's CPU, its own and its children's (docs/testing.md); nothing loaded otherwise.
    setupFiles: process.env.TEST_CPU_REPORT ? ['test/cpu-usage.ts'] : [],
  },
});
