/**
 * The origin's HTTP server, with a quick path in front of Node's own request handling.
 *
 * Behind a CDN nearly every request is the plainest GET of a document the cache holds. Node's HTTP
 * layer (a request and a response object, headers validated one by one, a write per part) costs more
 * CPU per request than the answer itself, and on a machine whose cores the server shares, CPU per
 * request is throughput. So each new connection's bytes are read here first (./quick-connection.ts):
 * every whole request head that ./request-head.ts reads and the answerer can answer from memory is
 * answered with pieces prepared once, byte for byte what Node's server would send for the same answer
 * (the status line, the answer's headers, then Date, Connection and Keep-Alive as Node writes them).
 *
 * A read holding any other form (or a head split across reads), or a document not in memory, hands
 * the connection, with every byte not yet answered, to Node's own connection handling, which keeps
 * it from then on: request objects, timeouts, limits, errors.
 * Where the quick path keeps a connection, it keeps Node's bounds: it stops reading a client that
 * does not take its answers, and closes connections when and as Node's server would.
 */
import { Server, STATUS_CODES, type RequestListener } from 'node:http';
import type { Socket } from 'node:net';
import { QuickConnection, type QuickAnswerer, type QuickHost } from './quick-connection.js';

/** What Node's server writes to a connection that sent no request within its headers timeout. */
/** Options Node's server keeps on itself that its type declarations do not name. */
interface UntypedOptions {
  maxHeaderSize?: number;
  connectionsCheckingInterval?: number;
  keepAliveTimeoutBuffer?: number;
}

const REQUEST_TIMEOUT_RESPONSE = Buffer.from(`HTTP/1.1 408 ${STATUS_CODES[408]}\r\nConnection: close\r\n\r\n`, 'latin1');

export class OriginServer extends Server {
  /** Connections the quick path still reads (not yet handed to Node's server). */
  private readonly quick = new Set<QuickConnection>();
  /** Node's own handling of a new connection; undefined if this Node version has none to take over. */
  private readonly nodeConnection: ((socket: Socket) => void) | undefined;
  private readonly host: QuickHost | undefined;
  private freshCheck: NodeJS.Timeout | undefined;
  private lines = { second: -1, keepAliveTimeout: -1, keepAlive: Buffer.alloc(0), close: Buffer.alloc(0) };

  constructor(
    requestListener: RequestListener,
    /** Undefined: no quick path, every connection is Node's server's from the start. */
    answerer: QuickAnswerer | undefined,
  ) {
    super(requestListener);
    // Node's server handles each connection in its one 'connection' listener; injecting a socket by
    // calling it is what emitting 'connection' does, documented for handing sockets to a server.
    const listeners = this.listeners('connection');
    if (answerer !== undefined && listeners.length === 1) {
      this.nodeConnection = listeners[0] as (socket: Socket) => void;
      this.host = this.hostFor(answerer, this.nodeConnection);
      this.removeAllListeners('connection');
      this.on('connection', (socket: Socket) => this.take(socket));
      this.on('listening', () => this.checkFreshConnections());
    }
  }

  /** Whether connections are read by the quick path first (the tests check it is not silently off). */
  get quickPath(): boolean {
    return this.nodeConnection !== undefined;
  }

  override close(callback?: (error?: Error) => void): this {
    clearInterval(this.freshCheck);
    return super.close(callback);
  }

  override closeIdleConnections(): void {
    // As Node's server: a connection with a request read and not answered, or an answer not yet
    // handed to the kernel, is not idle; nor is one that has not sent its first request.
    for (const connection of this.quick) if (connection.idle) connection.socket.destroy();
    super.closeIdleConnections();
  }

  override closeAllConnections(): void {
    for (const connection of this.quick) connection.socket.destroy();
    super.closeAllConnections();
  }

  private get options(): UntypedOptions {
    return this as UntypedOptions;
  }

  private take(socket: Socket): void {
    // Options the quick path does not follow: Node's server keeps such a server's connections.
    if (this.maxRequestsPerSocket || this.options.maxHeaderSize !== undefined) return this.nodeConnection!.call(this, socket);
    this.quick.add(new QuickConnection(socket, this.host!));
  }

  private hostFor(answer: QuickAnswerer, nodeConnection: (socket: Socket) => void): QuickHost {
    return {
      answer,
      connectionLines: (close) => this.connectionLinesFor(close),
      requestTimeout: () => this.timeout,
      idleTimeout: () => (this.keepAliveTimeout > 0 ? this.keepAliveTimeout + this.keepAliveBuffer() : 0),
      timedOut: (socket) => {
        if (!this.emit('timeout', socket)) socket.destroy();
      },
      handOver: (socket) => nodeConnection.call(this, socket),
      forget: (connection) => this.quick.delete(connection),
    };
  }

  /** The margin Node's server adds to keepAliveTimeout before closing an idle connection, read as it reads it. */
  private keepAliveBuffer(): number {
    const buffer = this.options.keepAliveTimeoutBuffer;
    return buffer !== undefined && Number.isFinite(buffer) && buffer >= 0 ? buffer : 1000;
  }

  /**
   * Node's server answers 408 to a connection with no request after headersTimeout (or
   * requestTimeout), checked every connectionsCheckingInterval: the same for connections this path
   * still holds, which Node's server does not see.
   */
  private checkFreshConnections(): void {
    clearInterval(this.freshCheck);
    this.freshCheck = setInterval(() => {
      const limits = [this.headersTimeout, this.requestTimeout].filter((ms) => Number.isFinite(ms) && ms > 0);
      if (limits.length === 0) return;
      const since = performance.now() - Math.min(...limits);
      for (const connection of this.quick) if (connection.fresh && connection.since < since) this.timeOutFresh(connection);
    }, this.options.connectionsCheckingInterval ?? 30_000).unref();
  }

  private timeOutFresh(connection: QuickConnection): void {
    const error = Object.assign(new Error('Request timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' });
    if (!this.emit('clientError', error, connection.socket)) connection.timeOutFresh(REQUEST_TIMEOUT_RESPONSE);
  }

  /** What Node's server writes after an answer's own headers: Date, the connection's fate, the blank line. */
  private connectionLinesFor(close: boolean): Buffer {
    const second = Math.floor(Date.now() / 1000);
    if (second !== this.lines.second || this.keepAliveTimeout !== this.lines.keepAliveTimeout) {
      const date = `Date: ${new Date(second * 1000).toUTCString()}\r\n`;
      // Node's server names the timeout only when it has one.
      const timeout = this.keepAliveTimeout ? `Keep-Alive: timeout=${Math.floor(this.keepAliveTimeout / 1000)}\r\n` : '';
      this.lines = {
        second,
        keepAliveTimeout: this.keepAliveTimeout,
        keepAlive: Buffer.from(`${date}Connection: keep-alive\r\n${timeout}\r\n`, 'latin1'),
        close: Buffer.from(`${date}Connection: close\r\n\r\n`, 'latin1'),
      };
    }
    return close ? this.lines.close : this.lines.keepAlive;
  }
}
