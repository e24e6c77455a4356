/**
 * The origin server beyond the request table: caching validators, HEAD, methods, what must never be
 * served (directories, dotfiles, bookkeeping, anything outside --out), abuse, the access log.
 * Real serve-handler, real HTTP on 127.0.0.1, a real snapshot.
 */
import { readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Agent, request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeGracefully, createOrigin, listen } from '../../src/hosting/serve/origin.js';
import { createServer } from 'node:http';
import { buildSampleSnapshot, growCreatorsList, type Snapshot } from './fixture.js';
import { CONTRACT, gzipNegotiationFailures, send, type Answer } from './request-table.js';

let snapshot: Snapshot;
let origin: string;
let close: () => Promise<void>;
const logLines: string[] = [];
const SECRET = 'TOP-SECRET-OUTSIDE-THE-OUT-DIR';

beforeAll(async () => {
  snapshot = buildSampleSnapshot();
  // Next to the out dir, as a real deployment has its store next to dist/: must never be reachable.
  writeFileSync(join(snapshot.root, 'secret.txt'), SECRET);
  const { server } = createOrigin({ out: snapshot.out, log: (line) => logLines.push(line) });
  const address = await listen(server, 0, '127.0.0.1');
  origin = `http://127.0.0.1:${address.port}`;
  close = () =>
    new Promise((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
});

afterAll(async () => {
  await close?.();
  snapshot?.cleanup();
});

const expectContract = (a: Answer) => {
  for (const [name, value] of Object.entries(CONTRACT)) expect(a.headers[name], name).toBe(value);
};
const errorCode = (a: Answer) => (JSON.parse(a.body) as { error: { code: string } }).error.code;

describe('the creators list, gzip', () => {
  it('sends the gzip variant to a client that accepts gzip, as nginx gzip_static does, and the list to others', async () => {
    const list = readFileSync(join(snapshot.out, 'service-api/v1/creators'));
    expect(await gzipNegotiationFailures((method, target, headers) => send(origin, method, target, headers), list)).toEqual([]);
  });

  it('sends the list to every client when the snapshot has no variant', async () => {
    const variant = join(snapshot.out, 'service-api/v1/.creators.gz');
    const kept = readFileSync(variant);
    rmSync(variant);
    try {
      const answer = await send(origin, 'GET', '/service-api/v1/creators', { 'accept-encoding': 'gzip' });
      expect(answer.headers['content-encoding']).toBeUndefined();
      expect(answer.raw).toEqual(readFileSync(join(snapshot.out, 'service-api/v1/creators')));
    } finally {
      writeFileSync(variant, kept);
    }
  });
});

describe('caching validators', () => {
  it('sends a strong ETag and answers If-None-Match with 304 and the contract headers', async () => {
    const first = await send(origin, 'GET', '/api/v1/users/alice');
    expect(first.status).toBe(200);
    const etag = first.headers.etag;
    expect(etag).toMatch(/^"[0-9a-f]{40}"$/);
    const again = await send(origin, 'GET', '/api/v1/users/ALICE', { 'if-none-match': etag! });
    expect(again.status).toBe(304);
    expect(again.body).toBe('');
    expectContract(again);
    const other = await send(origin, 'GET', '/api/v1/users/alice', { 'if-none-match': '"0000"' });
    expect(other.status).toBe(200);
  });

  it('never answers 304 in place of an error', async () => {
    const miss = await send(origin, 'GET', '/api/v1/users/nobody');
    expect(miss.status).toBe(404);
    const again = await send(origin, 'GET', '/api/v1/users/nobody', { 'if-none-match': miss.headers.etag ?? '"x"' });
    expect(again.status).toBe(404);
    expect(errorCode(again)).toBe('USER_NOT_FOUND');
  });
});

describe('methods', () => {
  it('HEAD has the GET headers (length included) and no body', async () => {
    const get = await send(origin, 'GET', '/service-api/v1/creators');
    const head = await send(origin, 'HEAD', '/service-api/v1/creators');
    expect(head.status).toBe(200);
    expect(head.body).toBe('');
    expect(head.headers['content-length']).toBe(String(Buffer.byteLength(get.body)));
    expect(head.headers.etag).toBe(get.headers.etag);
    expectContract(head);
  });

  it('answers OPTIONS with 204 and CORS headers on every API path, static ones included', async () => {
    for (const target of ['/api/v1/users/alice', '/service-api/v1/creators', '/api/v1/nope']) {
      const a = await send(origin, 'OPTIONS', target, {
        origin: 'https://example.org',
        'access-control-request-method': 'GET',
        'access-control-request-headers': 'x-requested-with',
      });
      expect(a.status, target).toBe(204);
      expectContract(a);
      expect(a.headers['access-control-allow-headers']).toBe('*');
    }
  });

  it('answers other methods with the 405 JSON error and an Allow header', async () => {
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH', 'TRACE', 'PROPFIND']) {
      const a = await send(origin, method, '/api/v1/users/alice');
      expect(a.status, method).toBe(405);
      expectContract(a);
      expect(a.headers.allow).toBe('GET, HEAD, OPTIONS');
      expect(errorCode(a)).toBe('METHOD_NOT_ALLOWED');
    }
  });
});

describe('what is never served', () => {
  it('no directory listings', async () => {
    for (const target of ['/service-api/v1/users/', '/service-api/v1/', '/api/v1/', '/_errors/', '/api/']) {
      const a = await send(origin, 'GET', target);
      expect(a.status, target).toBe(404);
      expect(a.body, target).not.toMatch(/alice|dave_99|not-found\.json|<a /);
    }
  });

  it('no dotfiles or bookkeeping files, however the path is spelled', async () => {
    const manifest = readFileSync(join(snapshot.out, '.profile-snapshot/manifest'), 'utf8').slice(0, 40);
    for (const target of [
      '/.profile-snapshot/manifest',
      '/%2eprofile-snapshot/manifest',
      '/api/v1/users/.hidden',
      '/api/v1/../.profile-snapshot/manifest',
      '/api/v1/users/..%2f..%2f..%2f.profile-snapshot%2fmanifest',
      '/.profile-snapshot/',
    ]) {
      const a = await send(origin, 'GET', target);
      expect(a.status, target).toBe(404);
      expect(a.body, target).not.toContain(manifest);
    }
  });

  it('Range is ignored: the whole document, 200, no partial content advertised', async () => {
    const whole = await send(origin, 'GET', '/api/v1/users/alice');
    for (const range of ['bytes=0-9', 'bytes=5-', 'bytes=-3', 'bytes=999999-', 'bytes=0-1,4-5', 'pages=1']) {
      const a = await send(origin, 'GET', '/api/v1/users/alice', { range });
      expect(a.status, range).toBe(200);
      expect(a.body).toBe(whole.body);
      expect(a.headers['content-range']).toBeUndefined();
      expect(a.headers['accept-ranges']).toBe('none');
    }
  });
});

describe('symlinks inside --out', () => {
  it('a folder symlink is followed on every path, wherever it points; a symlink in place of a document is missing', async () => {
    const own = buildSampleSnapshot();
    // The list beyond what the cache reads: serve-handler's path answers it.
    const list = growCreatorsList(own.out);
    const alice = readFileSync(join(own.out, 'service-api/v1/users/alice'));
    // service-api/v1 moved out of --out, a symlink left in its place.
    renameSync(join(own.out, 'service-api/v1'), join(own.root, 'elsewhere'));
    symlinkSync(join(own.root, 'elsewhere'), join(own.out, 'service-api/v1'));
    // A document replaced by a symlink to the same bytes.
    renameSync(join(own.out, 'api/v1/users/bob'), join(own.root, 'bob'));
    symlinkSync(join(own.root, 'bob'), join(own.out, 'api/v1/users/bob'));
    try {
      for (const quickPath of [true, false]) {
        const served = createOrigin({ out: own.out, quickPath });
        const { port } = await listen(served.server, 0, '127.0.0.1');
        const at = `http://127.0.0.1:${port}`;
        try {
          expect((await send(at, 'GET', '/service-api/v1/users/Alice')).raw).toEqual(alice);
          expect((await send(at, 'GET', '/service-api/v1/creators')).raw).toEqual(list);
          expect((await send(at, 'GET', '/service-api/v1/users/bob')).status).toBe(200);
          const bob = await send(at, 'GET', '/api/v1/users/bob');
          expect([bob.status, errorCode(bob)]).toEqual([404, 'USER_NOT_FOUND']);
        } finally {
          await closeGracefully(served.server, 1000);
        }
      }
    } finally {
      own.cleanup();
    }
  });
});

describe('abuse', () => {
  const TRAVERSALS = [
    '/../secret.txt',
    '/../../../../etc/passwd',
    '/%2e%2e/secret.txt',
    '/%2E%2E/%2e%2e/etc/passwd',
    '/..%2fsecret.txt',
    '/%2e%2e%2fsecret.txt',
    '/api/v1/users/..%2f..%2f..%2f..%2fsecret.txt',
    '/api/v1/users/%2e%2e',
    '/api/v1/users/%2E%2E%2F%2E%2E%2Fsecret.txt',
    '/service-api/v1/users/..%5c..%5c..%5csecret.txt',
    '/api/v1/..%2f..%2f..%2fprofiles.db',
    '/api/v1/users?username=..%2f..%2f..%2fsecret.txt',
    '/api/v1/users?username=../../../profiles.db',
    '/%2e%2e/profiles.db',
    '/api/v1/users/alice%2f..%2f..%2f..%2f..%2fsecret.txt',
    '/api/v1/users/%00',
    '/api/v1/users/alice%00.json',
    '//etc/passwd',
    '/.%2e/secret.txt',
    '/api/v1/users/%252e%252e%252fsecret.txt',
  ];

  it('path traversal never escapes --out and gets the JSON 404', async () => {
    for (const target of TRAVERSALS) {
      const a = await send(origin, 'GET', target);
      expect(a.status, target).toBe(404);
      expect(a.body, target).not.toContain(SECRET);
      expect(a.body, target).not.toContain('SQLite format');
      expect(a.body, target).not.toContain('root:');
      if (target.startsWith('//')) continue; // an absolute-form look-alike: just never the file
      expectContract(a);
      expect(['NOT_FOUND', 'USER_NOT_FOUND'], target).toContain(errorCode(a));
    }
  });

  it('encoded slashes in a username are a miss, not a path', async () => {
    for (const target of ['/api/v1/users/alice%2Fx', '/api/v1/users/alice%2fbadges', '/service-api/v1/users/a%2Fb%2Fc']) {
      const a = await send(origin, 'GET', target);
      expect(a.status, target).toBe(404);
      expect(errorCode(a), target).toBe('USER_NOT_FOUND');
    }
  });

  it('malformed percent-encoding is the JSON 404, not a crash', async () => {
    for (const target of ['/api/v1/users/%E0%A4%A', '/api/v1/users/%zz', '/%', '/api/v1/users?username=%E0%A4%A']) {
      const a = await send(origin, 'GET', target);
      expect(a.status, target).toBeGreaterThanOrEqual(400);
      expect(a.status, target).toBeLessThan(500);
      expectContract(a);
    }
  });

  it('very long paths get the JSON 404; oversized request heads are refused and the server lives on', async () => {
    const long = await send(origin, 'GET', `/api/v1/users/${'A'.repeat(8000)}`);
    expect(long.status).toBe(404);
    expect(errorCode(long)).toBe('USER_NOT_FOUND');
    const longUnknown = await send(origin, 'GET', `/api/v1/${'x/'.repeat(4000)}`);
    expect(longUnknown.status).toBe(404);
    expect(errorCode(longUnknown)).toBe('NOT_FOUND');
    const huge = await send(origin, 'GET', `/api/v1/users/${'a'.repeat(100_000)}`).catch((e: Error) => ({
      status: 0,
      body: e.message,
      headers: {},
    }));
    expect([0, 431]).toContain(huge.status);
    const after = await send(origin, 'GET', '/api/v1/users/alice');
    expect(after.status).toBe(200);
  });

  it('a profile removed after routing (a rebuild in between) is USER_NOT_FOUND, not an HTML error', async () => {
    const file = join(snapshot.out, 'api/v1/users/zoe');
    const saved = readFileSync(file);
    rmSync(file);
    try {
      const a = await send(origin, 'GET', '/api/v1/users/Zoe');
      expect(a.status).toBe(404);
      expectContract(a);
      expect(errorCode(a)).toBe('USER_NOT_FOUND');
    } finally {
      writeFileSync(file, saved);
    }
  });

  it('many concurrent requests on kept-alive connections all answer', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 8 });
    const one = (path: string) =>
      new Promise<number>((resolve, reject) => {
        const req = httpRequest(`${origin}${path}`, { agent }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
        req.end();
      });
    const statuses = await Promise.all(
      Array.from({ length: 200 }, (_, i) => one(i % 2 ? '/api/v1/users/ALICE' : '/api/v1/users?username=nobody')),
    );
    agent.destroy();
    expect(statuses.filter((s) => s === 200).length).toBe(100);
    expect(statuses.filter((s) => s === 404).length).toBe(100);
  });
});

