/**
 * The origin's quick path (src/hosting/serve/origin-server.ts, request-head.ts): what it answers must be
 * byte for byte what Node's request handling answers (Date aside), and whatever it leaves must reach
 * Node's server whole, on the same connection, in order. Real sockets on 127.0.0.1, a real snapshot.
 */
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeGracefully, createOrigin, listen, type Origin } from '../../src/hosting/serve/origin.js';
import { plainSoFar, readHead } from '../../src/hosting/serve/request-head.js';
import { buildSampleSnapshot, type Snapshot } from './fixture.js';

const bytes = (text: string) => Buffer.from(text, 'latin1');

describe('request heads', () => {
  const read = (text: string, start = 0) => readHead(bytes(text), start);

  it('reads the plain forms a CDN sends', () => {
    expect(read('GET /api/v1/users/Alice HTTP/1.1\r\nHost: x\r\n\r\n')).toEqual({
      method: 'GET',
      target: '/api/v1/users/Alice',
      ifNoneMatch: undefined,
      close: false,
      end: 'GET /api/v1/users/Alice HTTP/1.1\r\nHost: x\r\n\r\n'.length,
    });
    const head = read('HEAD /api/v1/users?username=bob HTTP/1.1\r\nhost:x\r\nIf-None-Match:  "ab"  \r\nCONNECTION: Close\r\n\r\n');
    expect(head).toMatchObject({ method: 'HEAD', target: '/api/v1/users?username=bob', ifNoneMatch: '"ab"', close: true });
    // A second head, read where the first ended.
    const two = 'GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n';
    const first = read(two);
    expect(typeof first === 'object' && read(two, first.end)).toMatchObject({ target: '/b', end: two.length });
  });

  it('says partial until the blank line, and leaves every other form to Node', () => {
    expect(read('GET /api/v1/users/alice HTTP/1.1\r\nHost: x\r\n')).toBe('partial');
    const others = [
      'POST /api/v1/users/alice HTTP/1.1\r\nHost: x\r\n\r\n',
      'OPTIONS /api/v1/users/alice HTTP/1.1\r\nHost: x\r\n\r\n',
      'GET /api/v1/users/alice HTTP/1.0\r\nHost: x\r\n\r\n',
      'GET /api/v1/users/al%69ce HTTP/1.1\r\nHost: x\r\n\r\n',
      'GET /api/v1/../users/alice HTTP/1.1\r\nHost: x\r\n\r\n'.replace('..', '..%2f'),
      'GET //api/v1/users/alice HTTP/1.1\r\nHost: x\r\n\r\n',
      'GET http://x/api/v1/users/alice HTTP/1.1\r\nHost: x\r\n\r\n',
      'GET /api/v1/users/alice HTTP/1.1\r\n\r\n',
      'GET /api/v1/users/alice HTTP/1.1\r\nHost:\r\n\r\n',
      'GET /api/v1/users/alice HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n',
      'GET /api/v1/users/alice HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n',
      'GET /api/v1/users/alice HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n',
      'GET /api/v1/users/alice HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n\r\n',
      'GET /api/v1/users/alice HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n',
      'GET /api/v1/users/alice HTTP/1.1\r\nHost: x\r\nIf-None-Match: "a"\r\nIf-None-Match: "b"\r\n\r\n',
      'GET /api/v1/users/alice HTTP/1.1\r\nHost: x\r\nX-Folded: a\r\n b\r\n\r\n',
      'GET /api/v1/users/alice HTTP/1.1\r\nHost : x\r\n\r\n',
      'GET /api/v1/users/alice HTTP/1.1\r\nHost: x\nX: y\r\n\r\n',
      'GET /api/v1/users/alice HTTP/1.1\r\nHost: x\r\nX: caf\xe9\r\n\r\n',
      `GET /api/v1/users/alice HTTP/1.1\r\nHost: x\r\nX: ${'a'.repeat(9000)}\r\n\r\n`,
    ];
    for (const text of others) expect(read(text), JSON.stringify(text.slice(0, 120))).toBe('other');
    // No blank line within the limit: never whole, so it is Node's to refuse.
    expect(read(`GET /api/v1/users/alice HTTP/1.1\r\nX: ${'a'.repeat(9000)}`)).toBe('other');
  });

  it('tells the beginning of a plain head from the beginning of anything else', () => {
    const soFar = (text: string) => plainSoFar(bytes(text), 0);
    for (const text of [
      'G',
      'GET',
      'HEAD /api/v1/us',
      'GET /a HTTP/1.',
      'GET /a HTTP/1.1\r',
      'GET /a HTTP/1.1\r\nHo',
      'GET /a HTTP/1.1\r\nHost: x\r\nIf-None-Match: "a',
    ])
      expect(soFar(text), JSON.stringify(text)).toBe(true);
    for (const text of [
      'g',
      'POST',
      'GET /a HTTP/1.0\r\n',
      'GET /a HTTP/1.1\r\nX-Folded: a\r\n b',
      'GET /a HTTP/1.1\r\nHost : x',
      'GET /a HTTP/1.1\r\nContent-Length: 1\r\n',
      'garbage',
    ])
      expect(soFar(text), JSON.stringify(text)).toBe(false);
  });
});

