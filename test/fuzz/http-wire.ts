/**
 * A client's conversation with an origin over a real connection on 127.0.0.1, as a delivery plan
 * (./http-streams.ts) says: every byte it receives, and the connection's fate.
 *
 * Each write is read by the server on its own: the next is sent only once the server's side of the
 * connection has read every byte written so far (its socket's bytesRead, counted by libuv as it
 * reads, whichever of the quick path or Node's parser takes the bytes) and is at rest: no answer in
 * progress, everything sent and read by the client. (A client that reads late cannot wait for its
 * answers; it waits until the server has read what it sent, or has stopped reading.) The server
 * runs in this process, so once bytesRead has grown, the read's synchronous work (parsing,
 * answering from memory, ending the connection) is done. Each case is thus one sequence of events,
 * the same for both origins: what differs between them is the servers', not the timing's.
 */
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import { closeGracefully, createOrigin, listen, type Origin } from '../../src/hosting/serve/origin.js';
import type { Plan } from './http-streams.js';

/** How a connection ended: the server closed it cleanly (FIN), it was reset, or it was still open when the client gave up. */
export type Fate = 'closed' | 'reset' | 'open';

export interface Conversation {
  received: Buffer;
  fate: Fate;
  /** The error code the client saw, if any (ECONNRESET, EPIPE). */
  error: string | undefined;
  /** Bytes of the stream never written: the connection was closed before their turn. */
  unsent: number;
  /** Writes sent before the server had read the one before (it had stopped reading for that long). */
  stalls: number;
  /** Called open only because the server never came to rest (see ClientWatch.fate). */
  restless: boolean;
}

/** An origin on a free port, and the server side of each of its connections, by the client's port. */
export class ServerUnderTest {
  private readonly sockets = new Map<number, Socket>();

  private constructor(
    readonly origin: Origin,
    readonly port: number,
  ) {
    // An extra listener: the quick path's own replaces Node's, and hands sockets over by calling it.
    origin.server.on('connection', (socket: Socket) => {
      const peer = socket.remotePort!;
      this.sockets.set(peer, socket);
      socket.once('close', () => this.sockets.get(peer) === socket && this.sockets.delete(peer));
    });
  }

  static async start(out: string, quickPath: boolean): Promise<ServerUnderTest> {
    const origin = createOrigin({ out, quickPath });
    const { port } = await listen(origin.server, 0, '127.0.0.1');
    return new ServerUnderTest(origin, port);
  }

  /** The server's side of a client's connection, once the server has taken it. */
  async serverSide(client: Socket): Promise<Socket> {
    for (let turn = 0; ; turn++) {
      const socket = this.sockets.get(client.localPort!);
      if (socket) return socket;
      if (turn > 10_000) throw new Error(`the server never took the connection from port ${client.localPort}`);
      await nextTurn();
    }
  }

  close(): Promise<void> {
    return closeGracefully(this.origin.server, 1000);
  }
}

/** What the client has seen so far. */
class ClientWatch {
  private readonly chunks: Buffer[] = [];
  /** When the client last saw anything (data, end, close). */
  lastSeen = performance.now();
  ended = false;
  closed = false;
  error: string | undefined;

  constructor(socket: Socket) {
    const seen = () => (this.lastSeen = performance.now());
    socket.on('data', (chunk: Buffer) => (this.chunks.push(chunk), seen()));
    socket.on('end', () => ((this.ended = true), seen()));
    socket.on('error', (error: NodeJS.ErrnoException) => ((this.error = error.code ?? error.message), seen()));
    socket.on('close', () => ((this.closed = true), seen()));
  }

  received(): Buffer {
    return Buffer.concat(this.chunks);
  }

  /** Waits until `done` holds, or the client's connection closes, or `ms` have passed. */
  async until(done: () => boolean, ms: number): Promise<void> {
    const deadline = performance.now() + ms;
    while (!done() && !this.closed && performance.now() < deadline) await nextTurn();
  }

  /** Two turns of the event loop (each with a poll for I/O) in a row with nothing new for the client. */
  async quietTurns(): Promise<void> {
    let quiet = 0;
    for (let turn = 0; turn < 50 && quiet < 2; turn++) {
      const before = this.lastSeen;
      await nextTurn();
      quiet = this.lastSeen === before ? quiet + 1 : 0;
    }
  }

