/**
 * The gzip variant's pieces deflated on two threads, this one and a worker (deflate-worker.ts), when
 * a build must deflate many of them (a first build, a cycle in which many members changed).
 *
 * The variant is assembled synchronously and written in list order, so the pieces to deflate are
 * shared through a cursor in shared memory: each thread takes the next piece nobody has taken, the
 * worker posts each one it deflated, and this thread, when it reaches a piece the worker took, takes
 * the answer with receiveMessageOnPort, deflating the next untaken piece meanwhile, or waiting on the
 * shared memory (Atomics.wait) when there is none. Pieces are taken only a bounded window ahead of
 * the one being written, so the answers waiting for their turn stay few.
 *
 * Nothing waits for the worker: until it takes pieces, this thread takes them all, so a worker that
 * is slow to start, cannot start, fails or stops answering leaves the work here. The bytes are the
 * same whichever thread deflates a piece: deflate is deterministic for the same input, level and
 * dictionary.
 *
 * A worker is started for each batch and ended with it: for a large batch when the batch begins (its
 * start overlaps this thread's own deflating), for a watcher's cycle as the list begins to be
 * written (WorkerAhead). Kept between the cycles, it would save its start at the price of its
 * resident memory through every later pass, when the watcher's memory is at its peak.
 *
 * A batch may begin while its file is still being written (creators-gzip.ts BegunVariant): the
 * worker then takes a piece only once the writer says the file holds all its bytes (`fileHolds`),
 * and deflates while this thread writes the rest of the file.
 */
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import { keepYoungGenerationSmall, memoryUpkeep } from '../core/memory.js';
import { crc32, deflatePiece } from './gzip-member.js';
import { PositionedReader } from './positioned-reader.js';

const WORKER_URL = new URL('./deflate-worker.js', import.meta.url);
/**
 * Fewer pieces than this are all deflated here: a worker takes about as long to start as this thread
 * takes to deflate them, so it would take few of them, if any, and cost more than it saved.
 */
export const SHARE_DEFLATE_FROM = 320;
/**
 * Pieces taken ahead of the one being written, at most: enough for the worker to go on through a
 * full collection on this thread, few enough that their answers are a megabyte or so.
 */
const WINDOW = 512;
/**
 * The window while the batch's file is still written (pieceDeflater's `whileWritten`): this thread
 * takes no piece then, so the worker may run further ahead. A piece deflates to a kilobyte or two.
 */
const WINDOW_WHILE_WRITTEN = 4096;
/**
 * A piece the worker took and has not answered for this long is deflated here and the worker given
 * up on: a piece takes a millisecond or two, so only a worker that died is that late (its exit is an
 * event, which this thread, synchronous, cannot see).
 */
const PATIENCE_MS = 5_000;

/** Slots of the shared control array. */
const CURSOR = 0, // the next piece nobody has taken
  LIMIT = 1, // pieces from this one on may not be taken yet
  ANSWERED = 2, // answers the worker posted, which this thread waits on
  READABLE = 3, // pieces from this one on are not all in the file yet
  WAKE = 4, // counts this thread's changes to the others, which the worker waits on
  CONTROL_SLOTS = 5;

/** The pieces to deflate, in order: three byte offsets in the list file each (dictionary start, start, end). */
export type PieceRanges = Float64Array;

export interface DeflatedPiece {
  compressed: Uint8Array;
  /** CRC-32 of the piece's bytes, and how many there are. */
  crc: number;
  length: number;
}

/** Hands back the pieces deflated, one at a time, in order. */
export interface PieceDeflater {
  /**
   * For a batch begun while its file is still written (see pieceDeflater): the file now holds its
   * first `bytes` bytes (Infinity: all of them). A piece is deflated only once all its bytes are in.
   */
  fileHolds(bytes: number): void;
  /** The next piece; a batch begun early, only once its file is whole. */
  next(): DeflatedPiece;
  /** Ends the batch, also when it ends early (again: nothing more); returns how many pieces the worker deflated. */
  close(): number;
}

