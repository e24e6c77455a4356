/**
 * The Dockerfile builds an image that runs the CLI, on a machine with no container registry: the
 * two bases are made here (Debian bookworm by mmdebstrap from the machine's apt sources, Node from
 * the npm registry, ./container-base.sh) and passed as BUILD_BASE and RUNTIME_BASE, as an offline
 * builder would. The image builds the sample store into a mounted folder, serves it with the
 * contract's headers on a published port, runs as a non-root user, keeps a store fresh with `watch`
 * (its /healthz probed from outside), and stops cleanly on SIGTERM as PID 1, serve and watch alike.
 *
 * Needs podman and mmdebstrap (root, or rootless podman). Without them the suite skips and says
 * why, unless PROFILE_SNAPSHOT_REQUIRE_CONTAINER=1, which makes the skip a failure.
 */
import { execFile, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONTRACT_HEADERS } from '../../src/hosting/routes/routes.js';
import { freePort } from '../helpers/s3.js';
import { REPO, sampleStore, tempDir } from '../helpers/store.js';
import { toolsPresent } from '../helpers/tools.js';

const REQUIRED = process.env.PROFILE_SNAPSHOT_REQUIRE_CONTAINER === '1';
const BASE_SCRIPT = join(REPO, 'test/package/container-base.sh');
const NODE_VERSION = readFileSync(join(REPO, '.ci/node-versions'), 'utf8')
  .split('\n')
  .find((line) => /^\d/.test(line))!
  .trim();
const IMAGE = 'localhost/profile-snapshot:test';
/** This machine runs containers with runc, and cannot raise rlimits past its own. */
const PODMAN = ['--runtime', 'runc', '--cgroup-manager=cgroupfs'];
const LIMITS = ['--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=1024:1024'];
const MINUTES = 60_000;

function sh(command: string, args: string[], timeoutMs = 2 * MINUTES) {
  const r = spawnSync(command, args, { encoding: 'utf8', timeout: timeoutMs, maxBuffer: 64 * 2 ** 20 });
  return { code: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '', error: r.error };
}
const podman = (args: string[], timeoutMs?: number) => sh('podman', [...PODMAN, ...args], timeoutMs);
/** podman with this process's event loop running meanwhile (its sockets answered). */
function podmanAsync(args: string[], timeoutMs = 2 * MINUTES): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolveRun) => {
    execFile('podman', [...PODMAN, ...args], { encoding: 'utf8', timeout: timeoutMs }, (error, stdout) =>
      resolveRun({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout }),
    );
  });
}
const hasTools = toolsPresent(
  { podman: ['--version'], mmdebstrap: ['--version'], tar: ['--version'] },
  'PROFILE_SNAPSHOT_REQUIRE_CONTAINER',
  'apt-get install podman buildah mmdebstrap runc',
);

/** A base image named after a hash of its recipe: a rerun finds it and skips mmdebstrap's minutes. */
function base(kind: 'build' | 'runtime', npmVersion: string): string {
  const recipe = createHash('sha256').update(readFileSync(BASE_SCRIPT)).update(`${kind} ${NODE_VERSION} ${npmVersion}`).digest('hex');
  const image = `localhost/profile-snapshot-${kind}-base:${recipe.slice(0, 16)}`;
  if (podman(['image', 'exists', image]).code !== 0) {
    const made = sh(BASE_SCRIPT, [kind, image, NODE_VERSION, npmVersion], 15 * MINUTES);
    expect(made.code, `${kind} base: ${made.stderr}${made.error ?? ''}`).toBe(0);
  }
  return image;
}

/** The machine's npm registry settings, as a build secret: the registry and the CAs to trust. */
function registrySecrets(dir: string): string[] {
  const registry = sh('npm', ['config', 'get', 'registry']).stdout.trim();
  const cafile = sh('npm', ['config', 'get', 'cafile']).stdout.trim();
  const cas = [cafile, process.env.NODE_EXTRA_CA_CERTS ?? '']
    .filter((file) => file !== '' && file !== 'null' && file !== 'undefined' && existsSync(file))
    .map((file) => readFileSync(file, 'utf8'));
  const lines = [`registry=${registry}`];
  if (cas.length > 0) {
    writeFileSync(join(dir, 'npm-ca.pem'), cas.join('\n'));
    lines.push('cafile=/run/secrets/npm-ca');
  }
  writeFileSync(join(dir, 'npmrc'), `${lines.join('\n')}\n`);
  const secrets = ['--secret', `id=npmrc,src=${join(dir, 'npmrc')}`];
  if (cas.length > 0) secrets.push('--secret', `id=npm-ca,src=${join(dir, 'npm-ca.pem')}`);
  return secrets;
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}
/** One request on its own connection (Connection: close), as a probe sends it. */
function fetchOnce(url: string): Promise<Answer> {
  return new Promise((resolveGet, reject) => {
    get(url, { agent: false }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolveGet({ status: response.statusCode ?? 0, headers: response.headers, body }));
    }).on('error', reject);
  });
}

