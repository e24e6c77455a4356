// Runs the CLI in this process and reports its peak RSS, for scripts/bench.mjs. Used instead of
// /usr/bin/time so the benchmark needs nothing beyond Node. The peak is VmHWM of /proc/self/status,
// not getrusage's maxRSS: Linux carries the parent's high-water mark across fork and exec into the
// latter, so a parent holding a tree in memory would inflate every child's figure.
import { readFileSync } from 'node:fs';
import { main } from '../build/cli/main.js';

const code = await main(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env: process.env });
const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
const usage = process.resourceUsage();
const maxRssKb = hwm ? Number(hwm[1]) : usage.maxRSS;
// CPU time of the whole process (start-up included), as the floor's (bench-floor.mjs) is counted.
process.stderr.write(
  `\nBENCH ${JSON.stringify({ code, maxRssKb, userMs: usage.userCPUTime / 1000, systemMs: usage.systemCPUTime / 1000 })}\n`,
);
process.exitCode = code;
