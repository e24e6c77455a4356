// What the origin server's benchmarks share (bench-serve.mjs, bench-serve-hold.mjs): a built tree to
// serve, nginx-light with a config giving the contract's headers and error documents on that tree,
// `serve` (or a runner script in its place) started on a free port, and the RSS and CPU time of all
// of a server's processes, read from /proc.
import { spawn, spawnSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BENCH_ENV } from './bench-common.mjs';

const bin = fileURLToPath(new URL('../bin/profile-snapshot.js', import.meta.url));
/** Messages are prefixed with the running script's name (bench-serve, bench-serve-hold, bench...). */
const log = (line) => process.stdout.write(`${basename(process.argv[1] ?? 'bench', '.mjs')}: ${line}\n`);

/** The contract's headers (docs/api.md, "Headers") and nosniff: every answer of both servers must carry them. */
export const HEADERS = {
  'content-type': 'application/json; charset=utf-8',
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'GET, OPTIONS',
  'cache-control': 'public, s-maxage=30, stale-while-revalidate=60',
  'x-content-type-options': 'nosniff',
};

/** `root` and all its descendants' pids, from /proc. */
export function treePids(root) {
  const children = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
    } catch {
      // gone meanwhile
    }
  }
  const pids = [];
  for (const queue = [root]; queue.length > 0;) {
    const pid = queue.pop();
    pids.push(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return pids;
}

/** Sums `read(pid)` over the tree's processes, skipping those gone meanwhile. */
function sumOverTree(root, read) {
  let total = 0;
  for (const pid of treePids(root)) {
    try {
      total += read(pid);
    } catch {
      // gone meanwhile
    }
  }
  return total;
}

/** The RSS of `root` and all its descendants, in bytes (0 once it is gone). */
export const treeRss = (root) =>
  sumOverTree(root, (pid) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024);

/** The CPU time (user and system) `root` and all its descendants have used, in seconds. */
const CLOCK_TICKS = 100;
export const treeCpuSeconds = (root) =>
  sumOverTree(root, (pid) => {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  });

/** SIGKILLs `root` and all its descendants (nginx's workers outlive a killed master). */
export function killTree(root) {
  for (const pid of treePids(root)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
}

/**
 * The tree built from the store `db` into `<workDir>/dist`, reused while the store is the one it was
 * built from (serving does not care how it was built).
 */
export function builtTree(workDir, db) {
  const out = join(workDir, 'dist');
  const stamp = join(workDir, 'built-from');
  const { size, mtimeMs } = statSync(db);
  const want = JSON.stringify({ seeded: db, size, mtimeMs });
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === want && existsSync(out)) return out;
  rmSync(workDir, { recursive: true, force: true });
  mkdirSync(workDir, { recursive: true });
  const copy = join(workDir, 'profiles.db');
  copyFileSync(db, copy);
  log(`building the tree of ${db} into ${out}`);
  const r = spawnSync(process.execPath, [bin, 'build', '--db', copy, '--out', out], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: BENCH_ENV,
  });
  if (r.status !== 0) throw new Error('build failed');
  writeFileSync(stamp, want);
  return out;
}

const nginxBinary = () => ['nginx', '/usr/sbin/nginx'].find((b) => spawnSync(b, ['-v'], { stdio: 'ignore' }).status === 0);

/** nginx, installed from Debian (nginx-light) when missing. */
export function ensureNginx() {
  let found = nginxBinary();
  if (found) return found;
  log("nginx is not installed: installing Debian's nginx-light (apt-get install -y nginx-light)");
  const install = () => spawnSync('apt-get', ['install', '-y', '--no-install-recommends', 'nginx-light'], { stdio: 'inherit' }).status;
  if (install() !== 0) {
    spawnSync('apt-get', ['update'], { stdio: 'inherit' });
    install();
  }
  found = nginxBinary();
  if (!found) throw new Error('nginx could not be installed (apt-get install nginx-light)');
  return found;
}

/** A port that is free now (nginx needs a number in its config; the window until it binds is short). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

/** nginx's map keywords; a name spelled like one must be escaped to be a plain key. */
const MAP_KEYWORDS = new Set(['default', 'hostnames', 'include', 'volatile']);

/**
 * The nginx config: the tree as root, the contract's headers on every answer (`always`: errors too),
 * no ranges, the error documents with their statuses, published names through a case-insensitive map;
 * `workers` worker processes; `files`, URL paths of plain files of the tree served as they are.
 */
