/**
 * One connection on the origin's quick path (./origin-server.ts): its bytes read, its plain heads
 * answered from memory, and every decision about it made as Node's own server would make it.
 *
 * - Bounds: answers are written as pieces (no copy into one buffer), and once the bytes queued on
 *   the socket reach its high-water mark, answering and reading stop until the client has taken
 *   them ('drain'). What a connection holds is then the bytes of one read not yet answered, the
 *   socket's buffers and the answers' pieces, which the cache already holds.
 * - Order: a read holding anything but whole plain heads goes to Node's server whole, as its parser
 *   would have read it (what Node's server does at a malformed request depends on the answers before
 *   it in the same read); a head the answerer declines hands over the rest of its read. Either way
 *   with every byte not answered, in order, and never while reading is stopped, so Node's parser
 *   and its own backpressure take over a connection in the state they expect.
 * - Fate: the timeouts Node's server sets (server.timeout while a request is read, keepAliveTimeout
 *   plus its buffer when idle), `Connection: close` ending it once the answer is out, a client's
 *   half-close ending it once its answers are out.
 * - Failures: an answer that throws (a failing disk under the cache) is left to Node's path, which
 *   answers it, 500 if it fails there too: nothing escapes a socket listener.
 */
import type { Socket } from 'node:net';
import { plainSoFar, readHead, type RequestHead } from './request-head.js';

/** An answer the quick path sends: the status line and headers in pieces (no blank line), and the body if any. */
export interface QuickAnswer {
  head: Buffer[];
  body: Buffer | undefined;
}

/** Answers a request from memory, or returns undefined to leave it (and the connection) to Node's server. */
export type QuickAnswerer = (head: RequestHead, socket: Socket) => QuickAnswer | undefined;

/** What a quick connection needs of its server. */
export interface QuickHost {
  answer: QuickAnswerer;
  /** Date, Connection and Keep-Alive as Node's server writes them after an answer's headers, and the blank line. */
  connectionLines(close: boolean): Buffer;
  /** Node's server.timeout: the socket's timeout while a request is being read (0: none). */
  requestTimeout(): number;
  /** The socket's timeout once every answer is out: keepAliveTimeout plus its buffer (0: none). */
  idleTimeout(): number;
  /** A socket timed out: Node's server emits 'timeout', and destroys the socket if nobody listens. */
  timedOut(socket: Socket): void;
  /** Node's own handling of a connection, from now on. */
  handOver(socket: Socket): void;
  forget(connection: QuickConnection): void;
}

const ignore = () => {};

/**
 * One read whose heads are all plain: its bytes, where each whole head starts (a head is read again
 * when its turn comes: a read of 64 KiB can hold 1,400 of them, and a client that does not read its
 * answers keeps the read waiting), where the last one ends, and the first head not answered yet.
 */
interface Read {
  bytes: Buffer;
  starts: number[];
  end: number;
  /** The first head, as read when checking the read (most reads hold one). */
  first: RequestHead | undefined;
  next: number;
}

/**
 * A read that holds nothing but whole plain heads, a `Connection: close` only as the last (Node's
 * parser refuses bytes after one), and at its end perhaps the beginning of one more, plain so far
 * (left to Node's server once the heads before it are answered); undefined for any other read.
 */
function plainRead(bytes: Buffer): Read | undefined {
  const read: Read = { bytes, starts: [], end: 0, first: undefined, next: 0 };
  while (read.end < bytes.length) {
    const head = readHead(bytes, read.end);
    if (head === 'partial' && plainSoFar(bytes, read.end)) break;
    if (typeof head !== 'object' || (head.close && head.end !== bytes.length)) return undefined;
    read.first ??= head;
    read.starts.push(read.end);
    read.end = head.end;
  }
  return read;
}

export class QuickConnection {
  /** A read not answered whole yet, kept while the client has not taken the answers before them. */
  private pending: Read | undefined;
  private answered = 0;
  /** The client half-closed: end the connection once its answers are out, as Node's server does. */
  private peerEnded = false;
  private idleTimerSet = false;
  /** Still this path's: not handed to Node's server, not closed. */
  private ours = true;
  /** When it was accepted (performance.now()): Node's headers timeout counts from there. */
  readonly since = performance.now();

  constructor(
    readonly socket: Socket,
    private readonly host: QuickHost,
  ) {
    const timeout = host.requestTimeout();
    if (timeout > 0) socket.setTimeout(timeout);
    socket.on('data', this.onData).on('drain', this.onDrain).on('end', this.onEnd);
    socket.on('timeout', this.onTimeout).on('error', ignore).on('close', this.onClose);
  }

  /** No request read yet: Node's server keeps such a connection only for its headers timeout. */
  get fresh(): boolean {
    return this.answered === 0 && this.pending === undefined;
  }

  /** Every request read is answered and every answer handed to the kernel: what Node's server calls idle. */
  get idle(): boolean {
    return this.answered > 0 && this.pending === undefined && this.socket.writableLength === 0;
  }

