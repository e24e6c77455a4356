#!/usr/bin/env node
// Thin launcher: the CLI lives in src/cli (compiled to build/ by `npm run compile`). The one check
// made before it loads: an older Node than package.json's `engines` allows would fail inside a
// dependency (commander's syntax, or a crash in better-sqlite3's native code) before the CLI could
// say what is wrong. Exit 16, as for a native module built for another Node.
import { createRequire } from 'node:module';

// The CLI reads its own version from the same file: one read, kept in require's cache.
const { engines } = createRequire(import.meta.url)('../package.json');
const [needMajor, needMinor] = /^>=\s*(\d+)\.(\d+)/.exec(engines.node).slice(1).map(Number);
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < needMajor || (major === needMajor && minor < needMinor)) {
  process.stderr.write(
    `profile-snapshot: this is Node.js ${process.versions.node}, and profile-snapshot needs Node.js ${needMajor}.${needMinor} or later ` +
      '(22, 24 and 26 are supported). Fix: install Node.js 26, 24 or 22 and run it with that.\n',
  );
  process.exitCode = 16;
} else {
  const { main } = await import('../build/cli/main.js');
  process.exitCode = await main(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env: process.env });
}
