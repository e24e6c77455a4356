#!/usr/bin/env node
/**
 * The longer fuzz run (issue 7.1): the properties of test/fuzz with many more runs and a fresh seed
 * (printed, so a failure can be replayed with FUZZ_SEED=<seed>).
 *
 *   npm run fuzz                       # 1000 store pairs, 30 CLI runs, a random seed
 *   FUZZ_RUNS=5000 FUZZ_SEED=42 npm run fuzz
 */
import { spawnSync } from 'node:child_process';

const env = {
  ...process.env,
  FUZZ_RUNS: process.env.FUZZ_RUNS ?? '1000',
  FUZZ_CLI_RUNS: process.env.FUZZ_CLI_RUNS ?? '30',
  FUZZ_SEED: process.env.FUZZ_SEED ?? String(Math.floor(Math.random() * 2 ** 31)),
};
console.log(`fuzz: FUZZ_RUNS=${env.FUZZ_RUNS} FUZZ_CLI_RUNS=${env.FUZZ_CLI_RUNS} FUZZ_SEED=${env.FUZZ_SEED}`);
const vitest = spawnSync('npx', ['vitest', 'run', 'test/fuzz'], { stdio: 'inherit', env });
console.log(`fuzz: ${vitest.status === 0 ? 'passed' : 'FAILED'} (replay with FUZZ_SEED=${env.FUZZ_SEED})`);
process.exit(vitest.status ?? 1);
