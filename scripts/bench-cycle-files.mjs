/**
 * What a watcher's changing cycle spends on its three large files (the creators list, its gzip
 * variant, the manifest), each against the floor of writing the same bytes, measured in the same run
 * on the same filesystem:
 * - "user-space copy": the file read and written a MiB at a time, as any program without kernel
 *   copies must (what the build does for the unchanged runs it copies);
 * - "kernel copy": the file copied by the kernel (copyFileSync: copy_file_range on Linux), the most
 *   any kernel copy of unchanged ranges could bring, as it copies every byte without user space.
 * Both write into memory just freed (see `floors`).
 *
 * The watcher runs in this process (a StoreSession and the out dir's lock, as `watch` holds them)
 * on a tracked store (the change clock), so that each file's own time can be taken around the
 * library's calls: the list and the variant from OutputTransaction.streamedFile, the manifest's
 * writing from its digest's start to its close. Holding the lock, it also holds the list, its gzip
 * variant and the manifest each commit replaces until the next cycle writes their successors
 * (output/held-files.ts). The whole cycles are whole-process figures in bench-clock-cycles.mjs;
 * this is their breakdown. Per kind of cycle (ages only; 1% of the users changed), medians of
 * --runs cycles, after --warmup pairs of them untimed: a watcher runs for days, and V8 compiles the
 * functions called once a cycle (planning the variant's pieces, say) with its optimizing compiler
 * only after a few cycles. The warm-up cycles' own medians are printed too (--warmup 0 times the
 * first cycles, as before).
 *
 * The variant has a third floor: the pieces a cycle must deflate (those whose members changed) cost
 * deflating whatever the code, so it is the copy plus deflating their bytes, shared between the
 * cycle's threads (`deflateFloor`).
 *
 * Usage: node scripts/bench-cycle-files.mjs [--users 1000000] [--shard i/n] [--runs 3] [--warmup 3] [--dir /dev/shm/...]
 * (run `npm run build` first: it times the compiled library in build/).
 */
