/**
 * `serve` with several worker processes sharing its port (hosting/serve/cluster.ts), as a real process
 * through the compiled CLI: every worker answers and sees a rebuild at once; a worker killed under
 * load is replaced, failing no request but those it held; SIGTERM drains every worker; /metrics and
 * /healthz speak for the whole server; a busy port is one clear line.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { connect, createServer, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { build } from '../../src/build.js';
import { serveOptions } from '../../src/cli/commands/serve.js';
import { runCli, startCli } from '../helpers/process.js';
import { execSql } from '../helpers/store.js';
import { buildSampleSnapshot, type Snapshot } from './fixture.js';

let snapshot: Snapshot;
beforeAll(() => {
  snapshot = buildSampleSnapshot();
});
afterAll(() => snapshot?.cleanup());

/** `serve` as a process with its metrics on a free port; settles once both addresses are printed. */
async function startServe(args: string[]) {
  const proc = startCli(['serve', '--out', snapshot.out, '--port', '0', '--metrics', '0', ...args]);
  const base = (await proc.waitForStderr(/serving .* on (http:\/\/\S+)/))[1]!;
  const metrics = (await proc.waitForStderr(/metrics on (http:\/\/\S+)\/metrics/))[1]!;
  return { ...proc, base, metrics };
}

/** One request on a connection of its own (no keep-alive: the cluster hands each connection to the next worker). */
const get = (url: string, timeoutMs = 5000) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = httpRequest(url, { agent: false, timeout: timeoutMs }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end();
  });

