/**
 * The publish thread (see publish-thread.ts): publishes each generation the watcher pinned, one at a
 * time as asked, posting its progress at most every PROGRESS_EVERY_MS (and at each new phase), then
 * its report or its failure.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { messageWithCause, SnapshotError } from '../core/errors.js';
import { collectNow, followMemoryUpkeep, type MemoryUpkeep } from '../core/memory.js';
import { TreePin } from '../output/pin.js';
import { Sightings } from '../publish/lease/view.js';
import { publish } from '../publish/publish.js';
import type { PublishProgress } from '../publish/report.js';
import type { FromPublishThread, PublishRequest, ThreadFailure, ToPublishThread } from './publish-thread.js';

/** The watcher saves its status every 2 s: more often than this would only cost messages. */
const PROGRESS_EVERY_MS = 250;

const { memoryUpkeep } = workerData as { memoryUpkeep: MemoryUpkeep | undefined };
followMemoryUpkeep(memoryUpkeep);

const port = parentPort!;
const post = (message: FromPublishThread) => port.postMessage(message);

port.on('message', ({ id, request }: ToPublishThread) => void run(id, request));

async function run(id: number, request: PublishRequest): Promise<void> {
  const lockSightings = new Sightings();
  if (request.lockSightings !== undefined) lockSightings.adopt(request.lockSightings);
  try {
    const generation = TreePin.attach(request.options.out);
    const report = await publish({ ...request.options, generation, lockSightings, onProgress: throttled(id) });
    post({ type: 'done', id, report, lockSightings: lockSightings.toJSON() });
  } catch (error) {
    post({ type: 'failed', id, failure: failureOf(error), lockSightings: lockSightings.toJSON() });
  }
  // The publish is garbage now, and the thread idle until the next one.
  collectNow('published');
}

function throttled(id: number): (progress: PublishProgress) => void {
  let postedAt = 0;
  let postedPhase: PublishProgress['phase'] | undefined;
  return (progress) => {
    const now = Date.now();
    // A phase's last event always goes: the status must not stop short of done.
    const last = progress.done === progress.total;
    if (progress.phase === postedPhase && now - postedAt < PROGRESS_EVERY_MS && !last) return;
    postedAt = now;
    postedPhase = progress.phase;
    post({ type: 'progress', id, progress: { ...progress } });
  };
}

function failureOf(error: unknown): ThreadFailure {
  if (error instanceof SnapshotError) return { typed: true, kind: error.kind, message: messageWithCause(error), hint: error.hint };
  if (error instanceof Error) return { typed: false, message: error.message, stack: error.stack };
  return { typed: false, message: String(error), stack: undefined };
}
