/**
 * What a client can make the origin's quick path hold, and how it leaves a connection: the same
 * bounds, order and fate as Node's own server (src/hosting/serve/quick-connection.ts). Real sockets on
 * 127.0.0.1, a real snapshot, the server as a whole process where its memory is what is measured.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, statSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeGracefully, createOrigin, listen, type Origin } from '../../src/hosting/serve/origin.js';
import { canMount, sh } from '../helpers/mount.js';
import { buildSampleSnapshot, REPO, type Snapshot } from './fixture.js';

let snapshot: Snapshot;
beforeAll(() => {
  snapshot = buildSampleSnapshot();
});
afterAll(() => snapshot?.cleanup());

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const get = (target: string, extra = '') => `GET ${target} HTTP/1.1\r\nHost: origin.test\r\n${extra}\r\n`;

/** The largest document the route table serves (the contract, 42 KB): the answer that fills a socket fastest. */
const LARGEST = '/api/v1/openapi.json';

/** Both origins in this process, quick path on and off, with the given server settings. */
async function origins(settings: Partial<Record<'keepAliveTimeout' | 'headersTimeout' | 'keepAliveTimeoutBuffer', number>> = {}) {
  const made: Record<'quick' | 'full', { origin: Origin; port: number }> = {} as never;
  for (const name of ['quick', 'full'] as const) {
    const origin = createOrigin({ out: snapshot.out, quickPath: name === 'quick' });
    Object.assign(origin.server, settings);
    const { port } = await listen(origin.server, 0, '127.0.0.1');
    made[name] = { origin, port };
  }
  return {
    ...made,
    close: async () => {
      for (const { origin } of Object.values(made)) await closeGracefully(origin.server, 500);
    },
  };
}

/** A client connection that records what it gets and how the server left it. */
async function client(port: number) {
  const socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  const state = { got: '', ended: false, closedAt: 0 };
  socket.on('data', (d: Buffer) => (state.got += d.toString('latin1')));
  socket.on('end', () => (state.ended = true));
  socket.on('error', () => {});
  socket.on('close', () => (state.closedAt = Date.now()));
  return { socket, state };
}

const statuses = (text: string) => [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));
const withoutDates = (text: string) => text.replace(/\r\nDate: [^\r]*\r\n/g, '\r\nDate: -\r\n');

describe('memory per connection', () => {
  /** An origin as a whole process (the built library), so that its RSS is the server's own figure. */
  async function originProcess(quickPath: boolean): Promise<{ child: ChildProcess; port: number }> {
    const origin = pathToFileURL(join(REPO, 'build/hosting/serve/origin.js')).href;
    const code = `const { createOrigin, listen } = await import(${JSON.stringify(origin)});
      const { server } = createOrigin({ out: ${JSON.stringify(snapshot.out)}, quickPath: ${quickPath} });
      const { port } = await listen(server, 0, '127.0.0.1');
      console.log(port);`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
    const [line] = (await once(child.stdout!, 'data')) as [Buffer];
    return { child, port: Number(line.toString().trim()) };
  }

  const rssOf = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;

  /** 20 clients each write 64 KiB of pipelined GETs of the largest document and never read: the server's growth. */
  async function growthUnderNonReaders(quickPath: boolean): Promise<number> {
    const { child, port } = await originProcess(quickPath);
    const sockets: Socket[] = [];
    try {
      const target = LARGEST;
      const warm = await client(port);
      warm.socket.write(get(target, 'Connection: close\r\n'));
      await once(warm.socket, 'close');
      await sleep(200);
      const baseline = rssOf(child.pid!);
      const one = get(target);
      const pipeline = Buffer.from(one.repeat(Math.ceil(65536 / one.length)), 'latin1');
      for (let i = 0; i < 20; i++) {
        const socket = connect(port, '127.0.0.1');
        socket.on('error', () => {});
        socket.pause();
        socket.write(pipeline);
        sockets.push(socket);
      }
      let peak = baseline;
      // Long enough for an unbounded server to answer every head (it took under a second).
      for (const until = Date.now() + 2500; Date.now() < until && peak - baseline < 2 ** 30;) {
        await sleep(50);
        peak = Math.max(peak, rssOf(child.pid!));
      }
      // Still serving others meanwhile.
      const other = await client(port);
      other.socket.write(get(target, 'Connection: close\r\n'));
      await once(other.socket, 'close');
      expect(statuses(other.state.got)).toEqual([200]);
      return peak - baseline;
    } finally {
      for (const socket of sockets) socket.destroy();
      child.kill();
    }
  }

  it('20 clients that pipeline and never read grow the server no more than Node`s own path, and under 150 MB', async () => {
    const full = await growthUnderNonReaders(false);
    const quick = await growthUnderNonReaders(true);
    const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
    console.log(`growth under 20 non-reading clients: quick path ${mb(quick)}, Node's path ${mb(full)}`);
    expect(quick, `quick path ${mb(quick)} against Node's path ${mb(full)}`).toBeLessThanOrEqual(Math.max(full, 16 * 2 ** 20));
    expect(quick).toBeLessThan(150 * 2 ** 20);
  }, 30_000);
});