import { closeSync, copyFileSync, mkdirSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import { machine, median, seededStore, trackStore } from './bench-common.mjs';

const repo = new URL('..', import.meta.url).pathname;
const lib = (path) => import(join(repo, 'build', path));
const { build } = await lib('build.js');
const { StoreSession } = await lib('incremental/session.js');
const { parseShard } = await lib('core/slice.js');
const { OutputTransaction } = await lib('output/tree.js');
const { BufferedFileWriter } = await lib('output/file-writer.js');
const { CREATORS_FILE, CREATORS_GZIP_INDEX_FILE, MANIFEST_FILE, gzipVariantPath } = await lib('core/layout.js');
const { readIndexFile } = await lib('output/gzip-index.js');
const { deflatePiece } = await lib('output/gzip-member.js');
const { OutDirLock } = await lib('output/lock.js');

const args = process.argv.slice(2);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const USERS = Number(value('--users', '1000000'));
const SHARD = value('--shard', undefined);
const RUNS = Number(value('--runs', '3'));
const WARMUP = Number(value('--warmup', '3'));
const WORK = value('--dir', '/dev/shm/ps-bench-cycle-files');
const LIST = CREATORS_FILE;
/** The cycle's threads (its own and the deflate worker's): the variant's deflating is shared between them. */
const THREADS = 2;
const VARIANT = gzipVariantPath(CREATORS_FILE);

/**
 * The spans of the cycle being timed, per file: [start, end] on performance.now()'s clock, and for
 * the manifest (written on this thread alone) the CPU this thread spent in it, user and system.
 */
let spans = [];
const add = (file, start, cpu) => spans.push({ file, start, end: performance.now(), cpu });
/** V8's garbage collection pauses, to tell the files' own time from the collections that fell in it. */
let pauses = [];
new PerformanceObserver((list) => pauses.push(...list.getEntries())).observe({ entryTypes: ['gc'] });

const streamedFile = OutputTransaction.prototype.streamedFile;
OutputTransaction.prototype.streamedFile = function timed(path, ...rest) {
  const started = performance.now();
  try {
    return streamedFile.call(this, path, ...rest);
  } finally {
    add(path, started);
  }
};
/**
 * The manifest's writer, from its digest's start (right after its header: writeManifest alone asks
 * for one) to its close. Nothing is added to the writer's per-line calls, which are millions a cycle.
 */
const started = Symbol('started');
const cpuStarted = Symbol('cpuStarted');
// This thread's CPU (Node 23.9 on); before that, the whole process's.
const threadCpu = (since) => (process.threadCpuUsage ?? process.cpuUsage).call(process, since);
const digestFromHere = BufferedFileWriter.prototype.digestFromHere;
BufferedFileWriter.prototype.digestFromHere = function timedDigest(...args) {
  this[started] = performance.now();
  this[cpuStarted] = threadCpu();
  return digestFromHere.apply(this, args);
};
const close = BufferedFileWriter.prototype.close;
BufferedFileWriter.prototype.close = function timedClose() {
  const result = close.call(this);
  if (this[started] !== undefined) {
    const { user, system } = threadCpu(this[cpuStarted]);
    add('manifest', this[started], (user + system) / 1000);
  }
  this[started] = undefined;
  return result;
};

/**
 * The two floors of writing `file`'s bytes into a new file, in ms, each written into memory just
 * freed, as a watcher's list and variant are (it holds the ones it replaced until then:
 * output/held-files.ts): a first copy, untimed, frees the memory the timed ones take. On a VM whose
 * host takes free memory back, a copy into memory freed long before is several times slower.
 */
function floors(file) {
  const target = join(WORK, 'floor');
  rmSync(target, { force: true });
  copyThroughUserSpace(file, target);
  rmSync(target);
  let started = performance.now();
  const bytes = copyThroughUserSpace(file, target);
  const user = performance.now() - started;
  rmSync(target);
  started = performance.now();
  copyFileSync(file, target);
  const kernel = performance.now() - started;
  rmSync(target);
  return { bytes, user, kernel };
}

/** Reads `from` and writes it to `to` a MiB at a time, as a program without kernel copies must; returns the bytes. */
function copyThroughUserSpace(from, to) {
  const buffer = Buffer.allocUnsafe(1 << 20);
  const input = openSync(from, 'r');
  const output = openSync(to, 'w');
  let total = 0;
  try {
    for (let read; (read = readSync(input, buffer, 0, buffer.length, null)) > 0; total += read) writeSync(output, buffer, 0, read);
  } finally {
    closeSync(input);
    closeSync(output);
  }
  return total;
}

/** The variant's pieces as its index lists them after the last cycle: the next cycle's fresh ones are those not among them. */
let lastPieces;
let floorBytes = Buffer.alloc(0);

/**
 * The variant's third floor: its pieces the cycle deflated (a key the last variant's index does not
 * hold), their bytes of the list read out and deflated as one stream at the library's own level, on
 * one thread. One stream is the least any deflating of those bytes costs: no dictionary, no call per
 * piece. Returns the pieces, their bytes and the ms; undefined before the first cycle's index.
 */
function deflateFloor() {
  const pieces = readIndexFile(join(out, CREATORS_GZIP_INDEX_FILE));
  const last = lastPieces;
  lastPieces = pieces;
  if (last === undefined || pieces === undefined) return undefined;
  const list = openSync(join(out, LIST), 'r');
  try {
    const head = Buffer.alloc(4096);
    readSync(list, head, 0, head.length, 0);
    // The pieces tile the list's members, from the byte after the head's "[" on.
    const ranges = [];
    for (let piece = 0, at = head.indexOf('[') + 1; piece < pieces.count; at += pieces.length(piece++))
      if (last.find(pieces.key(piece)) === -1) ranges.push([at, pieces.length(piece)]);
    const total = ranges.reduce((sum, [, length]) => sum + length, 0);
    // One buffer for every cycle's: memory asked anew each time would be slower in the cycle after.
    if (floorBytes.length < total) floorBytes = Buffer.allocUnsafe(total);
    const bytes = floorBytes;
    let filled = 0;
    for (const [at, length] of ranges) filled += readSync(list, bytes, filled, length, at);
    const started = performance.now();
    deflatePiece(bytes.subarray(0, filled), undefined, true);
    return { pieces: ranges.length, bytes: filled, ms: performance.now() - started };
  } finally {
    closeSync(list);
  }
}

rmSync(WORK, { recursive: true, force: true });
mkdirSync(WORK, { recursive: true });
const db = join(WORK, 'profiles.db');
const out = join(WORK, 'dist');
copyFileSync(seededStore(join(repo, '.bench/stores'), USERS), db);
trackStore(repo, db);

const session = new StoreSession(db);
const lock = OutDirLock.acquire(out, { command: 'watch', waitMs: 0 });
const shard = SHARD === undefined ? undefined : parseShard(SHARD, 'shard');
const cycle = () => {
  spans = [];
  const started = performance.now();
  const result = build({
    db,
    out,
    baseUrl: 'http://localhost:3000',
    snapshotMs: Date.now(),
    session,
    threads: THREADS,
    ...(shard ? { shard } : {}),
    lock,
  });
  const seconds = (performance.now() - started) / 1000;
  return { seconds, spans, read: result.rowsRead, deflated: deflateFloor() };
};

/** Per file: its milliseconds in the cycle, and those of collection pauses that began within them. */
async function spentPerFile(cycle) {
  await new Promise((resolve) => setTimeout(resolve, 50)); // the observer's entries arrive after the synchronous cycle
  const spent = new Map();
  for (const { file, start, end, cpu } of cycle.spans) {
    const gc = pauses.filter((p) => p.startTime >= start && p.startTime < end).reduce((sum, p) => sum + p.duration, 0);
    const was = spent.get(file) ?? { ms: 0, gc: 0, cpu: 0 };
    spent.set(file, { ms: was.ms + end - start, gc: was.gc + gc, cpu: was.cpu + (cpu ?? 0) });
  }
  pauses = [];
  return { ...cycle, spent };
}
const touch = (round) => {
  const handle = new Database(db);
  handle.prepare('UPDATE users SET views = views + 1 WHERE (id + ?) % 100 = 0').run(round);
  handle.close();
};

console.log(
  `a cycle's large files against their floors: ${USERS.toLocaleString('en')} users${SHARD ? `, shard ${SHARD}` : ''}; ${machine()}`,
);
const first = cycle();
console.log(`first cycle: ${first.seconds.toFixed(2)} s`);
const warmup = { 'ages only': [], '1% changed': [] };
const kinds = { 'ages only': [], '1% changed': [] };
const floorRuns = [];
for (let round = 0; round < WARMUP + RUNS; round++) {
  const into = round < WARMUP ? warmup : kinds;
  await new Promise((resolve) => setTimeout(resolve, 1000)); // ages turn with the wall clock
  into['ages only'].push(await spentPerFile(cycle()));
  touch(round);
  into['1% changed'].push(await spentPerFile(cycle()));
  if (into === kinds)
    floorRuns.push({ list: floors(join(out, LIST)), variant: floors(join(out, VARIANT)), manifest: floors(join(out, MANIFEST_FILE)) });
}
session.close();
lock.release();

const ms = (n) => `${Math.round(n)} ms`;
const files = [
  ['list', LIST],
  ['variant', VARIANT],
  ['manifest', 'manifest'],
];
console.log('\n| cycle | file | MB | in the cycle | of which GC | user-space copy | ratio | kernel copy | ratio |');
console.log('|---|---|---|---|---|---|---|---|---|');
for (const [kind, cycles] of Object.entries(kinds)) {
  for (const [name, key] of files) {
    const took = median(cycles.map((c) => c.spent.get(key)?.ms ?? 0));
    const gc = median(cycles.map((c) => c.spent.get(key)?.gc ?? 0));
    const user = median(floorRuns.map((f) => f[name].user));
    const kernel = median(floorRuns.map((f) => f[name].kernel));
    const mb = floorRuns.at(-1)[name].bytes / 1e6;
    console.log(
      `| ${kind} | ${name} | ${mb.toFixed(1)} | ${ms(took)} | ${ms(gc)} | ${ms(user)} | ${(took / user).toFixed(2)}x | ${ms(kernel)} | ${(took / kernel).toFixed(2)}x |`,
    );
  }
  const whole = median(cycles.map((c) => c.seconds));
  console.log(`| ${kind} | (whole cycle, ${cycles.at(-1).read.toLocaleString('en')} rows read) | | ${whole.toFixed(2)} s | | | | | |`);
}
console.log(
  `\nthe variant against the copy and the deflating it cannot skip: the pieces the cycle deflated, their bytes deflated as one stream on one thread; the floor is the copy and that deflating shared evenly between the cycle's ${THREADS} threads (the copy alone when more):`,
);
console.log('\n| cycle | pieces deflated | their MB | one-stream deflate | floor | variant | ratio |');
console.log('|---|---|---|---|---|---|---|');
for (const [kind, cycles] of Object.entries(kinds)) {
  const deflated = cycles.map((c) => c.deflated).filter((d) => d !== undefined);
  if (deflated.length === 0) continue;
  const copy = median(floorRuns.map((f) => f.variant.user));
  const deflating = median(deflated.map((d) => d.ms));
  const floor = Math.max(copy, (copy + deflating) / THREADS);
  const took = median(cycles.map((c) => c.spent.get(VARIANT)?.ms ?? 0));
  const pieces = median(deflated.map((d) => d.pieces));
  const mb = median(deflated.map((d) => d.bytes)) / 1e6;
  console.log(
    `| ${kind} | ${pieces.toLocaleString('en')} | ${mb.toFixed(1)} | ${ms(deflating)} | ${ms(floor)} | ${ms(took)} | ${(took / floor).toFixed(2)}x |`,
  );
}
console.log('\neach timed cycle, in order:');
for (const [kind, cycles] of Object.entries(kinds))
  console.log(
    `- ${kind}: ${files.map(([name, key]) => `${name} ${cycles.map((c) => ms(c.spent.get(key)?.ms ?? 0)).join(', ')}`).join('; ')}`,
  );
// Less disturbed than its wall-clock time by what else the VM runs; the kernel counts it in ticks
// of a few ms, so only a median of many cycles says much.
console.log("\nthe CPU the manifest's thread spent writing it (user and system; each timed cycle, in order, then the median):");
for (const [kind, cycles] of Object.entries(kinds)) {
  const cpu = cycles.map((c) => c.spent.get('manifest')?.cpu ?? 0);
  console.log(`- ${kind}: ${cpu.map(ms).join(', ')}; median ${ms(median(cpu))}`);
}
if (WARMUP > 0) {
  console.log(`\nthe ${WARMUP} warm-up cycles of each kind before them (medians, against the same floors):`);
  for (const [kind, cycles] of Object.entries(warmup)) {
    const each = files.map(([name, key]) => {
      const took = median(cycles.map((c) => c.spent.get(key)?.ms ?? 0));
      return `${name} ${ms(took)} (${(took / median(floorRuns.map((f) => f[name].user))).toFixed(2)}x)`;
    });
    console.log(`- ${kind}: ${each.join(', ')}`);
  }
}
const userVsKernel = median(floorRuns.map((f) => f.list.user / f.list.kernel));
console.log(`\nlist: user-space copy / kernel copy = ${userVsKernel.toFixed(2)}x (medians of ${RUNS}), on the filesystem of ${WORK}`);
rmSync(WORK, { recursive: true, force: true });
