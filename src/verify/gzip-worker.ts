/**
 * Worker thread for the gzip variant's check (see ./gzip-check.ts): compares, posts the answer, then
 * raises the shared flag the audit thread waits on. Everything is inside the try, so the waiting
 * thread is always woken.
 */
import { workerData, type MessagePort } from 'node:worker_threads';

const { variant, list, port, flag } = workerData as { variant: string; list: string; port: MessagePort; flag: SharedArrayBuffer };
const signal = new Int32Array(flag);
try {
  const { compareDecoded } = await import('./gzip-compare.js');
  port.postMessage({ problem: await compareDecoded(variant, list) });
} catch (error) {
  port.postMessage({ error: error instanceof Error ? error.message : String(error) });
} finally {
  Atomics.store(signal, 0, 1);
  Atomics.notify(signal, 0);
}
