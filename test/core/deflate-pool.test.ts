/**
 * The gzip variant's pieces deflated on a worker thread beside this one (src/output/deflate-pool.ts):
 * the same bytes as on one thread, whichever thread deflates each piece, and the same when the
 * worker cannot start, dies halfway, or is handed its batch while the file is still being written.
 * The worker module exists only compiled, so these tests use build/'s, as the CLI does; the last one
 * builds a store through the CLI on one thread and on two.
 */
import { closeSync, openSync, readFileSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { pieceDeflater, SHARE_DEFLATE_FROM, WorkerAhead, type DeflateOptions, type PieceRanges } from '../../src/output/deflate-pool.js';
import { WINDOW_BYTES } from '../../src/output/gzip-member.js';
import { PositionedReader } from '../../src/output/positioned-reader.js';
import { runCli } from '../helpers/process.js';
import { eachTestWorkspace, execSql, TestStore, type Workspace } from '../helpers/store.js';

const COMPILED_WORKER = new URL('../../build/output/deflate-worker.js', import.meta.url);
const PIECES = SHARE_DEFLATE_FROM * 2;

let dir: Workspace['dir'];
eachTestWorkspace((workspace) => ({ dir } = workspace));

/** A list-like file of PIECES pieces of a few kilobytes, and their ranges, each with a dictionary of the bytes before it. */
function pieceFile(): { file: string; ranges: PieceRanges } {
  const members = Array.from({ length: PIECES * 12 }, (_, i) =>
    JSON.stringify({ username: `user${i}`, bio: `bio ${i} ${'ab'.repeat(i % 97)}`, views: (i * 7919) % 10007 }),
  );
  const text = `{"data":[${members.join(',')}]}`;
  const file = join(dir.path, 'list');
  writeFileSync(file, text);
  const ranges = new Float64Array(3 * PIECES);
  const size = Buffer.byteLength(text) - 1;
  for (let p = 0; p < PIECES; p++) {
    const start = Math.floor((size * p) / PIECES);
    ranges.set([Math.max(0, start - WINDOW_BYTES), start, Math.floor((size * (p + 1)) / PIECES)], 3 * p);
  }
  return { file, ranges };
}

/** Holds this thread back for `ms`: a worker starts and takes pieces meanwhile, however slowly it starts. */
const pause = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/** Every piece deflated with `options`, and how many the worker did; `pauseMs` before taking the first. */
function deflateAll(file: string, ranges: PieceRanges, options: DeflateOptions, pauseMs = 0) {
  const reader = new PositionedReader(file, false);
  try {
    const deflater = pieceDeflater(reader, file, ranges, options);
    if (pauseMs > 0) pause(pauseMs);
    const pieces = Array.from({ length: ranges.length / 3 }, () => {
      const { compressed, crc, length } = deflater.next();
      return { compressed: Buffer.from(compressed).toString('base64'), crc, length };
    });
    return { pieces, byWorker: deflater.close() };
  } finally {
    reader.close();
  }
}

describe('deflating pieces on a worker', () => {
  it('gives every piece the bytes and CRC it has on one thread', () => {
    const { file, ranges } = pieceFile();
    const one = deflateAll(file, ranges, { threads: 1 });
    expect(one.byWorker).toBe(0);
    const two = deflateAll(file, ranges, { threads: 2, workerUrl: COMPILED_WORKER }, 1000);
    expect(two.byWorker).toBeGreaterThan(0);
    expect(two.byWorker).toBeLessThan(PIECES);
    expect(two.pieces).toEqual(one.pieces);
  });

  it('shares a batch too small to start a worker for with one started ahead, and ends one no batch took', async () => {
    const { file, ranges } = pieceFile();
    const few = ranges.subarray(0, 3 * 40);
    const one = deflateAll(file, few, { threads: 1 });
    const options: DeflateOptions = { threads: 2, workerUrl: COMPILED_WORKER };
    expect(deflateAll(file, few, options, 1000).byWorker).toBe(0);
    // A variant too small for a batch ever to start a worker gets none ahead either.
    expect(WorkerAhead.start(options, SHARE_DEFLATE_FROM - 1)).toBeUndefined();
    const ahead = WorkerAhead.start(options, SHARE_DEFLATE_FROM)!;
    pause(1000);
    const two = deflateAll(file, few, { ...options, ahead }, 200);
    expect(two.byWorker).toBeGreaterThan(0);
    expect(two.pieces).toEqual(one.pieces);
    await expect(ahead.close()).resolves.toBe(false); // the batch took it, and ended it

    // With nothing to deflate, the worker is left to its owner, which ends it.
    const unused = WorkerAhead.start(options, SHARE_DEFLATE_FROM)!;
    expect(deflateAll(file, new Float64Array(0), { ...options, ahead: unused }).pieces).toEqual([]);
    await expect(unused.close()).resolves.toBe(true);
  });

  it('deflates a batch begun while its file is written only as far as the file holds', () => {
    const { file, ranges } = pieceFile();
    const one = deflateAll(file, ranges, { threads: 1 });
    const whole = readFileSync(file);
    const half = ranges[3 * (PIECES / 2) - 1]!; // where the first half of the pieces ends
    // The file halfway through its writing, at its full size: a worker reading past what the writer
    // says is there would deflate zeros.
    writeFileSync(file, Buffer.concat([whole.subarray(0, half), Buffer.alloc(whole.length - half)]));
    const reader = new PositionedReader(file, false);
    const deflater = pieceDeflater(reader, file, ranges, { threads: 2, workerUrl: COMPILED_WORKER }, true);
    try {
      deflater.fileHolds(half);
      expect(() => deflater.next()).toThrow(/before its file was whole/);
      pause(1500); // the worker deflates the first half meanwhile, and waits for the rest
      const out = openSync(file, 'r+');
      writeSync(out, whole, half, whole.length - half, half);
      closeSync(out);
      deflater.fileHolds(Infinity);
      const pieces = one.pieces.map(() => {
        const { compressed, crc, length } = deflater.next();
        return { compressed: Buffer.from(compressed).toString('base64'), crc, length };
      });
      expect(pieces).toEqual(one.pieces);
      expect(deflater.close()).toBeGreaterThanOrEqual(PIECES / 2);
    } finally {
      deflater.close(); // again, when an expectation failed first: it ends the worker
      reader.close();
    }
  });

  it('deflates everything here when the worker cannot start', () => {
    const { file, ranges } = pieceFile();
    const one = deflateAll(file, ranges, { threads: 1 });
    const throws = new URL('./fixtures/deflate-worker-throws.mjs', import.meta.url);
    const two = deflateAll(file, ranges, { threads: 2, workerUrl: throws }, 500);
    expect(two.byWorker).toBe(0);
    expect(two.pieces).toEqual(one.pieces);
  });

  it('gives up on a worker that stops answering, and deflates the rest here', () => {
    const { file, ranges } = pieceFile();
    const one = deflateAll(file, ranges, { threads: 1 });
    const dies = new URL('./fixtures/deflate-worker-dies.mjs', import.meta.url);
    const started = Date.now();
    const two = deflateAll(file, ranges, { threads: 2, workerUrl: dies, patienceMs: 300 }, 1000);
    expect(two.byWorker).toBe(8); // what it answered before it died
    expect(two.pieces).toEqual(one.pieces);
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});

describe('the gzip variant built on two threads', () => {
  const USERS = 6000;
  const WORDS = ['creator', 'art', 'music', 'daily', 'streams', 'ünïcödé', 'podcast', 'travel', 'code', '✨', 'games', 'photos'];
  /** A bio of a few kilobytes, words picked by the id: enough deflating that the worker gets its share. */
  const bio = (id: number) => Array.from({ length: 300 }, (_, i) => WORDS[(id * 31 + i * i * 7) % WORDS.length]).join(' ');

  function build(db: string, out: string, threads: number): void {
    const result = runCli(['build', '--db', db, '--out', out, '--threads', String(threads)], {
      env: { SOURCE_DATE_EPOCH: '1767225600' },
      timeoutMs: 120_000,
    });
    expect(result.code, result.stderr).toBe(0);
  }

  const variant = (out: string) => readFileSync(join(out, 'service-api/v1/.creators.gz'));

  it('is the bytes of the one-thread variant and decodes to the list, cold and after a change', () => {
    const db = join(dir.path, 'profiles.db');
    const store = new TestStore(db);
    store.users(USERS, (id) => ({ user: { username: `u${id}x`, bio: bio(id), views: id } }));
    store.close();
    const one = join(dir.path, 'one');
    const two = join(dir.path, 'two');
    for (const round of [0, 1]) {
      // A tenth of the users changed: most pieces are deflated again, among ones copied from the last variant.
      if (round > 0) execSql(db, 'UPDATE users SET views = views + 1 WHERE id % 10 = 3');
      build(db, one, 1);
      build(db, two, 2);
      expect(variant(two).equals(variant(one))).toBe(true);
      expect(gunzipSync(variant(two)).equals(readFileSync(join(two, 'service-api/v1/creators')))).toBe(true);
    }
  });
});