describe('order and backpressure across the hand-over', () => {
  it('answers in request order when Node`s server takes over a connection the quick path had stopped reading', async () => {
    const both = await origins();
    try {
      for (const name of ['quick', 'full'] as const) {
        const { socket, state } = await client(both[name].port);
        socket.pause();
        socket.write(get(LARGEST).repeat(1000) + 'OPTIONS /api/v1/users/alice HTTP/1.1\r\nHost: x\r\n\r\n');
        await sleep(150);
        socket.write(get('/api/v1/users/bob') + get('/api/v1/users/frank', 'Connection: close\r\n'));
        await sleep(150);
        socket.resume();
        await once(socket, 'close');
        const got = statuses(state.got);
        expect(got, name).toHaveLength(1003);
        expect(got.slice(-3), name).toEqual([204, 200, 200]);
        const users = [...state.got.matchAll(/"username":"([^"]+)"/g)].map((m) => m[1]);
        expect(users.slice(-2), name).toEqual(['bob', 'frank']);
      }
    } finally {
      await both.close();
    }
  }, 20_000);
});

describe('connection fate as Node`s server decides it', () => {
  /** The same conversation with both origins: what each answered (Date aside) and how it left the connection. */
  async function fates(both: Awaited<ReturnType<typeof origins>>, talk: (socket: Socket) => Promise<void>, waitMs: number) {
    const seen: Record<string, { got: string; ended: boolean; closedAfter: number | undefined }> = {};
    await Promise.all(
      (['quick', 'full'] as const).map(async (name) => {
        const { socket, state } = await client(both[name].port);
        const started = Date.now();
        await talk(socket);
        for (const until = Date.now() + waitMs; Date.now() < until && !state.closedAt;) await sleep(10);
        seen[name] = {
          got: withoutDates(state.got),
          ended: state.ended,
          closedAfter: state.closedAt ? state.closedAt - started : undefined,
        };
        socket.destroy();
      }),
    );
    expect(seen.quick!.got).toBe(seen.full!.got);
    expect(seen.quick!.ended).toBe(seen.full!.ended);
    return seen as Record<'quick' | 'full', (typeof seen)[string]>;
  }

  it('ends a half-closed connection once its answer is out', async () => {
    const both = await origins();
    try {
      const seen = await fates(both, async (socket) => void socket.end(get('/api/v1/users/alice')), 3000);
      for (const name of ['quick', 'full'] as const) {
        expect(statuses(seen[name].got), name).toEqual([200]);
        expect(seen[name].closedAfter, name).toBeLessThan(1000);
      }
    } finally {
      await both.close();
    }
  });

  it('closes after `Connection: close` at once, and keeps an idle connection keepAliveTimeout plus its buffer', async () => {
    const both = await origins({ keepAliveTimeout: 300, keepAliveTimeoutBuffer: 400 });
    try {
      const closing = await fates(both, async (socket) => void socket.write(get('/api/v1/users/alice', 'Connection: close\r\n')), 3000);
      for (const name of ['quick', 'full'] as const) expect(closing[name].closedAfter, name).toBeLessThan(250);
      const idle = await fates(both, async (socket) => void socket.write(get('/api/v1/users/alice')), 3000);
      expect(idle.quick.got).toContain('Keep-Alive: timeout=0\r\n');
      for (const name of ['quick', 'full'] as const) {
        expect(idle[name].closedAfter, name).toBeGreaterThanOrEqual(650);
        expect(idle[name].closedAfter, name).toBeLessThan(1500);
      }
    } finally {
      await both.close();
    }
  });

  it('with keepAliveTimeout 0: no Keep-Alive line and no idle timer', async () => {
    const both = await origins({ keepAliveTimeout: 0 });
    try {
      const seen = await fates(both, async (socket) => void socket.write(get('/api/v1/users/alice')), 1500);
      expect(seen.quick.got).toContain('Connection: keep-alive\r\n');
      expect(seen.quick.got).not.toContain('Keep-Alive:');
      for (const name of ['quick', 'full'] as const) expect(seen[name].closedAfter, name).toBeUndefined();
    } finally {
      await both.close();
    }
  });

  it('answers 408 to a connection that sends no request within the headers timeout', async () => {
    const settings = { headersTimeout: 300, connectionsCheckingInterval: 100 };
    const made: Origin[] = [];
    const seen: Record<string, { got: string; closedAfter: number }> = {};
    try {
      for (const quickPath of [true, false]) {
        // connectionsCheckingInterval is read when the server starts listening.
        const origin = createOrigin({ out: snapshot.out, quickPath });
        Object.assign(origin.server, settings);
        made.push(origin);
        const { port } = await listen(origin.server, 0, '127.0.0.1');
        const { socket, state } = await client(port);
        const started = Date.now();
        await once(socket, 'close');
        seen[String(quickPath)] = { got: state.got, closedAfter: Date.now() - started };
      }
      expect(seen.true!.got).toBe(seen.false!.got);
      expect(seen.true!.got).toBe('HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n');
      for (const { closedAfter } of Object.values(seen)) expect(closedAfter).toBeGreaterThanOrEqual(250);
    } finally {
      for (const origin of made) await closeGracefully(origin.server, 500);
    }
  });
});

