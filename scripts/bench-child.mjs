// Runs the CLI in this process and reports its peak RSS, for scripts/bench.mjs. Used instead of
// /usr/bin/time so the benchmark needs nothing beyond Node.
import { main } from '../build/cli/main.js';

const code = await main(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env: process.env });
process.stderr.write(`\nBENCH ${JSON.stringify({ code, maxRssKb: process.resourceUsage().maxRSS })}\n`);
process.exitCode = code;
