/**
 * The renewal thread (see keeper.ts): goes on renewing the leases the main thread took, each
 * every quarter of its TTL over its own connection to the bucket, and gives them up when asked; with
 * a stall guard, only while the main thread makes progress (heartbeat.ts).
 */
import { parentPort } from 'node:worker_threads';
import { Remote } from '../bucket/client.js';
import { Lease } from './lease.js';
import type { FromWorker, LeaseHandoff, ToWorker } from './keeper.js';
import { StallWatch } from './heartbeat.js';

const port = parentPort!;
/** Each kept lease, and the key of the client it renews through. */
const leases = new Map<number, { lease: Lease; remoteKey: string }>();
/** One client per bucket and endpoint, closed when no lease on it is kept. */
const remotes = new Map<string, { remote: Remote; users: number }>();

/** `watch --stall-timeout`: leases are renewed only while the main thread makes progress (heartbeat.ts). */
let stallWatch: StallWatch | undefined;

const post = (message: FromWorker) => port.postMessage(message);

port.on('message', (message: ToWorker) => {
  if (message.type === 'guard') stallWatch = new StallWatch(message.guard);
  else if (message.type === 'keep') keep(message.id, message.lease);
  else void release(message.id);
});

function keep(id: number, handoff: LeaseHandoff): void {
  const key = JSON.stringify(handoff.remote);
  const shared = remotes.get(key) ?? { remote: new Remote(handoff.remote, handoff.remote.region), users: 0 };
  shared.users++;
  remotes.set(key, shared);
  const lease = Lease.resume(shared.remote, handoff);
  leases.set(id, { lease, remoteKey: key });
  lease.keepRenewing(
    (error) => post({ type: 'lost', id, kind: error.kind, message: error.message, hint: error.hint }),
    () => stallWatch?.check(),
  );
}

async function release(id: number): Promise<void> {
  const kept = leases.get(id);
  leases.delete(id);
  if (kept === undefined) return post({ type: 'released', id, puts: 0 });
  await kept.lease.release();
  post({ type: 'released', id, puts: kept.lease.writes });
  const shared = remotes.get(kept.remoteKey);
  if (shared !== undefined && --shared.users === 0) {
    remotes.delete(kept.remoteKey);
    shared.remote.close();
  }
}

post({ type: 'ready' });