export interface DeflateOptions {
  /** Threads the pieces may be deflated on: a worker only from 2. */
  threads: number;
  /** The worker module, and how long a piece it took may stay unanswered (tests change them). */
  workerUrl?: URL;
  patienceMs?: number;
  /** A worker started before the batch was known, for the batch to use (WorkerAhead). */
  ahead?: WorkerAhead | undefined;
}

/** A batch of pieces, as the worker receives it. */
interface Batch {
  file: string;
  ranges: PieceRanges;
  control: SharedArrayBuffer;
}

type Answer = (DeflatedPiece & { job: number }) | { job?: undefined; error: string };

/** Deflates piece `job` of `ranges`, read from `reader`, with the bytes before it there as its dictionary. */
export function deflateRange(reader: PositionedReader, ranges: PieceRanges, job: number): DeflatedPiece {
  const dictionaryStart = ranges[3 * job]!;
  const start = ranges[3 * job + 1]!;
  const bytes = reader.read(dictionaryStart, ranges[3 * job + 2]! - dictionaryStart);
  const data = bytes.subarray(start - dictionaryStart);
  const compressed = deflatePiece(data, bytes.subarray(0, start - dictionaryStart), false);
  return { compressed, crc: crc32(data), length: data.length };
}

/**
 * A deflater for the pieces at `ranges` of `file` (open in `reader`): shared with a worker when the
 * options allow it and there are pieces to share, else on this thread alone. The worker is the one
 * started `ahead` when there is one; else one is started when there are enough pieces to pay for it.
 * With `whileWritten`, the file is still being written: the worker deflates each piece once
 * `fileHolds` says its bytes are in, while this thread writes the rest.
 */
export function pieceDeflater(
  reader: PositionedReader,
  file: string,
  ranges: PieceRanges,
  options: DeflateOptions,
  whileWritten = false,
): PieceDeflater {
  const link = workerForBatch(ranges.length / 3, options);
  if (link === undefined) {
    let job = 0;
    return { fileHolds: () => undefined, next: () => deflateRange(reader, ranges, job++), close: () => 0 };
  }
  const batch = { file, ranges, control: new SharedArrayBuffer(CONTROL_SLOTS * Int32Array.BYTES_PER_ELEMENT) };
  return new SharedDeflater(reader, batch, link, options.patienceMs ?? PATIENCE_MS, whileWritten);
}

/** The worker started ahead when there is one; else one started now when the batch pays for it. */
function workerForBatch(pieces: number, options: DeflateOptions): WorkerLink | undefined {
  if (pieces === 0) return undefined; // a worker started ahead stays with its owner, which ends it
  return options.ahead?.take() ?? (pieces >= SHARE_DEFLATE_FROM ? startWorkerFor(options) : undefined);
}

/**
 * A worker started before its pieces are known. A watcher's cycle deflates a few dozen pieces, too
 * few to wait for a worker's start; started as the list begins to be written, the worker is running
 * when they are known, and deflates them while this thread copies the pieces kept around them.
 */
export class WorkerAhead {
  private constructor(private link: WorkerLink | undefined) {}

  /**
   * A worker started now, when the options allow one and a variant of `pieces` in all is large
   * enough that one ever pays (a batch of its size would start one); else undefined.
   */
  static start(options: DeflateOptions, pieces: number): WorkerAhead | undefined {
    const link = pieces >= SHARE_DEFLATE_FROM ? startWorkerFor(options) : undefined;
    return link === undefined ? undefined : new WorkerAhead(link);
  }

  /** The worker, handed to the batch that uses it (once). */
  take(): WorkerLink | undefined {
    const link = this.link;
    this.link = undefined;
    return link;
  }

