/**
 * Worker thread for the profile pass (see ./parallel.ts): audits its share of the names and posts
 * the result, then raises the shared flag the audit thread waits on. Everything, loading included,
 * is inside the try, so the waiting thread is always woken.
 */
import { workerData, type MessagePort } from 'node:worker_threads';

const { out, names, types, port, flag } = workerData as {
  out: string;
  names: string[];
  types: Uint8Array;
  port: MessagePort;
  flag: SharedArrayBuffer;
};
const signal = new Int32Array(flag);
try {
  const { auditProfiles } = await import('./profiles.js');
  port.postMessage({ result: auditProfiles(out, names, types) });
} catch (error) {
  port.postMessage({ error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
} finally {
  Atomics.store(signal, 0, 1);
  Atomics.notify(signal, 0);
}
