/**
 * A full pass shared between threads: each thread reads, renders and writes one slice of the users
 * (core/slice.ts), this one included, and the others hand what they staged over to this thread,
 * which commits it all as one transaction. Rendering, hashing and above all the writes themselves
 * run side by side, which a single thread cannot do.
 *
 * One snapshot for all: every thread reads with its own connection, so each one's read transaction
 * must see what this thread's sees. This thread took the store's commit mark just before its
 * snapshot (ProfileStore.snapshotMark); once the others have taken theirs, the mark is read again.
 * Unchanged, no commit came in between, and they are told to go on. Changed, they are told to stop
 * before writing anything, and this thread reads their slices itself, from its own snapshot.
 *
 * The pass stays synchronous: this thread waits on shared flags (Atomics) and takes each result
 * with receiveMessageOnPort. Without the compiled thread module (running from TypeScript sources, as
 * the unit tests do) or on one CPU, the pass is not shared: the output is the same either way.
 */
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import { describeCause, SnapshotError, type SnapshotErrorKind } from '../core/errors.js';
import { collectNow, enableMemoryUpkeep, keepYoungGenerationSmall, memoryUpkeep, type MemoryUpkeep } from '../core/memory.js';
import type { RenderKey } from '../core/render-key.js';
import { sliceWithin, type Slice } from '../core/slice.js';
import type { CreatorsHandover } from '../output/creators.js';
import type { OutputHandover } from '../output/tree.js';
import type { RowWarning } from '../render/user.js';
import type { ProfileStore } from '../store/read.js';

const THREAD_URL = new URL('./thread.js', import.meta.url);
/** Below this many users, starting another thread costs more than it saves. */
export const SHARE_FROM = 20_000;
/**
 * A rebuild is shared only while the last build's manifest is smaller than this: each thread holds
 * its slice of the last build's entries beside what it stages, and past it the two threads' peak
 * takes a million-profile rebuild over its memory budget, which one thread keeps (see BENCHMARKS.md).
 * A first build has no entries to hold and is always shared.
 */
export const SHARE_REBUILD_BELOW_BYTES = 24 * 2 ** 20;
/** A second CPU's worth: the machines the tool is built for have two (never more than there are CPUs). */
export const DEFAULT_THREADS = 2;
/** A thread whose row count has not moved for this long is given up on (the build fails). */
const STALL_MS = 120_000;

/** What another thread needs to read, render and stage its slice: plain data. */
export interface SliceInputs {
  db: string;
  busyTimeoutMs: number;
  outDir: string;
  renderKey: RenderKey;
  baseUrl: string;
  snapshotMs: number;
  reproducible: boolean;
  healing: boolean;
  slice: Slice;
}

/** What a pass read, kept and rendered: a thread's slice or the whole. */
export interface PassCounts {
  /** Profiles published (kept or rendered). */
  profiles: number;
  skipped: number;
  rendered: number;
  rowsRead: number;
  warnings: RowWarning[];
  /** The first snapshot time at which a published profile's account age turns over. */
  stableUntilMs: number;
}

/** What a slice's thread staged, handed over to the owner. */
export interface PassHandover extends PassCounts {
  output: OutputHandover;
  creators: CreatorsHandover;
}

/** How a slice's thread talks to the owner while it works (see `runSlice`). */
export interface SliceHooks {
  /**
   * Called once its snapshot is taken; waits for the owner's word: whether unchanged list members
   * may be kept (CreatorsList.canKeep, the owner's), or undefined when the owner reads the slice
   * itself instead.
   */
  mayGo(): { mayKeepMembers: boolean } | undefined;
  /** Called every few hundred rows with the rows read; throws once the owner has failed. */
  rowsRead(rows: number): void;
}

interface ThreadData {
  inputs: SliceInputs;
  control: SharedArrayBuffer;
  port: MessagePort;
  /** Whether the process opted in to memory upkeep (core/memory.ts): the thread follows it. */
  memoryUpkeep: MemoryUpkeep | undefined;
}

/** Slots of a thread's control array, and their values. */
const STATE = 0,
  ORDER = 1,
  ROWS = 2,
  KEEP = 3;
const STARTING = 0,
  READY = 1,
  ENDED = 2;
const WAIT = 0,
  GO = 1,
  STOP = 2;

interface Thread {
  slice: Slice;
  worker: Worker;
  control: Int32Array;
  port: MessagePort;
  released: boolean;
}

export class PassThreads {
  /** This thread's own slice: slice 0 of the users the pass publishes. */
  readonly ownSlice: Slice;
  /** The owner's CreatorsList.canKeep, once it is open (`ownerReady`); no thread goes on before. */
  private mayKeepMembers: boolean | undefined;

