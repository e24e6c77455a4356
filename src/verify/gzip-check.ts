/**
 * The audit's check of the creators list's gzip variant: it must decode to exactly the list's bytes,
 * or a client that accepts gzip would read another list than one that does not.
 *
 * Decoding is streamed (./gzip-compare.ts), which Node's zlib only does asynchronously, so it runs
 * on a worker thread, started before the profile pass and awaited after it: the audit stays
 * synchronous and the decoding uses the second core. Without the compiled worker (running from
 * TypeScript sources, as the unit tests do) the variant is decoded here at once.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MessageChannel, receiveMessageOnPort, Worker } from 'node:worker_threads';
import { gunzipSync } from 'node:zlib';
import { describeCause } from '../core/errors.js';
import { CREATORS_FILE, CREATORS_GZIP_FILE } from '../core/layout.js';
import type { Findings } from './defects.js';
import { fileExists } from './documents-check.js';

const WORKER_URL = new URL('./gzip-worker.js', import.meta.url);
/** The worker's answer is awaited this long (a stuck worker never hangs verify). */
const WORKER_PATIENCE_MS = 10 * 60_000;

/** A check under way: `finish` waits for it and records what it found. */
export interface GzipCheck {
  finish(findings: Findings): void;
}

/** Starts checking the variant against the list (when there is a list: its absence is reported on its own). */
export function startGzipCheck(out: string): GzipCheck {
  const list = join(out, CREATORS_FILE);
  const variant = join(out, CREATORS_GZIP_FILE);
  if (!fileExists(list)) return { finish: () => undefined };
  if (!fileExists(variant)) {
    return {
      finish: (findings) =>
        findings.defect(
          'creators-gzip',
          CREATORS_GZIP_FILE,
          'the gzip variant of the creators list is missing: hosts would send the list uncompressed',
        ),
    };
  }
  const answer = onWorker(variant, list) ?? (() => decodeHere(variant, list));
  return {
    finish(findings) {
      const problem = answer();
      if (problem !== undefined)
        findings.defect('creators-gzip', CREATORS_GZIP_FILE, `the gzip variant of the creators list is stale or damaged: ${problem}`);
    },
  };
}

function decodeHere(variant: string, list: string): string | undefined {
  try {
    return gunzipSync(readFileSync(variant)).equals(readFileSync(list)) ? undefined : "its bytes differ from the list's";
  } catch (cause) {
    return `it does not decode (${describeCause(cause)})`;
  }
}

/** The comparison started on a worker; the function waits for its answer. Undefined when no worker can run it. */
function onWorker(variant: string, list: string): (() => string | undefined) | undefined {
  if (WORKER_URL.protocol !== 'file:' || !existsSync(fileURLToPath(WORKER_URL))) return undefined;
  const flag = new SharedArrayBuffer(4);
  const signal = new Int32Array(flag);
  const { port1, port2 } = new MessageChannel();
  let worker: Worker;
  try {
    worker = new Worker(WORKER_URL, { workerData: { variant, list, port: port2, flag }, transferList: [port2] });
    worker.unref();
  } catch {
    return undefined;
  }
  return () => {
    const deadline = Date.now() + WORKER_PATIENCE_MS;
    while (Atomics.load(signal, 0) === 0 && Date.now() < deadline) Atomics.wait(signal, 0, 0, 1000);
    const message = receiveMessageOnPort(port1)?.message as { problem?: string; error?: string } | undefined;
    void worker.terminate();
    port1.close();
    if (message === undefined || message.error !== undefined) return decodeHere(variant, list);
    return message.problem;
  };
}