/** An answer's status, headers (but the date, which moves) and body, on a connection of its own. */
const answer = (base: string, method: string, target: string, headers: Record<string, string> = {}) =>
  new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }>((resolve, reject) => {
    const req = httpRequest(`${base}${target}`, { method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const { date: _date, ...rest } = res.headers;
        resolve({ status: res.statusCode ?? 0, headers: rest, body: Buffer.concat(chunks).toString('base64') });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });

/** Answers counted per worker slot (all statuses), from /metrics. */
async function answersBySlot(metrics: string): Promise<Map<string, number>> {
  const text = (await get(`${metrics}/metrics`)).body;
  const bySlot = new Map<string, number>();
  for (const [, slot, count] of text.matchAll(/^profile_snapshot_serve_answers_total\{worker="(\d+)",status="\dxx"\} (\d+)$/gm))
    bySlot.set(slot!, (bySlot.get(slot!) ?? 0) + Number(count));
  return bySlot;
}

/** Until `check` passes (the workers report their answers every second). */
async function eventually(check: () => Promise<void>, timeoutMs = 5000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > until) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/** Worker processes set up to serve `port`, wherever they are (an orphan included). */
function workersServing(port: number): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/environ`, 'utf8').includes(`"port":${port},`);
      } catch {
        return false; // gone meanwhile, or not ours to read
      }
    })
    .map(Number);
}

const workerPids = (primary: number): number[] =>
  execFileSync('ps', ['-o', 'pid=', '--ppid', String(primary)], { encoding: 'utf8' })
    .split('\n')
    .map((line) => Number(line.trim()))
    .filter((pid) => pid > 0);

describe('serve with several workers', () => {
  it('answers from every worker, and every worker sees a rebuild at once', async () => {
    const serve = await startServe(['--workers', '3']);
    try {
      const alice = `${serve.base}/api/v1/users/alice`;
      const before = await get(alice);
      expect(before.status).toBe(200);
      for (let i = 0; i < 12; i++) expect(await get(alice)).toEqual(before);
      let counted = new Map<string, number>();
      await eventually(async () => {
        counted = await answersBySlot(serve.metrics);
        expect([...counted.values()].filter((n) => n > 0)).toHaveLength(3);
      });
      // A rebuild into the same out dir: the tree is swapped atomically under the running server.
      execSql(snapshot.db, "UPDATE users SET display_name = 'Alice Rebuilt' WHERE username = 'Alice'");
      build({
        db: snapshot.db,
        out: snapshot.out,
        baseUrl: 'https://profiles.example.com',
        snapshotMs: Date.UTC(2026, 0, 1),
        reproducible: true,
      });
      const after = await Promise.all(Array.from({ length: 12 }, () => get(alice)));
      for (const answer of after) {
        expect(answer.status).toBe(200);
        expect(answer.body).toContain('Alice Rebuilt');
      }
      // Every worker answered some of those twelve: each saw the new tree.
      await eventually(async () => {
        const now = await answersBySlot(serve.metrics);
        for (const slot of ['0', '1', '2']) expect(now.get(slot)).toBeGreaterThan(counted.get(slot)!);
      });
    } finally {
      expect((await serve.stop()).code).toBe(0);
    }
  });

  it('answers every request form byte for byte as one process does: headers, 304, Vary, the gzip variant', async () => {
    const one = await startServe(['--workers', '1']);
    const three = await startServe(['--workers', '3']);
    try {
      const etag = String((await answer(one.base, 'GET', '/api/v1/users/Alice')).headers.etag);
      const forms: [string, string, Record<string, string>][] = [
        ['GET', '/api/v1/users/Alice', {}],
        ['GET', '/api/v1/users/alice', { 'if-none-match': etag }],
        ['HEAD', '/service-api/v1/users/BOB', {}],
        ['GET', '/api/v1/users?username=nobody', {}],
        ['GET', '/service-api/v1/creators', { 'accept-encoding': 'gzip' }],
        ['GET', '/service-api/v1/creators', {}],
        ['OPTIONS', '/api/v1/users/alice', {}],
        ['DELETE', '/api/v1/users/alice', {}],
      ];
      for (const [method, target, headers] of forms) {
        const single = await answer(one.base, method, target, headers);
        // Several times: the connections go to the workers in turn, so each form meets each worker.
        for (let i = 0; i < 3; i++) expect(await answer(three.base, method, target, headers), `${method} ${target}`).toEqual(single);
      }
      expect((await answer(three.base, 'GET', '/api/v1/users/alice', { 'if-none-match': etag })).status).toBe(304);
      expect((await answer(three.base, 'GET', '/service-api/v1/creators', { 'accept-encoding': 'gzip' })).headers).toMatchObject({
        'content-encoding': 'gzip',
        vary: 'Accept-Encoding',
      });
    } finally {
      expect((await one.stop()).code).toBe(0);
      expect((await three.stop()).code).toBe(0);
    }
  });

  it('replaces a worker killed under load, failing no request but those it held', async () => {
    const serve = await startServe(['--workers', '2']);
    const loops = 8;
    const outcomes: { at: number; ok: boolean }[] = [];
    let running = true;
    const load = Array.from({ length: loops }, async () => {
      while (running) {
        const ok = await get(`${serve.base}/api/v1/users/bob`, 3000).then(
          (answer) => answer.status === 200,
          () => false,
        );
        outcomes.push({ at: Date.now(), ok });
      }
    });
    try {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const [victim] = workerPids(serve.pid);
      expect(workerPids(serve.pid)).toHaveLength(2);
      const killedAt = Date.now();
      process.kill(victim!, 'SIGKILL');
      await serve.waitForStderr(new RegExp(`worker \\d \\(pid ${victim}\\) died \\(SIGKILL\\); starting another`));
      await serve.waitForStderr(/replaced it, listening/);
      const replacedAt = Date.now();
      await new Promise((resolve) => setTimeout(resolve, 1500));
      running = false;
      await Promise.all(load);
      const failed = outcomes.filter((o) => !o.ok);
      // At most one request per client was in flight on the killed worker when it died.
      expect(failed.length).toBeLessThanOrEqual(loops);
      expect(failed.every((o) => o.at >= killedAt)).toBe(true);
      expect(outcomes.filter((o) => o.at > replacedAt + 3000 && !o.ok)).toEqual([]);
      expect(outcomes.filter((o) => o.at > replacedAt).length).toBeGreaterThan(20);
      expect(workerPids(serve.pid)).not.toContain(victim);
      const health = await get(`${serve.metrics}/healthz`);
      expect(health.status).toBe(200);
      expect(JSON.parse(health.body)).toMatchObject({ ok: true, workers: { wanted: 2, listening: 2 }, restarts: 1 });
      expect((await get(`${serve.metrics}/metrics`)).body).toMatch(/^profile_snapshot_serve_worker_restarts_total 1$/m);
    } finally {
      running = false;
      await Promise.all(load);
      expect((await serve.stop()).code).toBe(0);
    }
  });

  it('drains every worker on SIGTERM: requests in flight finish, then all processes end', async () => {
    const serve = await startServe(['--workers', '2']);
    const { port } = new URL(serve.base);
    // Requests half sent, on connections the cluster hands to both workers in turn.
    const sockets: Socket[] = [];
    for (let i = 0; i < 4; i++) {
      const socket = connect(Number(port), '127.0.0.1');
      await new Promise((resolve) => socket.once('connect', resolve));
      socket.write('GET /api/v1/users/alice HTTP/1.1\r\nHost: localhost\r\n');
      sockets.push(socket);
    }
    const answers = sockets.map(
      (socket) =>
        new Promise<string>((resolve) => {
          let text = '';
          socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
          socket.on('close', () => resolve(text));
        }),
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    const workers = workerPids(serve.pid);
    expect(workers).toHaveLength(2);
    serve.child.kill('SIGTERM');
    await serve.waitForStderr(/stopping: finishing requests in flight/);
    await new Promise((resolve) => setTimeout(resolve, 300));
    for (const socket of sockets) socket.write('\r\n');
    for (const text of await Promise.all(answers)) expect(text).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect((await serve.exit).code).toBe(0);
    expect(serve.stderr()).toContain('profile-snapshot: stopped');
    for (const pid of workers) expect(() => process.kill(pid, 0)).toThrow();
  });

  it('refuses a busy port in one line (exit 2), leaving no worker behind', async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const { port } = holder.address() as { port: number };
    try {
      const result = runCli(['serve', '--out', snapshot.out, '--port', String(port), '--workers', '2']);
      expect(result.code).toBe(2);
      expect(result.stderr.trim().split('\n')).toEqual([
        `profile-snapshot: cannot listen on 127.0.0.1:${port} (bind EADDRINUSE 127.0.0.1:${port}). Fix: pick another --port or --host.`,
      ]);
      expect(workersServing(port)).toEqual([]);
    } finally {
      holder.close();
    }
  });

  it('refuses a bad --workers (exit 2), and takes PROFILE_SERVE_WORKERS', async () => {
    for (const bad of ['0', 'two', '1000']) {
      const result = runCli(['serve', '--out', snapshot.out, '--port', '0', '--workers', bad]);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('--workers must be a number of processes (1-256)');
    }
    const proc = startCli(['serve', '--out', snapshot.out, '--port', '0'], { env: { PROFILE_SERVE_WORKERS: '3' } });
    try {
      await proc.waitForStderr(/serving .* with 3 workers/);
      expect(workerPids(proc.pid)).toHaveLength(3);
    } finally {
      expect((await proc.stop()).code).toBe(0);
    }
  });
});

describe('the answer cache of a server with workers', () => {
  it('is the whole server`s: each worker keeps an equal share of --cache', () => {
    const share = (flags: Record<string, string>) => serveOptions({ out: 'dist', ...flags }, {}, () => {}).setup.cacheBytes;
    expect(share({ workers: '1' })).toBe(512 * 2 ** 20);
    expect(share({ workers: '2' })).toBe(256 * 2 ** 20);
    expect(share({ workers: '8', cache: '64' })).toBe(8 * 2 ** 20);
    expect(share({ workers: '3', cache: '0' })).toBe(0);
  });
});