function nginxConfig(dir, out, port, names, { workers, files }) {
  writeFileSync(join(dir, 'names.map'), names.map((n) => `${MAP_KEYWORDS.has(n) ? '\\' : ''}${n} ${n};`).join('\n') + '\n');
  const headers = Object.entries(HEADERS)
    .filter(([name]) => name !== 'content-type')
    .map(([name, value]) => `    add_header ${name} "${value}" always;`)
    .join('\n');
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `  ${t}_temp_path ${join(dir, t)};`).join('\n');
  const plain = files.map((path) => `    location = ${path} { }\n`).join('');
  return `${process.getuid?.() === 0 ? 'user root;\n' : ''}worker_processes ${workers};
pid ${join(dir, 'nginx.pid')};
error_log ${join(dir, 'error.log')} warn;
events { worker_connections 4096; }
http {
  access_log off;
${temp}
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  server_tokens off;
  types { }
  default_type "application/json; charset=utf-8";
  max_ranges 0;
  map_hash_max_size 1048576;
  map_hash_bucket_size 128;
  # String keys of a map are matched case-insensitively: any spelling finds the canonical name.
  map $path_name $path_canonical { default ""; include ${join(dir, 'names.map')}; }
  map $arg_username $query_canonical { default ""; include ${join(dir, 'names.map')}; }
  server {
    listen 127.0.0.1:${port};
    root ${out};
${headers}
    error_page 404 /_errors/user-not-found.json;
    error_page 400 /_errors/username-required.json;
    location ~ ^/(?<alias>api|service-api)/v1/users/(?<path_name>[^/]+)$ {
      if ($path_canonical = "") { return 404; }
      try_files /$alias/v1/users/$path_canonical =404;
    }
    location = /api/v1/users {
      if ($arg_username = "") { return 400; }
      if ($query_canonical = "") { return 404; }
      try_files /api/v1/users/$query_canonical =404;
    }
${plain}    location /_errors/ { internal; }
    location / { return 404; }
  }
}
`;
}

/** Runs a server process until stopped; `ready` resolves once it answers. */
export function startProcess(command, commandArgs, readyPattern) {
  const child = spawn(command, commandArgs, { stdio: ['ignore', 'ignore', 'pipe'], env: BENCH_ENV });
  let stderr = '';
  const ready = new Promise((resolve, reject) => {
    child.stderr.on('data', (d) => {
      stderr += d;
      const match = readyPattern?.exec(stderr);
      if (match) resolve(match);
    });
    child.once('exit', (code) => reject(new Error(`${command} exited (${code}): ${stderr}`)));
  });
  const stop = () =>
    new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    });
  return { child, ready, stop, stderr: () => stderr };
}

export async function waitUntilAnswering(base, path) {
  for (let i = 0; i < 200; i++) {
    try {
      const answer = await fetch(`${base}${path}`);
      await answer.arrayBuffer();
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  throw new Error(`${base} never answered`);
}

/**
 * nginx on a free port, serving `out` with `workers` worker processes (default 2); `files`: URL
 * paths of plain files of the tree it serves as they are (besides the profiles and error documents).
 */
export async function startNginx(nginx, out, names, { workers = 2, files = [] } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'profile-snapshot-nginx-'));
  const port = await freePort();
  const conf = join(dir, 'nginx.conf');
  writeFileSync(conf, nginxConfig(dir, out, port, names, { workers, files }));
  const test = spawnSync(nginx, ['-t', '-q', '-p', dir, '-c', conf], { encoding: 'utf8' });
  if (test.status !== 0) throw new Error(`nginx refused its config: ${test.stderr}`);
  const started = performance.now();
  const server = startProcess(nginx, ['-p', dir, '-c', conf, '-g', 'daemon off;']);
  const base = `http://127.0.0.1:${port}`;
  await Promise.race([waitUntilAnswering(base, '/api/v1/users/x'), server.ready]);
  const firstAnswerMs = performance.now() - started;
  const version = spawnSync(nginx, ['-v'], { encoding: 'utf8' })
    .stderr.trim()
    .replace(/^nginx version: /, '');
  return {
    ...{ base, port, version, firstAnswerMs, pid: server.child.pid },
    stop: async () => (await server.stop(), rmSync(dir, { recursive: true, force: true })),
  };
}

/**
 * `serve` on a free port (`workers`: its --workers; undefined, its default); or `node <script> <out>
 * ...scriptArgs`, another server to measure in its place, printing the same line.
 */
export async function startServe(out, { script, scriptArgs = [], workers } = {}) {
  const workerArgs = workers === undefined ? [] : ['--workers', String(workers)];
  const command = script ? [script, out, ...scriptArgs] : [bin, 'serve', '--out', out, '--port', '0', '--host', '127.0.0.1', ...workerArgs];
  const started = performance.now();
  const server = startProcess(process.execPath, command, /on http:\/\/127\.0\.0\.1:(\d+)/);
  const [, port] = await server.ready;
  const base = `http://127.0.0.1:${port}`;
  await waitUntilAnswering(base, '/api/v1/users/x');
  return { base, port: Number(port), firstAnswerMs: performance.now() - started, pid: server.child.pid, stop: server.stop };
}