  /**
   * The connection's fate: closed or reset once it closes; open once nothing has arrived for
   * `quietMs` while the server was at rest, or after `patienceMs` of waiting for rest. Each wait
   * ends with two turns that poll for I/O, so a process that stalled (a busy machine) sees what
   * arrived meanwhile before it calls a connection quiet.
   */
  async fate(quietMs: number, atRest: () => boolean, patienceMs = 2000): Promise<{ fate: Fate; restless: boolean }> {
    const giveUp = performance.now() + patienceMs;
    this.lastSeen = Math.max(this.lastSeen, performance.now());
    for (;;) {
      if (this.closed) return { fate: this.error !== undefined || !this.ended ? 'reset' : 'closed', restless: false };
      const idle = performance.now() - this.lastSeen;
      if (idle >= quietMs && atRest()) return { fate: 'open', restless: false };
      if (idle >= quietMs && performance.now() > giveUp) return { fate: 'open', restless: true };
      await sleep(Math.max(1, Math.min(quietMs - idle, 10)));
      await this.quietTurns();
    }
  }
}

/**
 * The server's side of the connection has nothing in hand: it has read all the client wrote, has no
 * answer in progress (Node's server keeps the one it is writing as the socket's `_httpMessage`,
 * pipelined ones queue behind it), has sent everything, and the client has read it all (unless it
 * does not read yet). It is neither closing nor paused.
 */
function atRest(server: Socket, client: Socket, clientReads: boolean): boolean {
  const answering = (server as Socket & { _httpMessage?: unknown })._httpMessage != null;
  return (
    !answering &&
    server.bytesRead === client.bytesWritten &&
    server.writableLength === 0 &&
    (!clientReads || server.bytesWritten === client.bytesRead) &&
    !server.writableEnded &&
    !server.isPaused()
  );
}

/**
 * Waits until the server has read `count` bytes of the connection, or closed it; false if it stopped
 * reading first (paused while the client does not read its answers: it will not read on until the
 * client does, so the next write waits in the kernel), or took too long.
 */
async function serverHasRead(server: Socket, count: number, clientReads: boolean): Promise<boolean> {
  const deadline = performance.now() + 250;
  while (server.bytesRead < count) {
    if (server.destroyed || server.readableEnded) return true;
    if ((server.isPaused() && !clientReads) || performance.now() > deadline) return false;
    await nextTurn();
  }
  return true;
}

/**
 * After a write the server has read: lets it answer, and its answers (and FIN) reach the client,
 * before the client writes more. A client that does not read cannot wait for answers (they wait
 * for it): it lets the server finish what it does at once.
 */
async function settle(watch: ClientWatch, server: Socket, client: Socket, clientReads: boolean): Promise<void> {
  if (clientReads) await watch.until(() => watch.ended || atRest(server, client, true), 1000);
  await watch.quietTurns();
}

/**
 * Writes `bytes` as the plan cuts them, each write once the server has read and answered the one
 * before; returns how many bytes were never written (the server closed first), and how many writes
 * stalled. A client that half-closes and reads at once also waits so after its last write: its FIN
 * then reaches a server at rest (Node's own server drops an answer it is still writing when the FIN
 * comes, or not, as timing has it: the control run shows it).
 */
async function deliver(
  client: Socket,
  watch: ClientWatch,
  server: Socket,
  bytes: Buffer,
  plan: Plan,
): Promise<{ unsent: number; stalls: number }> {
  const clientReads = plan.readLateMs === 0;
  const waitAfterLast = plan.halfClose && clientReads;
  let from = 0;
  let stalls = 0;
  for (const end of [...plan.cuts, bytes.length]) {
    // A client learns that the server closed before it writes more (the settle below saw to it).
    if (!client.writable || watch.closed) return { unsent: bytes.length - from, stalls };
    client.write(bytes.subarray(from, end));
    from = end;
    if (end === bytes.length && !waitAfterLast) break;
    if (!(await serverHasRead(server, end, clientReads))) stalls++;
    await settle(watch, server, client, clientReads);
  }
  return { unsent: 0, stalls };
}

/** One client's conversation with `server`: `bytes` delivered as `plan` says, and every byte of the answers. */
export async function converse(server: ServerUnderTest, bytes: Buffer, plan: Plan, quietMs: number): Promise<Conversation> {
  const client = connect(server.port, '127.0.0.1');
  const watch = new ClientWatch(client);
  try {
    await once(client, 'connect');
    const readsLate = plan.readLateMs > 0;
    if (readsLate) client.pause();
    const side = await server.serverSide(client);
    const { unsent, stalls } = await deliver(client, watch, side, bytes, plan);
    if (readsLate) {
      await sleep(plan.readLateMs);
      client.resume();
    }
    if (plan.halfClose && client.writable) {
      // One that reads late half-closes once it has its answers: Node's own server, paused with
      // answers waiting when a FIN comes, answers the requests it still holds or not, as timing has
      // it (the control run shows it).
      if (readsLate) await settle(watch, side, client, true);
      client.end();
    }
    const { fate, restless } = await watch.fate(quietMs, () => atRest(side, client, true));
    return { received: watch.received(), fate, error: watch.error, unsent, stalls, restless };
  } finally {
    client.destroy();
  }
}
