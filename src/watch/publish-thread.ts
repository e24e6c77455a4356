/**
 * The watcher's publishes run in a thread of their own (publish-worker.ts). A cycle's build holds
 * the main thread for seconds; a publish sharing that thread sent nothing meanwhile, so a first
 * publish spanning many cycles lost seconds in each of them. In its own thread the publish keeps
 * sending while the next build runs on another core.
 *
 * One thread serves the process, started before the first publish (it loads the AWS SDK while the
 * first cycle builds) and kept: a publish then costs no start-up. It reads the generation the main
 * thread pinned (by its out dir: the pin is a folder), takes the publish lock itself, and posts its
 * progress, then its report or its failure. When its compiled file is absent (the library run from
 * its TypeScript sources) or it cannot start, the publish runs on the main thread, as before.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { isMainThread, Worker } from 'node:worker_threads';
import { SnapshotError, type SnapshotErrorKind } from '../core/errors.js';
import { memoryUpkeep } from '../core/memory.js';
import type { TreeReader } from '../output/pin.js';
import type { SeenVersion, Sightings } from '../publish/lease/view.js';
import type { PublishOptions, PublishProgress, PublishReport } from '../publish/report.js';

const WORKER_URL = new URL('./publish-worker.js', import.meta.url);

/** What the thread is given: the publish's options, all plain data (the pin is found by the out dir). */
export interface PublishRequest {
  options: Omit<PublishOptions, 'onProgress' | 'generation' | 'lockSightings'>;
  lockSightings: SeenVersion | undefined;
}

/** A failure, as it crosses threads: a typed one keeps its kind and hint, anything else stays a bug. */
export type ThreadFailure =
  | { typed: true; kind: SnapshotErrorKind; message: string; hint: string | undefined }
  | { typed: false; message: string; stack: string | undefined };

export type ToPublishThread = { id: number; request: PublishRequest };

export type FromPublishThread =
  | { type: 'progress'; id: number; progress: PublishProgress }
  | { type: 'done'; id: number; report: PublishReport; lockSightings: SeenVersion }
  | { type: 'failed'; id: number; failure: ThreadFailure; lockSightings: SeenVersion };

/**
 * Publishes the pinned `generation` in the publish thread, or on this thread when it cannot run.
 * `lockSightings` goes on with what the thread saw of the lock.
 */
export async function publishGeneration(
  options: PublishRequest['options'],
  generation: TreeReader,
  lockSightings: Sightings | undefined,
  onProgress: (progress: PublishProgress) => void,
): Promise<PublishReport> {
  const thread = PublishThread.shared();
  if (thread === undefined) {
    // Loaded on first use: the AWS SDK is only for watchers that publish.
    const { publish } = await import('../publish/publish.js');
    return publish({ ...options, generation, lockSightings, onProgress });
  }
  const { report, seen } = await thread.publish({ options, lockSightings: lockSightings?.toJSON() }, onProgress);
  lockSightings?.adopt(seen);
  return report;
}

interface Waiting {
  onProgress(progress: PublishProgress): void;
  resolve(result: { report: PublishReport; seen: SeenVersion }): void;
  reject(error: Error): void;
}

/** The process's publish thread. */
export class PublishThread {
  private static instance: PublishThread | undefined;
  private nextId = 1;
  private readonly waiting = new Map<number, Waiting>();

  private constructor(private readonly worker: Worker) {
    worker.on('message', (message: FromPublishThread) => this.receive(message));
    worker.on('error', (error) => this.stop(error instanceof Error ? error : new Error(String(error))));
    worker.on('exit', (code) => this.stop(new Error(`the publish thread ended (exit code ${code}) in the middle of a publish`)));
    worker.unref(); // after the listeners, which would otherwise hold the process open
  }

  /** The publish thread, started on first use; undefined off the main thread or when it cannot run. */
  static shared(): PublishThread | undefined {
    if (PublishThread.instance !== undefined) return PublishThread.instance;
    if (!isMainThread || WORKER_URL.protocol !== 'file:' || !existsSync(fileURLToPath(WORKER_URL))) return undefined;
    try {
      // The SDK warns once per thread: this thread has, the publish thread need not repeat it.
      const env = { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' };
      // The thread follows the process's memory upkeep (core/memory.ts): it collects once a plan is
      // made, and keeps the young generation small again after its start reset V8's flags.
      const workerData = { memoryUpkeep: memoryUpkeep() };
      return (PublishThread.instance = new PublishThread(new Worker(WORKER_URL, { env, workerData })));
    } catch {
      return undefined;
    }
  }

  publish(request: PublishRequest, onProgress: Waiting['onProgress']): Promise<{ report: PublishReport; seen: SeenVersion }> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { onProgress, resolve, reject });
      this.worker.ref(); // a publish under way keeps the process alive, as one on the main thread would
      this.worker.postMessage({ id, request } satisfies ToPublishThread);
    });
  }

  private receive(message: FromPublishThread): void {
    const waiting = this.waiting.get(message.id);
    if (waiting === undefined) return;
    if (message.type === 'progress') return waiting.onProgress(message.progress);
    this.settle(message.id);
    if (message.type === 'done') waiting.resolve({ report: message.report, seen: message.lockSightings });
    else waiting.reject(errorOf(message.failure));
  }

  private settle(id: number): void {
    this.waiting.delete(id);
    if (this.waiting.size === 0) this.worker.unref();
  }

  /** The thread died: its publishes fail (as bugs), and the next publish starts a new thread. */
  private stop(error: Error): void {
    if (PublishThread.instance === this) PublishThread.instance = undefined;
    for (const [id, waiting] of [...this.waiting]) {
      this.settle(id);
      waiting.reject(error);
    }
  }
}

/** The thread's failure as an error of this thread, reported as the thread would have. */
function errorOf(failure: ThreadFailure): Error {
  if (failure.typed) return new SnapshotError(failure.kind, failure.message, { hint: failure.hint });
  const error = new Error(failure.message);
  if (failure.stack !== undefined) error.stack = failure.stack;
  return error;
}