  private constructor(
    private readonly threads: Thread[],
    /** Slices whose thread could not start: this thread reads them itself (see `collect`). */
    private readonly unstarted: Slice[],
    private readonly mark: string,
    private readonly store: ProfileStore,
    ownSlice: Slice,
  ) {
    this.ownSlice = ownSlice;
  }

  /**
   * Starts the other threads of a full pass over `store` (inside its `inSnapshot`) when it is worth
   * it: `count` threads asked for, a CPU for each, enough users, a last build small enough to share
   * (`lastManifestBytes`), the compiled thread module. Each thread takes a slice of `users`.
   */
  static start(
    store: ProfileStore,
    inputs: Omit<SliceInputs, 'slice'>,
    count: number,
    lastManifestBytes: number,
    users: Slice,
  ): PassThreads | undefined {
    // Started before the owner opens its output, so they load meanwhile; each takes its snapshot
    // as it starts, after the owner's mark.
    const mark = store.snapshotMark();
    const threads = Math.min(count, availableParallelism());
    if (threads < 2 || mark === undefined || lastManifestBytes >= SHARE_REBUILD_BELOW_BYTES) return undefined;
    if (!threadModuleExists() || !store.hasUsers(SHARE_FROM)) return undefined;
    const others = Array.from({ length: threads - 1 }, (_, i) => sliceWithin(users, { index: i + 1, count: threads }));
    const started: Thread[] = [];
    for (const slice of others) {
      const thread = startThread({ ...inputs, slice });
      if (thread === undefined) break;
      started.push(thread);
    }
    if (started.length === 0) return undefined;
    return new PassThreads(started, others.slice(started.length), mark, store, sliceWithin(users, { index: 0, count: threads }));
  }

  /** Rows the other threads have read so far, for progress. */
  rowsRead(): number {
    return this.threads.reduce((sum, thread) => sum + Atomics.load(thread.control, ROWS), 0);
  }

  /** The owner has opened its output: threads may go on once they have taken their snapshots. */
  ownerReady(mayKeepMembers: boolean): void {
    this.mayKeepMembers = mayKeepMembers;
  }

  /**
   * Waits until every thread has taken its snapshot (or ended), then lets each go on: before the
   * owner's read, which begins with one long statement (its slice's ids) during which it cannot
   * poll, and which would otherwise hold its threads back by as long.
   */
  releaseWhenReady(): void {
    for (const thread of this.threads) waitWhile(thread.control, STATE, STARTING);
    this.poll();
  }

  /** Lets each thread that has taken its snapshot go on, or stop (see the top). Cheap: call often. */
  poll(): void {
    if (this.mayKeepMembers === undefined) return;
    for (const thread of this.threads) {
      if (!thread.released && Atomics.load(thread.control, STATE) === READY) this.release(thread);
    }
  }

  /**
   * Waits for every thread and returns what each staged, and the slices no thread read (this
   * thread reads them itself). A thread's failure is thrown here, as the build's.
   */
  collect(): { handovers: PassHandover[]; unread: Slice[] } {
    const handovers: PassHandover[] = [];
    const unread: Slice[] = [...this.unstarted];
    try {
      // Every thread released first, so none waits for another to finish.
      this.releaseWhenReady();
      for (const thread of this.threads) {
        waitWhile(thread.control, STATE, READY);
        // Never released: it ended before taking its snapshot (it could not start or open the
        // store) and wrote nothing. Told to stop: it wrote nothing either.
        const handover = thread.released ? takeResult(thread) : undefined;
        if (handover === undefined) unread.push(thread.slice);
        else handovers.push(handover);
      }
    } catch (error) {
      this.stop();
      throw error;
    }
    this.end();
    return { handovers, unread };
  }

  /** Stops every thread and waits until none writes any more (the build failed). */
  stop(): void {
    for (const thread of this.threads) order(thread, STOP);
    for (const thread of this.threads) {
      try {
        waitWhile(thread.control, STATE, STARTING);
        waitWhile(thread.control, STATE, READY);
      } catch {
        // stalled: terminating it is all that is left
      }
    }
    this.end();
  }

  private release(thread: Thread): void {
    if (this.mayKeepMembers === undefined) throw new Error('bug: threads released before their owner is ready');
    thread.released = true;
    keepYoungGenerationSmall(); // again: the thread's start reset it
    Atomics.store(thread.control, KEEP, this.mayKeepMembers ? 1 : 0);
    order(thread, this.store.commitMark() === this.mark ? GO : STOP);
  }

  private end(): void {
    for (const thread of this.threads) {
      thread.port.close();
      void thread.worker.terminate();
    }
  }
}