  private readonly onData = (bytes: Buffer): void => {
    if (this.idleTimerSet) {
      // A new request: from idle back to the timeout of a request being read, as Node's server does.
      this.socket.setTimeout(this.host.requestTimeout());
      this.idleTimerSet = false;
    }
    const read = plainRead(bytes);
    // A read with anything else in it goes to Node's server whole, as its parser would have read it:
    // what it does at a malformed or unusual request depends on the answers before it in the read.
    if (read === undefined) this.handOver(bytes);
    else this.serve(read);
  };

  private readonly onDrain = (): void => {
    const pending = this.pending;
    if (pending === undefined) return;
    this.pending = undefined;
    this.serve(pending);
    if (this.pending === undefined && this.ours) this.socket.resume();
  };

  private readonly onEnd = (): void => {
    this.peerEnded = true;
    if (this.pending === undefined) this.socket.end();
  };

  private readonly onTimeout = (): void => this.host.timedOut(this.socket);

  private readonly onClose = (): void => {
    this.pending = undefined;
    this.ours = false;
    this.host.forget(this);
  };

  /** Answers a read's heads from `read.next` while the client takes them; then waits, hands over or ends. */
  private serve(read: Read): void {
    if (this.socket.writableEnded) return;
    const stop = this.answerFrom(read);
    if (stop === 'full') {
      // The client is not taking its answers: stop reading until it has (as Node's server pauses).
      this.pending = read;
      this.socket.pause();
    } else if (stop === 'other') {
      this.leave(read);
    } else if (stop === 'close') {
      endOnceSent(this.socket);
    } else if (this.peerEnded) {
      this.socket.end();
    }
  }

  /** Writes the answers of the read's heads from `read.next`, corked into one system call, until one of the stops. */
  private answerFrom(read: Read): 'done' | 'full' | 'other' | 'close' {
    const socket = this.socket;
    socket.cork();
    try {
      for (; read.next < read.starts.length; read.next++) {
        if (socket.writableLength >= socket.writableHighWaterMark) return 'full';
        const head = read.next === 0 ? read.first! : (readHead(read.bytes, read.starts[read.next]!) as RequestHead);
        const answer = this.answerOf(head);
        if (answer === undefined) return 'other';
        this.write(answer, head.close);
        if (head.close) return 'close';
      }
      // The beginning of a head after them: Node's server reads it whole.
      return read.end < read.bytes.length ? 'other' : 'done';
    } finally {
      socket.uncork();
    }
  }

  /** Leaves the rest of a read, from its first head not answered, and the connection to Node's server. */
  private leave(read: Read): void {
    const from = read.starts[read.next] ?? read.end;
    if (this.peerEnded) {
      // Its stream has ended: Node's server could no longer be given these bytes. End it with the
      // answers already sent (only a client that half-closed without reading its answers gets here).
      this.socket.end();
    } else {
      this.handOver(read.bytes.subarray(from));
    }
  }

  private answerOf(head: RequestHead): QuickAnswer | undefined {
    try {
      return this.host.answer(head, this.socket);
    } catch {
      // Nothing of it was written: Node's path answers it, with its own handling of the failure.
      return undefined;
    }
  }

  private write(answer: QuickAnswer, close: boolean): void {
    const socket = this.socket;
    for (const piece of answer.head) socket.write(piece);
    const lines = this.host.connectionLines(close);
    if (answer.body === undefined) socket.write(lines, this.onSent);
    else {
      socket.write(lines);
      socket.write(answer.body, this.onSent);
    }
    this.answered++;
  }

  /** An answer reached the kernel: with nothing left to answer, the connection is idle from now. */
  private readonly onSent = (): void => {
    if (this.pending !== undefined || this.socket.writableLength > 0 || !this.ours) return;
    const timeout = this.host.idleTimeout();
    if (timeout > 0) {
      this.socket.setTimeout(timeout);
      this.idleTimerSet = true;
    }
  };

  /** Node's server takes the connection from here: `rest` first, then what the socket reads next. */
  private handOver(rest: Buffer): void {
    const socket = this.socket;
    socket.off('data', this.onData).off('drain', this.onDrain).off('end', this.onEnd);
    socket.off('timeout', this.onTimeout).off('error', ignore).off('close', this.onClose);
    socket.setTimeout(0);
    this.ours = false;
    this.host.forget(this);
    if (rest.length > 0) socket.unshift(rest);
    this.host.handOver(socket);
    // Reading stopped by this path is not Node's to know of: its server expects a flowing socket.
    if (socket.isPaused()) socket.resume();
  }

  /** Node's server's answer to a connection that sent no request within its headers timeout. */
  timeOutFresh(response: Buffer): void {
    if (this.socket.writable) this.socket.write(response);
    this.socket.destroy();
  }
}

/** Ends the connection once everything written is sent, then lets it go, as Node's server does after `Connection: close`. */
function endOnceSent(socket: Socket): void {
  socket.end();
  if (socket.writableFinished) socket.destroy();
  else socket.once('finish', () => socket.destroy());
}
