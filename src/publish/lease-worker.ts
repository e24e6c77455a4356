/**
 * The renewal thread (see lease-keeper.ts): goes on renewing the leases the main thread took, each
 * every quarter of its TTL over its own connection to the bucket, and gives them up when asked.
 */
import { parentPort } from 'node:worker_threads';
import { Remote } from './client.js';
import { Lease } from './lease.js';
import type { FromWorker, LeaseHandoff, ToWorker } from './lease-keeper.js';

const port = parentPort!;
const leases = new Map<number, Lease>();
/** One client per bucket and endpoint, closed when no lease on it is kept. */
const remotes = new Map<string, { remote: Remote; users: number }>();

const post = (message: FromWorker) => port.postMessage(message);

port.on('message', (message: ToWorker) => {
  if (message.type === 'keep') keep(message.id, message.lease);
  else void release(message.id);
});

function keep(id: number, handoff: LeaseHandoff): void {
  const key = JSON.stringify(handoff.remote);
  const shared = remotes.get(key) ?? { remote: new Remote(handoff.remote, handoff.remote.region), users: 0 };
  shared.users++;
  remotes.set(key, shared);
  const lease = Lease.resume(shared.remote, handoff);
  leases.set(id, lease);
  lease.onRenewed = (etag, body) => post({ type: 'renewed', id, etag, body });
  lease.keepRenewing((error) => post({ type: 'lost', id, kind: error.kind, message: error.message, hint: error.hint }));
}

async function release(id: number): Promise<void> {
  const lease = leases.get(id);
  leases.delete(id);
  if (lease !== undefined) {
    await lease.release();
    post({ type: 'released', id, puts: lease.writes });
    const key = JSON.stringify(lease.remoteOptions);
    const shared = remotes.get(key);
    if (shared !== undefined && --shared.users === 0) {
      remotes.delete(key);
      shared.remote.close();
    }
  } else post({ type: 'released', id, puts: 0 });
}

post({ type: 'ready' });