type StageSlice = (inputs: SliceInputs, hooks: SliceHooks) => PassHandover | undefined;

/**
 * The body of a slice's thread (thread.ts): loads the stage, runs it with hooks wired to the
 * owner's flags, posts the result (or the error) and marks the thread ended, whatever happens.
 */
export async function runSlice(data: ThreadData, load: () => Promise<StageSlice>): Promise<void> {
  if (data.memoryUpkeep) enableMemoryUpkeep(data.memoryUpkeep);
  const control = new Int32Array(data.control);
  const hooks: SliceHooks = {
    mayGo() {
      Atomics.store(control, STATE, READY);
      Atomics.notify(control, STATE);
      while (Atomics.load(control, ORDER) === WAIT) Atomics.wait(control, ORDER, WAIT);
      return Atomics.load(control, ORDER) === GO ? { mayKeepMembers: Atomics.load(control, KEEP) === 1 } : undefined;
    },
    rowsRead(rows) {
      Atomics.store(control, ROWS, rows);
      if (Atomics.load(control, ORDER) === STOP) throw new Error('stopped: the build failed elsewhere');
    },
  };
  try {
    const stage = await load();
    postHandover(data.port, stage(data.inputs, hooks));
  } catch (error) {
    data.port.postMessage({ error: serializeError(error) });
  } finally {
    Atomics.store(control, STATE, ENDED);
    Atomics.notify(control, STATE);
  }
}

/**
 * Posts what a slice's thread staged. Its pass is garbage by now, all but the handover itself: it
 * is freed first, so the pass and the message's copy of the handover are never resident together.
 */
function postHandover(port: MessagePort, handover: PassHandover | undefined): void {
  collectNow('handover');
  port.postMessage({ handover });
}

function threadModuleExists(): boolean {
  return THREAD_URL.protocol === 'file:' && existsSync(fileURLToPath(THREAD_URL));
}

function startThread(inputs: SliceInputs): Thread | undefined {
  const control = new Int32Array(new SharedArrayBuffer(4 * Int32Array.BYTES_PER_ELEMENT));
  const { port1, port2 } = new MessageChannel();
  const data: ThreadData = { inputs, control: control.buffer as SharedArrayBuffer, port: port2, memoryUpkeep: memoryUpkeep() };
  try {
    const worker = new Worker(THREAD_URL, { workerData: data, transferList: [port2] });
    worker.unref();
    return { slice: inputs.slice, worker, control, port: port1, released: false };
  } catch {
    port1.close();
    return undefined;
  }
}

function order(thread: Thread, value: number): void {
  Atomics.store(thread.control, ORDER, value);
  Atomics.notify(thread.control, ORDER);
}

/** Waits while the thread's STATE is `state`, as long as its row count keeps moving. */
function waitWhile(control: Int32Array, slot: number, state: number): void {
  let rows = Atomics.load(control, ROWS);
  let movedAt = Date.now();
  while (Atomics.load(control, slot) === state) {
    Atomics.wait(control, slot, state, 1000);
    const now = Atomics.load(control, ROWS);
    if (now !== rows) [rows, movedAt] = [now, Date.now()];
    else if (Date.now() - movedAt > STALL_MS) throw new Error(`bug: a pass thread made no progress for ${STALL_MS / 1000} s`);
  }
}

function takeResult(thread: Thread): PassHandover | undefined {
  const message = receiveMessageOnPort(thread.port)?.message as { handover?: PassHandover; error?: SerializedError } | undefined;
  if (message === undefined) throw new Error('bug: a pass thread ended without a result');
  if (message.error !== undefined) throw deserializeError(message.error);
  return message.handover;
}

interface SerializedError {
  kind?: SnapshotErrorKind;
  message: string;
  hint?: string;
  cause?: string;
  stack?: string;
}

function serializeError(error: unknown): SerializedError {
  if (error instanceof SnapshotError) {
    const cause = error.cause === undefined ? undefined : describeCause(error.cause);
    return { kind: error.kind, message: error.message, hint: error.hint, cause };
  }
  return error instanceof Error ? { message: error.message, stack: error.stack } : { message: String(error) };
}

/** A thread's error as this thread's: a SnapshotError keeps its kind (its exit code) and hint. */
function deserializeError(error: SerializedError): Error {
  if (error.kind !== undefined) {
    const cause = error.cause === undefined ? undefined : new Error(error.cause);
    return new SnapshotError(error.kind, error.message, { hint: error.hint, cause });
  }
  const bug = new Error(`a pass thread failed: ${error.message}`);
  if (error.stack !== undefined) bug.stack = `${bug.message}\n${error.stack}`;
  return bug;
}
