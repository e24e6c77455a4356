#!/usr/bin/env node
/**
 * The floor of a cold build, for scripts/bench.mjs: a process that writes the same bytes in the same
 * layout as the build (one file per profile, a hard link for each other alias, the list, the error
 * documents, the contract), from one blob, and does nothing else. Its wall and CPU time are what
 * writing that tree costs on this machine, measured the same way as the build (a whole process).
 *
 * Usage: node scripts/bench-floor.mjs <layout> <out> [--async]
 *   <layout>.blob   every distinct file's bytes, one after the other
 *   <layout>.index  a line per path: "w <length> <path>" (the next bytes of the blob) or
 *                   "l <path> <target>" (a hard link to a path written before)
 *   --async         writes and links through libuv's thread pool (fs.promises, 64 in flight)
 * Prints its resource usage (the same figures as bench-child.mjs) on stderr as "BENCH {...}".
 */
import { linkSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { link, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

const [layout, out, mode] = process.argv.slice(2);
if (!layout || !out) throw new Error('usage: bench-floor.mjs <layout> <out> [--async]');
const blob = readFileSync(`${layout}.blob`);
const lines = readFileSync(`${layout}.index`, 'utf8').split('\n').filter(Boolean);

/** The operations in order, each with its folder made first (once per folder). */
const made = new Set();
let offset = 0;
const operations = lines.map((line) => {
  const [kind, a, b] = line.split(' ');
  if (kind === 'w') {
    const bytes = blob.subarray(offset, offset + Number(a));
    offset += bytes.length;
    return { kind, path: `${out}/${b}`, bytes };
  }
  return { kind, path: `${out}/${a}`, target: `${out}/${b}` };
});
if (offset !== blob.length) throw new Error(`the index describes ${offset} bytes of a ${blob.length}-byte blob`);

function folderOf(path) {
  const folder = dirname(path);
  if (!made.has(folder)) {
    mkdirSync(folder, { recursive: true });
    made.add(folder);
  }
}

/** Runs `work` over `items` with `lanes` of them in flight at once. */
async function inLanes(items, work, lanes = 64) {
  let next = 0;
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (next < items.length) await work(items[next++]);
    }),
  );
}

if (mode === '--async') {
  // Links after every write: a link's target may still be in flight in another lane.
  await inLanes(
    operations.filter((op) => op.kind === 'w'),
    (op) => {
      folderOf(op.path);
      return writeFile(op.path, op.bytes);
    },
  );
  await inLanes(
    operations.filter((op) => op.kind === 'l'),
    (op) => {
      folderOf(op.path);
      return link(op.target, op.path);
    },
  );
} else {
  for (const op of operations) {
    folderOf(op.path);
    if (op.kind === 'w') writeFileSync(op.path, op.bytes);
    else linkSync(op.target, op.path);
  }
}

const usage = process.resourceUsage();
const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
process.stderr.write(
  `\nBENCH ${JSON.stringify({ code: 0, maxRssKb: hwm ? Number(hwm[1]) : usage.maxRSS, userMs: usage.userCPUTime / 1000, systemMs: usage.systemCPUTime / 1000 })}\n`,
);
