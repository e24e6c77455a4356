#!/usr/bin/env node
// Thin launcher: the CLI lives in src/cli (compiled to build/ by `npm run compile`). The one check
// made before it loads: an older Node would fail inside a dependency (commander's syntax, or a crash
// in better-sqlite3's native code) before the CLI could say what is wrong. Exit 16, as for a native
// module built for another Node.
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 12)) {
  process.stderr.write(
    `profile-snapshot: this is Node.js ${process.versions.node}, and profile-snapshot needs Node.js 22.12 or later ` +
      '(22, 24 and 26 are supported). Fix: install Node.js 26, 24 or 22 (.node-version names 26) and run it with that.\n',
  );
  process.exitCode = 16;
} else {
  const { main } = await import('../build/cli/main.js');
  process.exitCode = await main(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env: process.env });
}
