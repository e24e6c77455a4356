/**
 * Runs the profile pass on two threads when the tree is large: a worker audits one share of the
 * names while this thread audits the other. The audit stays synchronous: this thread waits on a
 * shared flag and takes the worker's result with receiveMessageOnPort. Without the compiled worker
 * (running from TypeScript sources, as the tests do), on one CPU, or when the worker cannot start
 * or fails, everything is done here: the result is the same either way.
 */
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { MessageChannel, receiveMessageOnPort, Worker } from 'node:worker_threads';
import { PROFILE_DIRS } from '../core/layout.js';
import { auditProfiles, type ProfilePass } from './profiles.js';

const WORKER_URL = new URL('./profiles-worker.js', import.meta.url);
/** Below this many names a worker's start-up (loading ajv, compiling the schemas) costs more than it saves. */
export const PARALLEL_FROM = 4000;
/** The worker's result is awaited this long; then its share is done here (a stuck worker never hangs verify). */
const WORKER_PATIENCE_MS = 10 * 60_000;

export function profilePass(out: string, names: string[], types: Uint8Array, options: { parallel?: boolean } = {}): ProfilePass {
  const dirs = PROFILE_DIRS.length; // `types` holds one entry per name and alias folder
  const parallel =
    (options.parallel ?? true) &&
    names.length >= PARALLEL_FROM &&
    availableParallelism() > 1 &&
    WORKER_URL.protocol === 'file:' &&
    existsSync(fileURLToPath(WORKER_URL));
  if (!parallel) return auditProfiles(out, names, types);

  // The worker gets the first share: it starts later (loading), so it gets a little less.
  const split = Math.floor(names.length * 0.45);
  const theirs = names.slice(0, split);
  const flag = new SharedArrayBuffer(4);
  const signal = new Int32Array(flag);
  const { port1, port2 } = new MessageChannel();
  let worker: Worker | undefined;
  try {
    worker = new Worker(WORKER_URL, {
      workerData: { out, names: theirs, types: types.slice(0, split * dirs), port: port2, flag },
      transferList: [port2],
    });
    worker.unref();
  } catch {
    return auditProfiles(out, names, types);
  }
  const mine = auditProfiles(out, names.slice(split), types.slice(split * dirs));
  const deadline = Date.now() + WORKER_PATIENCE_MS;
  while (Atomics.load(signal, 0) === 0 && Date.now() < deadline) Atomics.wait(signal, 0, 0, 1000);
  const message =
    Atomics.load(signal, 0) === 1 ? (receiveMessageOnPort(port1)?.message as { result?: ProfilePass } | undefined) : undefined;
  void worker.terminate();
  port1.close();
  const their = message?.result ?? { ...auditProfiles(out, theirs, types.slice(0, split * dirs)), threads: 0 };
  return {
    defects: [...their.defects, ...mine.defects],
    names: [...their.names, ...mine.names],
    keys: [...their.keys, ...mine.keys],
    files: their.files + mine.files,
    threads: their.threads + mine.threads,
  };
}
