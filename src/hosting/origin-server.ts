/**
 * The origin's HTTP server, with a quick path in front of Node's own request handling.
 *
 * Behind a CDN nearly every request is the plainest GET of a document the cache holds. Node's HTTP
 * layer (a request and a response object, headers validated one by one, a write per part) costs more
 * CPU per request than the answer itself, and on a machine whose cores the server shares, CPU per
 * request is throughput. So each new connection's bytes are read here first: every whole request
 * head that ./request-head.ts reads and the answerer can answer from memory is answered with one
 * write of bytes prepared once, byte for byte what Node's server would send for the same answer
 * (the status line, the answer's headers, then Date, Connection and Keep-Alive as Node writes them).
 *
 * The first request the quick path cannot answer (any other form, a head split across reads, a
 * document not in memory) hands the connection, with every byte not yet answered, to Node's own
 * connection handling, which keeps it from then on: request objects, timeouts, limits, errors.
 */
import { Server, type RequestListener } from 'node:http';
import type { Socket } from 'node:net';
import { readHead, type RequestHead } from './request-head.js';

/** An answer the quick path sends: the status line and headers in pieces (no blank line), and the body if any. */
export interface QuickAnswer {
  head: Buffer[];
  body: Buffer | undefined;
}

/** Answers a request from memory, or returns undefined to leave it (and the connection) to Node's server. */
export type QuickAnswerer = (head: RequestHead, socket: Socket) => QuickAnswer | undefined;

export class OriginServer extends Server {
  /** Connections the quick path still reads (not yet handed to Node's server). */
  private readonly quick = new Set<Socket>();
  /** Node's own handling of a new connection; undefined if this Node version has none to take over. */
  private readonly nodeConnection: ((socket: Socket) => void) | undefined;
  private dateSecond = -1;
  private connectionLines = { keepAlive: Buffer.alloc(0), close: Buffer.alloc(0) };

  constructor(
    requestListener: RequestListener,
    /** Undefined: no quick path, every connection is Node's server's from the start. */
    private readonly answerer: QuickAnswerer | undefined,
  ) {
    super(requestListener);
    // Node's server handles each connection in its one 'connection' listener; injecting a socket by
    // calling it is what emitting 'connection' does, documented for handing sockets to a server.
    const listeners = this.listeners('connection');
    if (answerer !== undefined && listeners.length === 1) {
      this.nodeConnection = listeners[0] as (socket: Socket) => void;
      this.removeAllListeners('connection');
      this.on('connection', (socket: Socket) => this.take(socket));
    }
  }

  /** Whether connections are read by the quick path first (the tests check it is not silently off). */
  get quickPath(): boolean {
    return this.nodeConnection !== undefined;
  }

  override closeIdleConnections(): void {
    // Answers are written whole as soon as their request is read: a quick connection is always idle.
    // end(), not destroy(): an answer still being flushed is delivered first.
    for (const socket of this.quick) socket.end();
    super.closeIdleConnections();
  }

  override closeAllConnections(): void {
    for (const socket of this.quick) socket.destroy();
    super.closeAllConnections();
  }

  private take(socket: Socket): void {
    this.quick.add(socket);
    const onData = (bytes: Buffer) => this.read(socket, bytes, handOver);
    const onTimeout = () => socket.destroy();
    const ignore = () => {};
    const forget = () => this.quick.delete(socket);
    const handOver = (rest: Buffer) => {
      socket.off('data', onData).off('timeout', onTimeout).off('error', ignore).off('close', forget);
      socket.setTimeout(0);
      forget();
      if (rest.length > 0) socket.unshift(rest);
      this.nodeConnection!.call(this, socket);
    };
    // As Node's server does with a connection idle after an answer; errors end it the same way.
    socket.setTimeout(this.keepAliveTimeout);
    socket.on('data', onData).on('timeout', onTimeout).on('error', ignore).on('close', forget);
  }

  /** Answers every whole head in `bytes` it can, in order; hands the rest over at the first it cannot. */
  private read(socket: Socket, bytes: Buffer, handOver: (rest: Buffer) => void): void {
    if (socket.writableEnded) return;
    const sent: Buffer[] = [];
    let offset = 0;
    let close = false;
    while (offset < bytes.length && !close) {
      const head = readHead(bytes, offset);
      const answer = typeof head === 'object' ? this.answerer!(head, socket) : undefined;
      if (typeof head !== 'object' || answer === undefined) break;
      sent.push(...answer.head, this.connectionLinesFor(head.close));
      if (answer.body !== undefined) sent.push(answer.body);
      offset = head.end;
      close = head.close;
    }
    if (sent.length > 0) {
      // One write, one system call, however many answers the read held.
      const whole = Buffer.concat(sent);
      if (close) socket.end(whole);
      else if (!socket.write(whole)) {
        // A client that sends and does not read: stop reading until it has taken what it was sent.
        socket.pause();
        socket.once('drain', () => socket.resume());
      }
    }
    if (!close && offset < bytes.length) handOver(offset === 0 ? bytes : bytes.subarray(offset));
  }

  /** What Node's server writes after an answer's own headers: Date, the connection's fate, the blank line. */
  private connectionLinesFor(close: boolean): Buffer {
    const second = Math.floor(Date.now() / 1000);
    if (second !== this.dateSecond) {
      this.dateSecond = second;
      const date = `Date: ${new Date(second * 1000).toUTCString()}\r\n`;
      const timeout = Math.floor(this.keepAliveTimeout / 1000);
      this.connectionLines = {
        keepAlive: Buffer.from(`${date}Connection: keep-alive\r\nKeep-Alive: timeout=${timeout}\r\n\r\n`, 'latin1'),
        close: Buffer.from(`${date}Connection: close\r\n\r\n`, 'latin1'),
      };
    }
    return close ? this.connectionLines.close : this.connectionLines.keepAlive;
  }
}
