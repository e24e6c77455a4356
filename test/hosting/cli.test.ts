/**
 * The hosting commands through the real, compiled CLI (bin/profile-snapshot.js; `npm test` compiles
 * first): `serve` as a process (signals, access log), `netlify config` keeping the committed
 * netlify.toml and edge routing module in step with the route table, `netlify verify` and Netlify's
 * per-folder file limit.
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as edgeRoutes from '../../netlify/edge-functions/profile-api/routes.js';
import { renderNetlifyToml } from '../../src/hosting/hosts/netlify-config.js';
import { ALLOW_HEADER, PREFLIGHT_HEADERS, ROUTES } from '../../src/hosting/routes/routes.js';
import { resolveRoute } from '../../src/hosting/routes/routing.js';
import { runCli, startCli } from '../helpers/process.js';
import { buildSampleSnapshot, REPO, type Snapshot } from './fixture.js';
import { requestTable } from './request-table.js';

const cli = (args: string[], cwd = REPO) => runCli(args, { cwd });

let snapshot: Snapshot;
beforeAll(() => {
  snapshot = buildSampleSnapshot();
});
afterAll(() => snapshot?.cleanup());

describe('netlify config: the committed files follow the route table', () => {
  it('netlify.toml is exactly what the table renders', () => {
    expect(readFileSync(join(REPO, 'netlify.toml'), 'utf8')).toBe(renderNetlifyToml());
  });

  it('the edge routing module carries the same table and routes every request like the origin', () => {
    expect(edgeRoutes.ROUTES).toEqual(ROUTES);
    expect(edgeRoutes.PREFLIGHT_HEADERS).toEqual(PREFLIGHT_HEADERS);
    expect(edgeRoutes.ALLOW_HEADER).toBe(ALLOW_HEADER);
    for (const row of requestTable()) {
      const url = new URL(row.target, 'http://x');
      const path = decodeURIComponent(url.pathname);
      expect(edgeRoutes.resolveRoute(path, url.searchParams), row.target).toEqual(resolveRoute(path, url.searchParams));
    }
  });

  it('--check passes on the repository and fails (exit 5) on a hand-edited copy; plain config rewrites it', () => {
    const ok = cli(['netlify', 'config', '--check']);
    expect(ok.stderr).toContain('up to date');
    expect(ok.code).toBe(0);

    const root = mkdtempSync(join(tmpdir(), 'profile-snapshot-toml-'));
    try {
      writeFileSync(join(root, 'netlify.toml'), readFileSync(join(REPO, 'netlify.toml'), 'utf8').replace('status = 404', 'status = 200'));
      mkdirSync(join(root, 'netlify/edge-functions/profile-api'), { recursive: true });
      cpSync(join(REPO, 'netlify/edge-functions/profile-api/routes.js'), join(root, 'netlify/edge-functions/profile-api/routes.js'));
      const stale = cli(['netlify', 'config', '--check', '--root', root]);
      expect(stale.code).toBe(5);
      expect(stale.stderr).toContain('netlify.toml');
      expect(stale.stderr).not.toContain('routes.js');
      expect(cli(['netlify', 'config', '--root', root]).code).toBe(0);
      expect(readFileSync(join(root, 'netlify.toml'), 'utf8')).toBe(readFileSync(join(REPO, 'netlify.toml'), 'utf8'));
      expect(cli(['netlify', 'config', '--check', '--root', root]).code).toBe(0);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('the edge function is dependency-free: it imports only its routing module, which imports nothing', () => {
    const index = readFileSync(join(REPO, 'netlify/edge-functions/profile-api/index.js'), 'utf8');
    const routes = readFileSync(join(REPO, 'netlify/edge-functions/profile-api/routes.js'), 'utf8');
    expect([...index.matchAll(/^\s*import\b.*?from\s+['"]([^'"]+)['"]/gm)].map((m) => m[1])).toEqual(['./routes.js']);
    expect(routes).not.toMatch(/^\s*import\b/m);
    expect(routes).not.toMatch(/\brequire\(/);
  });
});

describe("netlify verify: Netlify's 54,000 files per folder", () => {
  it('passes on a normal snapshot', () => {
    const r = cli(['netlify', 'verify', '--out', snapshot.out]);
    expect(r.stderr).toContain("within Netlify's limits");
    expect(r.code).toBe(0);
  });

  it('warns near the limit and fails clearly past it (files in dot folders do not count)', () => {
    const out = mkdtempSync(join(tmpdir(), 'profile-snapshot-limit-'));
    try {
      const users = join(out, 'api/v1/users');
      mkdirSync(users, { recursive: true });
      mkdirSync(join(out, '.profile-snapshot'));
      for (let i = 0; i < 48_600; i++) writeFileSync(join(users, `u${i}`), '');
      for (let i = 0; i < 6000; i++) writeFileSync(join(out, '.profile-snapshot', `s${i}`), '');
      const near = cli(['netlify', 'verify', '--out', out]);
      expect(near.code).toBe(0);
      expect(near.stderr).toContain('warning: api/v1/users holds 48,600 files');
      for (let i = 48_600; i < 54_001; i++) writeFileSync(join(users, `u${i}`), '');
      const over = cli(['netlify', 'verify', '--out', out]);
      expect(over.code).toBe(5);
      expect(over.stderr).toContain('Netlify would reject this deploy: more than 54,000 files in api/v1/users (54,001)');
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  it('the Netlify build command gates on verify --netlify (this limit included) after the build', () => {
    const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    const toml = readFileSync(join(REPO, 'netlify.toml'), 'utf8');
    expect(toml).toContain('command = "npm run build:netlify"');
    // Netlify publishes the folder that command builds and verifies.
    expect(toml).toMatch(/^\[build\][^[]*^\s*publish = "dist"$/m);
    expect(pkg.scripts['build:netlify']).toMatch(/^npm run build && node bin\/profile-snapshot\.js verify --out dist --netlify$/);
  });
});

/** Starts `serve` as a real process; `listening` settles with its address once it prints it. */
function startServe(args: string[], workers: string) {
  const proc = startCli(['serve', '--workers', workers, ...args]);
  const listening = proc.waitForStderr(/serving .* on (http:\/\/\S+)/).then((match) => match[1]!);
  return { ...proc, listening, exited: proc.exit.then((exit) => exit.code) };
}