/** Asks `url` every 50 ms until an answer will do (`ready`) or 30 s pass: the last answer, if any. */
async function answerWhen(url: string, ready: (answer: Answer) => boolean): Promise<Answer | undefined> {
  const started = Date.now();
  let answer: Answer | undefined;
  while (Date.now() - started < 30_000) {
    answer = await fetchOnce(url).catch(() => undefined);
    if (answer !== undefined && ready(answer)) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return answer;
}

/** The sample store's folder and a folder for the tree, both open to the container's user (not this one's). */
function mountableFolders(parent: string, prefix: string): { data: string; out: string } {
  const data = join(parent, `${prefix}data`);
  const out = join(parent, `${prefix}out`);
  mkdirSync(data);
  mkdirSync(out);
  sampleStore(join(data, 'store.db'));
  // SQLite makes the -shm and -wal files beside the store, and the tree is written into out.
  chmodSync(data, 0o777);
  chmodSync(out, 0o777);
  chmodSync(join(data, 'store.db'), 0o666);
  return { data, out };
}

/**
 * SIGTERM to a running container, then its exit, which must be 0 within 5 s: as PID 1 the CLI gets
 * the signal only through a handler of its own. The waits are asynchronous: this process is the
 * client whose kept-alive connection the server ends, and a client blocked in a synchronous wait
 * would never close its side of it. Returns the time from the signal to the exit.
 */
async function expectCleanStop(name: string): Promise<number> {
  const started = Date.now();
  expect((await podmanAsync(['kill', '--signal', 'TERM', name])).code).toBe(0);
  const waited = await podmanAsync(['wait', name], 30_000);
  const stopMs = Date.now() - started;
  expect(waited.stdout.trim(), podman(['logs', name]).stderr).toBe('0');
  expect(stopMs).toBeLessThan(5_000);
  return stopMs;
}

describe.skipIf(!hasTools)('the image', () => {
  let work: ReturnType<typeof tempDir>;
  let runError = '';
  const figures: string[] = [];

  beforeAll(() => {
    work = tempDir('ps-container-');
    const started = Date.now();
    const npmVersion = sh('npm', ['--version']).stdout.trim();
    const buildBase = base('build', npmVersion);
    const runtimeBase = base('runtime', npmVersion);
    figures.push(`bases ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);

    const buildStarted = Date.now();
    const built = podman(
      [
        ...['build', '--network', 'host', '--layers', '--tag', IMAGE],
        ...['--build-arg', `BUILD_BASE=${buildBase}`, '--build-arg', `RUNTIME_BASE=${runtimeBase}`],
        ...registrySecrets(work.path),
        REPO,
      ],
      20 * MINUTES,
    );
    expect(built.code, `podman build: ${built.stderr.slice(-4000)}${built.error ?? ''}`).toBe(0);
    figures.push(`image built in ${((Date.now() - buildStarted) / 1000).toFixed(1)} s`);
    const size = Number(podman(['image', 'inspect', '--format', '{{.Size}}', IMAGE]).stdout.trim());
    figures.push(`image size ${(size / 1e6).toFixed(0)} MB`);

    // Whether this machine can run a container at all; if not, say exactly why and test what can be.
    const probe = podman(['run', '--rm', ...LIMITS, IMAGE, '--version']);
    if (probe.code !== 0) {
      runError = `podman run fails here (exit ${probe.code}): ${probe.stderr.trim()}${probe.error ?? ''}`;
      console.warn(runError);
    }
  }, 40 * MINUTES);

  afterAll(() => {
    console.log(`container: ${figures.join('; ')}`);
    work?.cleanup();
  });

  it('runs as a numeric non-root user', () => {
    const user = podman(['image', 'inspect', '--format', '{{.Config.User}}', IMAGE]).stdout.trim();
    expect(user).toMatch(/^[1-9]\d*(:\d+)?$/);
  });

  it('holds no registry settings from the build', () => {
    // The build's npmrc and CA came in as secrets: no layer of the final image may hold them.
    const save = join(work.path, 'image.tar');
    const saved = podman(['save', '--format', 'docker-archive', '--output', save, IMAGE], 5 * MINUTES);
    expect(saved.code, saved.stderr).toBe(0);
    const listing = sh('sh', ['-c', `tar -xOf '${save}' --wildcards '*.tar' | tar -t 2>/dev/null || true`]);
    expect(listing.stdout).not.toMatch(/run\/secrets|\.npmrc/);
  });

  it(
    'builds the sample store into a mounted folder, serves it with the contract headers, stops on SIGTERM',
    async () => {
      if (runError !== '') {
        if (REQUIRED) throw new Error(runError);
        // What can be checked without running a container: the image's own files in a chroot.
        const mounted = podman(['image', 'mount', IMAGE]);
        expect(mounted.code, mounted.stderr).toBe(0);
        const root = mounted.stdout.trim();
        try {
          const help = sh('chroot', [root, 'node', '/app/bin/profile-snapshot.js', '--version']);
          expect(help.code, help.stderr).toBe(0);
        } finally {
          podman(['image', 'unmount', IMAGE]);
        }
        return;
      }
      const { data, out } = mountableFolders(work.path, '');

      const build = podman(
        [
          'run',
          '--rm',
          ...LIMITS,
          '-v',
          `${data}:/data`,
          '-v',
          `${out}:/out`,
          IMAGE,
          'build',
          '--db',
          '/data/store.db',
          '--out',
          '/out/dist',
        ],
        5 * MINUTES,
      );
      expect(build.code, build.stderr).toBe(0);
      expect(existsSync(join(out, 'dist/api/v1/users/alice'))).toBe(true);

      const port = await freePort();
      const name = `profile-snapshot-test-${process.pid}`;
      const runStarted = Date.now();
      const serve = podman([
        ...['run', '--detach', '--name', name, ...LIMITS, '-p', `127.0.0.1:${port}:3000`, '-v', `${out}:/out:ro`],
        ...[IMAGE, 'serve', '--out', '/out/dist', '--host', '0.0.0.0', '--workers', '2'],
      ]);
      try {
        expect(serve.code, serve.stderr).toBe(0);
        const answer = await answerWhen(`http://127.0.0.1:${port}/api/v1/users/alice`, () => true);
        const firstAnswerMs = Date.now() - runStarted;
        expect(answer, podman(['logs', name]).stderr).toBeDefined();
        figures.push(`run to first answer of serve ${firstAnswerMs} ms`);
        expect(answer!.status).toBe(200);
        for (const [header, value] of Object.entries(CONTRACT_HEADERS)) expect(answer!.headers[header.toLowerCase()], header).toBe(value);
        expect(JSON.parse(answer!.body).data.username).toBe('Alice');

        const uid = podman(['exec', name, 'sh', '-c', 'id -u']);
        expect(uid.stdout.trim()).not.toBe('0');

        // serve's handler drains its workers and exits 0.
        figures.push(`SIGTERM to exit ${await expectCleanStop(name)} ms`);
      } finally {
        podman(['rm', '--force', name]);
      }
    },
    10 * MINUTES,
  );
  it(
    'watches the store with --metrics: /healthz answers 200, SIGTERM ends its cycle and exits 0',
    async () => {
      if (runError !== '') return; // said above, and the build test checked the image's files instead
      const { data, out } = mountableFolders(work.path, 'watch-');
      const port = await freePort();
      const name = `profile-snapshot-watch-${process.pid}`;
      const watch = podman([
        ...['run', '--detach', '--name', name, ...LIMITS, '-p', `127.0.0.1:${port}:9464`],
        ...['-v', `${data}:/data`, '-v', `${out}:/out`, IMAGE],
        ...['watch', '--db', '/data/store.db', '--out', '/out/dist', '--interval', '1', '--metrics', '0.0.0.0:9464'],
      ]);
      try {
        expect(watch.code, watch.stderr).toBe(0);
        const health = await answerWhen(`http://127.0.0.1:${port}/healthz`, (answer) => answer.status === 200);
        expect(health?.status, podman(['logs', name]).stderr).toBe(200);
        expect(existsSync(join(out, 'dist/api/v1/users/alice'))).toBe(true);

        // watch's handler ends its cycle and exits 0.
        figures.push(`watch: SIGTERM to exit ${await expectCleanStop(name)} ms`);
      } finally {
        podman(['rm', '--force', name]);
      }
    },
    5 * MINUTES,
  );
});