describe('access log', () => {
  it('writes one line per request with method, target, status', async () => {
    const marker = `log-${Date.now()}`;
    await send(origin, 'GET', `/api/v1/users/alice?${marker}`);
    await send(origin, 'POST', `/api/v1/users/alice?${marker}`);
    await send(origin, 'GET', `/api/v1/users/x%0d%0aFAKE%20200?${marker}`);
    // A line is written when the response closes; under load that can trail the client a little.
    const mine = () => logLines.filter((l) => l.includes(marker));
    for (let i = 0; i < 100 && mine().length < 3; i++) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 50));
    const lines = mine();
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(
      new RegExp(`^\\d{4}-\\d\\d-\\d\\dT\\S+Z 127\\.0\\.0\\.1 "GET" "/api/v1/users/alice\\?${marker}" 200 \\d+ [\\d.]+ms$`),
    );
    expect(lines[1]).toContain('"POST"');
    expect(lines[1]).toContain(' 405 ');
    for (const line of lines) expect(line).not.toMatch(/[\r\n]/);
  });
});

describe('graceful shutdown', () => {
  it('lets a request in flight finish, refuses new connections, and ends idle ones at once', async () => {
    // The origin's own requests take microseconds; a slow handler stands for a slow one in flight.
    const slow = createServer((_req, res) => setTimeout(() => res.end('done'), 300));
    const { port } = await listen(slow, 0, '127.0.0.1');
    const idle = new Agent({ keepAlive: true });
    await new Promise<void>((resolve) =>
      httpRequest(`http://127.0.0.1:${port}/`, { agent: idle }, (res) => {
        res.resume();
        res.on('end', resolve);
      }).end(),
    );
    const inFlight = new Promise<string>((resolve, reject) => {
      httpRequest(`http://127.0.0.1:${port}/`, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => {
          body += c.toString();
        });
        res.on('end', () => resolve(body));
      })
        .on('error', reject)
        .end();
    });
    await new Promise((r) => setTimeout(r, 50));
    const started = Date.now();
    const closed = closeGracefully(slow, 5000);
    await expect(inFlight).resolves.toBe('done');
    await closed;
    expect(Date.now() - started).toBeLessThan(2000);
    await expect(send(`http://127.0.0.1:${port}`, 'GET', '/')).rejects.toThrow();
    idle.destroy();
  });
});