describe('graceful close', () => {
  it('answers every request already read, and a new connection`s request inside the grace period', async () => {
    const origin = createOrigin({ out: snapshot.out });
    const { port } = await listen(origin.server, 0, '127.0.0.1');
    const busy = await client(port);
    busy.socket.pause();
    busy.socket.write(get('/api/v1/users/alice').repeat(300));
    const fresh = await client(port);
    await sleep(150);
    const started = Date.now();
    const closed = closeGracefully(origin.server, 3000);
    await sleep(150);
    fresh.socket.write(get('/api/v1/users/bob'));
    busy.socket.resume();
    await closed;
    await sleep(50);
    expect(statuses(busy.state.got)).toHaveLength(300);
    expect(statuses(fresh.state.got)).toEqual([200]);
    // Each closed once idle, not cut at the end of the grace period.
    expect(Date.now() - started).toBeLessThan(2500);
    expect(busy.state.closedAt && fresh.state.closedAt).toBeTruthy();
  });
});

describe('a failing read', () => {
  // A sysfs attribute whose read fails (EINVAL), bind-mounted over a profile: a real read error
  // behind a regular file of plausible size, as a failing disk would give.
  const failing = '/sys/class/net/lo/speed';
  const usable = canMount && (() => sh('cat', failing).status !== 0 && statSync(failing).isFile())();

  it.skipIf(!usable)('answers 500 as Node`s path does, and the server keeps serving', async () => {
    const both = await origins();
    const profile = join(snapshot.out, 'api/v1/users/alice');
    const mounted = sh('mount', '--bind', failing, profile);
    expect(mounted.status, mounted.stderr).toBe(0);
    try {
      const answers: Record<string, string> = {};
      for (const name of ['quick', 'full'] as const) {
        const { socket, state } = await client(both[name].port);
        socket.write(get('/api/v1/users/alice') + get('/api/v1/users/bob', 'Connection: close\r\n'));
        await once(socket, 'close');
        answers[name] = withoutDates(state.got);
      }
      expect(statuses(answers.quick!)).toEqual([500, 200]);
      expect(answers.quick).toBe(answers.full);
    } finally {
      sh('umount', '-l', profile);
      await both.close();
    }
  });
});
