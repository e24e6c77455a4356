#!/usr/bin/env node
/**
 * The longer fuzz run (issues 7.1 and 60): the properties of test/fuzz with many more runs and a
 * fresh seed (printed, so a failure can be replayed with FUZZ_SEED=<seed>), and the quick path's
 * differential fuzz (test/fuzz/http.test.ts) with many more request streams (FUZZ_HTTP_CASES).
 *
 *   npm run fuzz                       # 1000 store pairs, 30 CLI runs, 20,000 request streams, a random seed
 *   FUZZ_RUNS=5000 FUZZ_HTTP_CASES=50000 FUZZ_SEED=42 npm run fuzz
 */
import { spawnSync } from 'node:child_process';

const env = {
  ...process.env,
  FUZZ_RUNS: process.env.FUZZ_RUNS ?? '1000',
  FUZZ_CLI_RUNS: process.env.FUZZ_CLI_RUNS ?? '30',
  FUZZ_HTTP_CASES: process.env.FUZZ_HTTP_CASES ?? '20000',
  FUZZ_SEED: process.env.FUZZ_SEED ?? String(Math.floor(Math.random() * 2 ** 31)),
};
console.log(
  `fuzz: FUZZ_RUNS=${env.FUZZ_RUNS} FUZZ_CLI_RUNS=${env.FUZZ_CLI_RUNS} FUZZ_HTTP_CASES=${env.FUZZ_HTTP_CASES} FUZZ_SEED=${env.FUZZ_SEED}`,
);
const vitest = spawnSync('npx', ['vitest', 'run', 'test/fuzz'], { stdio: 'inherit', env });
console.log(`fuzz: ${vitest.status === 0 ? 'passed' : 'FAILED'} (replay with FUZZ_SEED=${env.FUZZ_SEED})`);
process.exit(vitest.status ?? 1);
