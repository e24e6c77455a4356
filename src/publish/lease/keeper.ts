/**
 * Renews this process's leases from a worker thread (worker.ts), so that a build that blocks
 * the main thread for longer than a lease's TTL never lets the lease lapse: `--lease-ttl` bounds only
 * how long a dead or frozen process blocks the others (a frozen process freezes this thread too).
 *
 * The lease's validity lives in shared memory (`Validity`): the worker extends it with each renewal
 * and marks it lost when another holder took over, and the main thread reads it synchronously before
 * every request it sends (the publish fence), whether or not it has handled the worker's messages yet.
 *
 * The worker is started before the first lease is taken; a lease taken before it has loaded renews on
 * the main thread and is handed over once it has. The worker never keeps the process alive, except
 * while a release is under way. When its compiled file is absent (the library run from its TypeScript
 * sources) or it cannot start, leases are renewed on the main thread.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { isMainThread, Worker } from 'node:worker_threads';
import type { SnapshotErrorKind } from '../../core/errors.js';
import type { RemoteOptions } from '../bucket/client.js';

const WORKER_URL = new URL('./worker.js', import.meta.url);

/** Milliseconds on the process's monotonic clock, the same in every thread (performance.now is not). */
export const monotonicMs = (): number => Number(process.hrtime.bigint()) / 1e6;

/** A lease's validity, shared between the thread that renews it and the one that writes under it. */
export class Validity {
  private readonly until: BigInt64Array;
  private readonly lostFlag: Int32Array;

  constructor(readonly buffer: SharedArrayBuffer = new SharedArrayBuffer(16)) {
    this.until = new BigInt64Array(buffer, 0, 1);
    this.lostFlag = new Int32Array(buffer, 8, 1);
  }

  /** The end of the validity, in monotonicMs. */
  get untilMs(): number {
    return Number(Atomics.load(this.until, 0)) / 1000;
  }

  set untilMs(ms: number) {
    Atomics.store(this.until, 0, BigInt(Math.floor(ms * 1000)));
  }

  /** Whether either thread found the lease taken over or not renewed in time. */
  get lost(): boolean {
    return Atomics.load(this.lostFlag, 0) === 1;
  }

  markLost(): void {
    Atomics.store(this.lostFlag, 0, 1);
  }
}

/** What the worker needs to go on renewing a lease the main thread took. */
export interface LeaseHandoff {
  remote: RemoteOptions & { region: string };
  name: string;
  etag: string;
  /** The lease object's JSON body (lease.ts's LeaseBody). */
  body: object;
  ttlMs: number;
  singleWriter: boolean;
  validity: SharedArrayBuffer;
}

/** What the worker tells of a kept lease (its renewals show in the shared validity alone). */
export interface KeptEvents {
  lost(kind: SnapshotErrorKind, message: string, hint: string | undefined): void;
}

export type FromWorker =
  | { type: 'ready' }
  | { type: 'lost'; id: number; kind: SnapshotErrorKind; message: string; hint: string | undefined }
  /** `puts`: the lease's writes from the worker (renewals and the release), for the publish's request counts. */
  | { type: 'released'; id: number; puts: number };

/** What the worker needs to stop renewing once the main thread stalls (heartbeat.ts). */
export interface StallHandoff {
  /** The main thread's heartbeat (heartbeat.ts's Heartbeat). */
  heartbeat: SharedArrayBuffer;
  timeoutMs: number;
}

export type ToWorker =
  { type: 'keep'; id: number; lease: LeaseHandoff } | { type: 'release'; id: number } | { type: 'guard'; guard: StallHandoff };

/** The one renewal worker of this process. */
export class RenewalThread {
  private static instance: RenewalThread | undefined;
  /** The stall guard (heartbeat.ts), handed to the worker before any lease, whenever it starts. */
  private static stallGuard: StallHandoff | undefined;
  private nextId = 1;
  private readonly kept = new Map<number, KeptEvents>();
  private readonly releasing = new Map<number, (puts: number) => void>();
  private markReady: () => void = () => undefined;
  /** Resolves once the worker has loaded and takes leases; until then a lease renews on its own thread. */
  readonly ready = new Promise<void>((resolve) => (this.markReady = resolve));

  private constructor(private readonly worker: Worker) {
    worker.on('message', (message: FromWorker) => this.receive(message));
    // A worker that dies renews nothing more: each lease then lapses on its own clock, never two holders.
    worker.on('error', () => this.stop());
    worker.on('exit', () => this.stop());
    worker.unref(); // after the listeners, which would otherwise hold the process open
  }

  /** The process's renewal thread, started on first use; undefined off the main thread or when it cannot run. */
  static shared(): RenewalThread | undefined {
    if (RenewalThread.instance !== undefined) return RenewalThread.instance;
    if (!isMainThread || WORKER_URL.protocol !== 'file:' || !existsSync(fileURLToPath(WORKER_URL))) return undefined;
    try {
      const thread = (RenewalThread.instance = new RenewalThread(new Worker(WORKER_URL)));
      if (RenewalThread.stallGuard !== undefined) thread.post({ type: 'guard', guard: RenewalThread.stallGuard });
      return thread;
    } catch {
      return undefined;
    }
  }

  /**
   * From now on, every lease this process keeps is renewed only while the main thread's heartbeat
   * is younger than the timeout (heartbeat.ts). The thread is not started for it: a watcher that holds
   * no lease has none to let go.
   */
  static guardAgainstStalls(guard: StallHandoff): void {
    RenewalThread.stallGuard = guard;
    RenewalThread.instance?.post({ type: 'guard', guard });
  }

  /** Renews `lease` from now on; returns its id for `release`. */
  keep(lease: LeaseHandoff, events: KeptEvents): number {
    const id = this.nextId++;
    this.kept.set(id, events);
    this.post({ type: 'keep', id, lease });
    return id;
  }

  /**
   * Stops renewing and gives the lease up (the worker writes it released); resolves when done, with
   * the number of writes the worker made for it.
   */
  release(id: number): Promise<number> {
    if (!this.kept.has(id)) return Promise.resolve(0);
    return new Promise((resolve) => {
      this.releasing.set(id, resolve);
      this.worker.ref(); // a CLI that awaits the release must not exit before it is written
      this.post({ type: 'release', id });
    });
  }

  private post(message: ToWorker): void {
    this.worker.postMessage(message);
  }

  private receive(message: FromWorker): void {
    if (message.type === 'ready') return this.markReady();
    if (message.type === 'lost') this.kept.get(message.id)?.lost(message.kind, message.message, message.hint);
    else this.settle(message.id, message.puts);
  }

  private settle(id: number, puts = 0): void {
    this.kept.delete(id);
    this.releasing.get(id)?.(puts);
    this.releasing.delete(id);
    if (this.releasing.size === 0) this.worker.unref();
  }

  private stop(): void {
    if (RenewalThread.instance === this) RenewalThread.instance = undefined;
    for (const id of [...this.kept.keys()]) this.settle(id);
  }
}