  /**
   * Ends the worker unless a batch took it (that batch ends it); resolves once it has stopped, to
   * whether there was one to end. Nothing needs to wait for that.
   */
  async close(): Promise<boolean> {
    const link = this.take();
    if (link === undefined) return false;
    const stopped = endWorker(link);
    keepYoungGenerationSmall(); // as SharedDeflater.close
    await stopped;
    return true;
  }
}

/** A worker for deflating, when the options allow more than one thread and the module is there. */
function startWorkerFor(options: DeflateOptions): WorkerLink | undefined {
  const url = options.workerUrl ?? WORKER_URL;
  const allowed = options.threads >= 2 && availableParallelism() > 1;
  return allowed && url.protocol === 'file:' && existsSync(fileURLToPath(url)) ? startWorker(url) : undefined;
}

export interface WorkerLink {
  worker: Worker;
  port: MessagePort;
}

/** A worker for one batch; undefined when it cannot start. It never keeps the process alive. */
function startWorker(url: URL): WorkerLink | undefined {
  const { port1, port2 } = new MessageChannel();
  try {
    const worker = new Worker(url, { workerData: { port: port2, memoryUpkeep: memoryUpkeep() }, transferList: [port2] });
    worker.unref();
    // A worker that fails to load says so in an event; this thread goes on without it all the same.
    worker.on('error', () => undefined);
    return { worker, port: port1 };
  } catch {
    port1.close();
    return undefined;
  }
}

/** One batch shared with a worker (see the top of the file). */
class SharedDeflater implements PieceDeflater {
  private readonly control: Int32Array;
  private readonly pieces: number;
  /** Pieces deflated, by either thread, and not handed back yet. */
  private readonly ready = new Map<number, DeflatedPiece>();
  private handed = 0;
  /** The worker's answers received, and those that were pieces. */
  private received = 0;
  private byWorker = 0;
  /** The worker, until the batch ends or the worker is given up on. */
  private link: WorkerLink | undefined;
  /** The pieces whose bytes are all in the file: the first `readable`. */
  private readable: number;
  private closed = false;

  constructor(
    private readonly reader: PositionedReader,
    private readonly batch: Batch,
    link: WorkerLink,
    private readonly patienceMs: number,
    whileWritten: boolean,
  ) {
    this.control = new Int32Array(batch.control);
    this.pieces = batch.ranges.length / 3;
    this.readable = whileWritten ? 0 : this.pieces;
    Atomics.store(this.control, LIMIT, whileWritten ? WINDOW_WHILE_WRITTEN : WINDOW);
    Atomics.store(this.control, READABLE, this.readable);
    this.link = link;
    link.port.postMessage(batch);
  }

  fileHolds(bytes: number): void {
    const { ranges } = this.batch;
    let readable = this.readable;
    while (readable < this.pieces && ranges[3 * readable + 2]! <= bytes) readable++;
    if (readable === this.readable) return;
    this.readable = readable;
    this.tell(READABLE, readable);
  }

  next(): DeflatedPiece {
    if (this.readable < this.pieces) throw new Error('bug: a piece was asked for before its file was whole');
    const job = this.handed;
    const piece = this.ready.get(job) ?? this.await(job);
    this.ready.delete(job);
    this.handed++;
    this.tell(LIMIT, this.handed + WINDOW);
    return piece;
  }

  close(): number {
    if (this.closed) return this.byWorker;
    this.closed = true;
    // Every piece counts as taken, so the worker stops looking for more.
    this.tell(CURSOR, this.pieces);
    this.letGo();
    // A worker's start resets V8's flags for the whole process; one that never ran did not set them back.
    keepYoungGenerationSmall();
    return this.byWorker;
  }

  /** Piece `job`, not ready yet: deflated here, or the worker's answer once it comes. */
  private await(job: number): DeflatedPiece {
    for (;;) {
      this.receive();
      const piece = this.ready.get(job);
      if (piece !== undefined) return piece;
      if (this.link === undefined) return deflateRange(this.reader, this.batch.ranges, job);
      if (!this.takeOne()) this.waitForWorker();
    }
  }