const get = (url: string, agent?: Agent) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = httpRequest(url, { agent }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => {
        body += c.toString();
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });

// Every test of the process both ways: one process, and a primary with workers sharing the port.
for (const workers of ['1', '3'])
  describe(`serve as a process, --workers ${workers}`, () => {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      it(`answers, logs one line per request at --verbose, and stops cleanly on ${signal} with idle keep-alive connections open`, async () => {
        const serve = startServe(['--out', snapshot.out, '--port', '0', '--verbose'], workers);
        const base = await serve.listening;
        expect(base).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
        const agent = new Agent({ keepAlive: true });
        expect((await get(`${base}/api/v1/users/Alice`, agent)).status).toBe(200);
        expect((await get(`${base}/api/v1/users?username=nobody`, agent)).status).toBe(404);
        const started = Date.now();
        serve.child.kill(signal);
        expect(await serve.exited).toBe(0);
        expect(Date.now() - started).toBeLessThan(3000);
        agent.destroy();
        const lines = serve
          .stderr()
          .split('\n')
          .filter((l) => l.includes('"GET"'));
        expect(lines).toHaveLength(2);
        expect(lines[0]).toContain('"/api/v1/users/Alice" 200');
        expect(lines[1]).toContain('"/api/v1/users?username=nobody" 404');
        expect(serve.stderr()).toContain('stopped');
      });
    }

    it('answers the same bytes with --cache 0 (every answer read from disk)', async () => {
      const cached = startServe(['--out', snapshot.out, '--port', '0'], workers);
      const uncached = startServe(['--out', snapshot.out, '--port', '0', '--cache', '0'], workers);
      const [a, b] = await Promise.all([cached.listening, uncached.listening]);
      for (const target of ['/api/v1/users/ALICE', '/service-api/v1/users/bob', '/api/v1/users?username=nobody']) {
        expect(await get(`${b}${target}`)).toEqual(await get(`${a}${target}`));
      }
      cached.child.kill('SIGTERM');
      uncached.child.kill('SIGTERM');
      expect(await cached.exited).toBe(0);
      expect(await uncached.exited).toBe(0);
    });

    it('logs nothing per request without --verbose', async () => {
      const serve = startServe(['--out', snapshot.out, '--port', '0'], workers);
      const base = await serve.listening;
      expect((await get(`${base}/service-api/v1/creators`)).status).toBe(200);
      serve.child.kill('SIGTERM');
      expect(await serve.exited).toBe(0);
      expect(serve.stderr()).not.toContain('"GET"');
    });

    it('refuses an out dir that holds no snapshot (exit 5) and a bad port (exit 2)', () => {
      const empty = mkdtempSync(join(tmpdir(), 'profile-snapshot-empty-'));
      try {
        const r = cli(['serve', '--out', empty, '--port', '0', '--workers', workers]);
        expect(r.code).toBe(5);
        expect(r.stderr).toContain('holds no snapshot');
        const p = cli(['serve', '--out', snapshot.out, '--port', '70000']);
        expect(p.code).toBe(2);
        const c = cli(['serve', '--out', snapshot.out, '--port', '0', '--cache', '64MB']);
        expect(c.code).toBe(2);
        expect(c.stderr).toContain('--cache must be a size in MiB');
      } finally {
        rmSync(empty, { recursive: true, force: true });
      }
    });
  });
