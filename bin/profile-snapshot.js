#!/usr/bin/env node
// Thin launcher: the CLI lives in src/cli (compiled to build/ by `npm run compile`).
import { main } from '../build/cli/main.js';

process.exitCode = await main(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env: process.env });