describe('answers on the quick path', () => {
  let snapshot: Snapshot;
  const servers: Record<'quick' | 'full', { origin: Origin; port: number; requests: number }> = {} as never;
  const logged: string[] = [];
  const counted: number[] = [];

  beforeAll(async () => {
    snapshot = buildSampleSnapshot();
    for (const name of ['quick', 'full'] as const) {
      const origin = createOrigin({
        out: snapshot.out,
        quickPath: name === 'quick',
        ...(name === 'quick' ? { log: (line: string) => logged.push(line), count: (status: number) => counted.push(status) } : {}),
      });
      const { port } = await listen(origin.server, 0, '127.0.0.1');
      servers[name] = { origin, port, requests: 0 };
      origin.server.on('request', () => servers[name].requests++);
    }
  });
  afterAll(async () => {
    for (const { origin } of Object.values(servers)) await closeGracefully(origin.server, 1000);
    snapshot?.cleanup();
  });

  /** Sends `parts` on one connection (waiting `gapMs` between them) and resolves with all it got, once the server closes it. */
  const converse = async (name: 'quick' | 'full', parts: string[], gapMs = 30): Promise<string> => {
    const socket = connect(servers[name].port, '127.0.0.1');
    await once(socket, 'connect');
    let got = '';
    socket.on('data', (d: Buffer) => (got += d.toString('latin1')));
    const ended = once(socket, 'close');
    for (const part of parts) {
      socket.write(bytes(part));
      await new Promise((resolve) => setTimeout(resolve, gapMs));
    }
    await ended;
    // Date is the one header the two paths may send apart (a second may turn between them): each
    // must still be Node's form of the current time.
    for (const [, date] of got.matchAll(/\r\nDate: ([^\r]*)\r\n/g)) {
      expect(date).toBe(new Date(Date.parse(date!)).toUTCString());
      expect(Math.abs(Date.parse(date!) - Date.now())).toBeLessThan(5000);
    }
    return got.replace(/\r\nDate: [^\r]*\r\n/g, '\r\nDate: -\r\n');
  };
  const both = async (parts: string[]) => {
    const [quick, full] = [await converse('quick', parts), await converse('full', parts)];
    expect(quick).toBe(full);
    return quick;
  };
  const get = (target: string, extra = '', method = 'GET') => `${method} ${target} HTTP/1.1\r\nHost: origin.test\r\n${extra}\r\n`;
  const last = (target: string) => get(target, 'Connection: close\r\n');

  it('the quick path is on, and answers what Node`s path answers, byte for byte', async () => {
    expect(servers.quick.origin.server.quickPath).toBe(true);
    expect(servers.full.origin.server.quickPath).toBe(false);
    const first = await both([last('/api/v1/users/alice')]);
    const etag = /\r\nETag: ([^\r]*)\r\n/.exec(first)![1]!;
    const forms = [
      get('/api/v1/users/alice'),
      get('/api/v1/users/ALICE', '', 'HEAD'),
      get('/service-api/v1/users/Alice', 'Connection: keep-alive\r\n'),
      get('/api/v1/users?username=aLiCe'),
      get('/api/v1/users/nobody'),
      get('/api/v1/users/nobody', '', 'HEAD'),
      get('/api/v1/users/alice', `If-None-Match: ${etag}\r\n`),
      get('/api/v1/users/alice', `If-None-Match: ${etag}\r\n`, 'HEAD'),
      get('/api/v1/users/nobody', `If-None-Match: ${etag}\r\n`),
      get('/api/v1/users/alice', 'If-None-Match: "stale"\r\nAccept-Encoding: gzip\r\nRange: bytes=0-3\r\n'),
      get('/api/v1/users'),
      get('/api/v1/users?username='),
      // Plain, with a dot segment: a traversal attempt, answered alike on both paths.
      get('/api/v1/users/../users/alice'),
    ];
    const requestsBefore = servers.quick.requests;
    // Each on its own connection, then all pipelined in one write.
    for (const form of forms) await both([form.replace(/(Connection: keep-alive\r\n)?\r\n$/, 'Connection: close\r\n\r\n')]);
    const pipelined = await both([forms.join('') + last('/api/v1/users/alice')]);
    expect(pipelined.match(/HTTP\/1\.1 \d{3} /g)).toHaveLength(forms.length + 1);
    expect(pipelined).toContain('HTTP/1.1 304 Not Modified');
    expect(pipelined).toContain('Keep-Alive: timeout=5');
    expect(servers.quick.requests - requestsBefore, 'requests that reached Node`s request handling').toBe(0);
  });

  it('hands a connection to Node`s server at the first request it cannot answer, with every byte', async () => {
    const requestsBefore = servers.quick.requests;
    const answers = await both([
      get('/api/v1/users/alice') + 'POST /api/v1/users/alice HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nab',
      'cd' + get('/api/v1/users/alice', '', 'OPTIONS') + 'GET /api/v1/users/al',
      'ice HTTP/1.1\r\nHost: x\r\n\r\n' + last('/api/v1/users/nobody'),
    ]);
    expect(answers.match(/HTTP\/1\.1 \d{3}/g)).toEqual(['HTTP/1.1 200', 'HTTP/1.1 405', 'HTTP/1.1 204', 'HTTP/1.1 200', 'HTTP/1.1 404']);
    // The first read holds a POST: Node's server read it whole, and answered the rest.
    expect(servers.quick.requests - requestsBefore).toBe(5);
    // Plain heads, then the beginning of one more: the heads are answered quick, Node's server reads the rest.
    const before = servers.quick.requests;
    const tail = await both([
      get('/api/v1/users/alice') + get('/api/v1/users/bob') + 'GET /api/v1/us',
      'ers/carol.dev HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    ]);
    expect(tail.match(/HTTP\/1\.1 \d{3}/g)).toEqual(['HTTP/1.1 200', 'HTTP/1.1 200', 'HTTP/1.1 200']);
    expect(servers.quick.requests - before).toBe(1);
    // A head split across reads from the start: Node's from its first byte.
    const split = await both(['GET /api/v1/us', 'ers/alice HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n']);
    expect(split).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
  });

  it('logs and counts its answers as the full path does', async () => {
    logged.length = 0;
    counted.length = 0;
    await converse('quick', [get('/api/v1/users/alice') + get('/api/v1/users/nobody', '', 'HEAD') + last('/api/v1/users/Alice"x')]);
    // The third on Node's path, counted all the same.
    expect(counted).toEqual([200, 404, 404]);
    expect(logged[0]).toMatch(/^\S+Z 127\.0\.0\.1 "GET" "\/api\/v1\/users\/alice" 200 \d+ \d+\.\dms$/);
    expect(logged[1]).toMatch(/ "HEAD" "\/api\/v1\/users\/nobody" 404 \d+ /);
    // The third target is not plain: Node's path answered and logged it.
    expect(logged[2]).toMatch(/ "GET" "\/api\/v1\/users\/Alice\\"x" 404 /);
  });

  it('stops reading from a client that sends and does not read, until it has taken its answers', async () => {
    const served: Socket[] = [];
    const take = (socket: Socket) => served.push(socket);
    servers.quick.origin.server.on('connection', take);
    const requestsBefore = servers.quick.requests;
    const client = connect(servers.quick.port, '127.0.0.1');
    await once(client, 'connect');
    client.pause();
    // Whole heads in each write, each its own read: the server has read one batch before the next is
    // sent, so the quick path answers them all (a head split across reads would hand the connection
    // to Node's server, which has backpressure of its own).
    const batch = bytes(get('/api/v1/users/alice').repeat(1000));
    let count = 0;
    let written = 0;
    const server = () => served.at(-1);
    const sleep = () => new Promise((resolve) => setTimeout(resolve, 5));
    for (let i = 0; i < 40 && !server()?.isPaused(); i++) {
      client.write(batch);
      written += batch.length;
      count += 1000;
      while (!server() || (server()!.bytesRead < written && !server()!.isPaused())) await sleep();
    }
    expect(server()!.isPaused(), 'the server stopped reading').toBe(true);
    expect(servers.quick.requests, 'requests that reached Node`s request handling').toBe(requestsBefore);
    const deadline = Date.now() + 5000;
    // Reading now: every answer arrives, and the server reads again.
    const mark = 'HTTP/1.1 200 OK';
    let answered = 0;
    let carry = '';
    client.on('data', (d: Buffer) => {
      // The carried tail is shorter than the mark: no match is counted twice.
      const text = carry + d.toString('latin1');
      answered += text.split(mark).length - 1;
      carry = text.slice(-(mark.length - 1));
    });
    client.resume();
    while (answered < count && Date.now() < deadline + 15_000) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(answered).toBe(count);
    client.destroy();
    servers.quick.origin.server.off('connection', take);
  });

  it('closes a quick connection left idle for the keep-alive timeout, as Node does', async () => {
    const origin = createOrigin({ out: snapshot.out });
    origin.server.keepAliveTimeout = 300;
    const { port } = await listen(origin.server, 0, '127.0.0.1');
    try {
      const socket = connect(port, '127.0.0.1');
      let got = '';
      socket.on('data', (d: Buffer) => (got += d.toString('latin1')));
      const closed = once(socket, 'close');
      socket.write(bytes(get('/api/v1/users/alice')));
      const started = Date.now();
      await closed;
      expect(got).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*Keep-Alive: timeout=0\r\n/);
      expect(Date.now() - started).toBeGreaterThanOrEqual(250);
      expect(Date.now() - started).toBeLessThan(4000);
    } finally {
      await closeGracefully(origin.server, 1000);
    }
  });

  it('ends idle quick connections when closing, and drains', async () => {
    const origin = createOrigin({ out: snapshot.out });
    const { port } = await listen(origin.server, 0, '127.0.0.1');
    const idle = connect(port, '127.0.0.1');
    let got = '';
    idle.on('data', (d: Buffer) => (got += d.toString('latin1')));
    idle.write(bytes(get('/api/v1/users/alice')));
    while (!got.includes('}')) await new Promise((resolve) => setTimeout(resolve, 10));
    const closed = once(idle, 'close');
    const started = Date.now();
    await closeGracefully(origin.server, 5000);
    await closed;
    // Ended at once as idle, not cut at the grace period.
    expect(Date.now() - started).toBeLessThan(4000);
    expect(got).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
  });
});