  /** Sets slot `slot` and wakes the worker to look at it. */
  private tell(slot: number, value: number): void {
    Atomics.store(this.control, slot, value);
    Atomics.add(this.control, WAKE, 1);
    Atomics.notify(this.control, WAKE);
  }

  /** Takes the next untaken piece in the window and deflates it here; false when there is none. */
  private takeOne(): boolean {
    const control = this.control;
    for (;;) {
      const job = Atomics.load(control, CURSOR);
      if (job >= this.pieces || job >= Atomics.load(control, LIMIT)) return false;
      if (Atomics.compareExchange(control, CURSOR, job, job + 1) !== job) continue; // the worker took it first
      this.ready.set(job, deflateRange(this.reader, this.batch.ranges, job));
      return true;
    }
  }

  /** The worker's answers posted so far, into `ready`. */
  private receive(): void {
    for (let message; this.link !== undefined && (message = receiveMessageOnPort(this.link.port)) !== undefined;) {
      this.received++;
      const answer = message.message as Answer;
      if (answer.job === undefined) return this.letGo(); // it failed: the pieces it took are deflated here
      this.ready.set(answer.job, answer);
      this.byWorker++;
    }
  }

  /**
   * Waits until the worker has posted an answer not received yet; gives the worker up when that takes
   * too long. It counts each answer after posting it, so one counted is there to be received.
   */
  private waitForWorker(): void {
    if (Atomics.wait(this.control, ANSWERED, this.received, this.patienceMs) === 'timed-out') this.letGo();
  }

  private letGo(): void {
    const link = this.link;
    if (link === undefined) return;
    this.link = undefined;
    void endWorker(link);
  }
}

function endWorker(link: WorkerLink): Promise<number> {
  link.port.close();
  return link.worker.terminate();
}

/**
 * The worker's side (deflate-worker.ts): for each batch it receives, deflates the pieces it takes
 * and posts each with its CRC, until every piece of the batch is taken.
 */
export function serveBatches(port: MessagePort): void {
  port.on('message', (batch: Batch) => serveBatch(port, batch));
}

function serveBatch(port: MessagePort, batch: Batch): void {
  const control = new Int32Array(batch.control);
  const pieces = batch.ranges.length / 3;
  const answer = (message: Answer, transfer: ArrayBuffer[] = []) => {
    port.postMessage(message, transfer);
    Atomics.add(control, ANSWERED, 1);
    Atomics.notify(control, ANSWERED);
  };
  let reader: PositionedReader | undefined;
  try {
    reader = new PositionedReader(batch.file, false);
    for (let job = take(control, pieces); job !== undefined; job = take(control, pieces)) {
      const piece = deflateRange(reader, batch.ranges, job);
      // Moved to the other thread, not copied: in a buffer of its own (zlib's may be a larger one's slice).
      const compressed = new Uint8Array(piece.compressed);
      answer({ ...piece, job, compressed }, [compressed.buffer]);
    }
  } catch (error) {
    answer({ error: error instanceof Error ? error.message : String(error) });
  } finally {
    reader?.close();
  }
}

/**
 * The next untaken piece, once the window lets it be taken and its bytes are in the file; undefined
 * when every piece is taken.
 */
function take(control: Int32Array, pieces: number): number | undefined {
  for (;;) {
    // Read before the slots it guards: a change after this read wakes the wait below at once.
    const wake = Atomics.load(control, WAKE);
    const job = Atomics.load(control, CURSOR);
    if (job >= pieces) return undefined;
    const limit = Math.min(Atomics.load(control, LIMIT), Atomics.load(control, READABLE));
    if (job >= limit) Atomics.wait(control, WAKE, wake, 1000);
    else if (Atomics.compareExchange(control, CURSOR, job, job + 1) === job) return job;
  }
}
