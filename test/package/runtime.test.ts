/**
 * The runtime the CLI meets on a user's machine:
 * - a native module built for another Node (a user who switched versions, or an `npm install -g`
 *   under one Node run under another) is one line and exit 16, not "internal error" and a stack. The
 *   module is real: an addon compiled here against another Node version's headers, put where
 *   better-sqlite3 looks first (its build/Release/), in a copy of the installed package;
 * - a Node older than the CLI supports is one line and exit 16 too;
 * - nothing the CLI does prints a deprecation warning: each command runs under --throw-deprecation
 *   (inherited by its worker threads and cluster workers), which turns one into a crash.
 */
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { delimiter, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readBucket, s3Env, startS3rver, type S3Server } from '../helpers/s3.js';
import { REPO } from '../helpers/paths.js';
import { runCli, runCliAsync, startCli, type Proc } from '../helpers/process.js';
import { sampleStore, tempDir } from '../helpers/store.js';

const THIS_MAJOR = Number(process.versions.node.split('.')[0]);
const hasCompiler = spawnSync('g++', ['--version'], { stdio: 'ignore' }).status === 0;

/** The headers of a Node other than this one: the CI's other runtimes, or the system's own. */
function otherNodeHeaders(): { include: string; major: number } | undefined {
  const runtimes = join(REPO, '.runtimes');
  const candidates = [
    ...(existsSync(runtimes) ? readdirSync(runtimes).map((d) => join(runtimes, d, 'include/node')) : []),
    '/usr/include/node',
    '/usr/local/include/node',
  ];
  for (const include of candidates) {
    const header = join(include, 'node_version.h');
    if (!existsSync(header)) continue;
    const major = Number(/#define NODE_MAJOR_VERSION (\d+)/.exec(readFileSync(header, 'utf8'))?.[1]);
    if (major !== THIS_MAJOR && existsSync(join(include, 'node.h'))) return { include, major };
  }
  return undefined;
}

/** A `node` on PATH (or the system's) older than the CLI supports. */
function olderNode(): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/bin', '/usr/local/bin'];
  for (const dir of dirs) {
    const node = join(dir, 'node');
    const major = Number(spawnSync(node, ['-p', 'process.versions.node.split(".")[0]'], { encoding: 'utf8' }).stdout?.trim());
    if (major > 0 && major < 22) return node;
  }
  return undefined;
}

const headers = otherNodeHeaders();
const older = olderNode();

const work = tempDir('ps-runtime-');
afterAll(() => work.cleanup());
const db = join(work.path, 'profiles.db');
beforeAll(() => sampleStore(db));

/** One line on stderr, no stack, and the exit code of a runtime that cannot run the CLI. */
function expectOneRuntimeLine(result: { status: number | null; stderr: string; stdout: string }): string {
  expect(result.status, result.stderr).toBe(16);
  expect(result.stderr).not.toMatch(/internal error|\n\s+at /);
  expect(result.stderr.trimEnd().split('\n')).toHaveLength(1);
  expect(result.stdout).toBe('');
  return result.stderr;
}

describe.skipIf(!hasCompiler || headers === undefined)('a native module built for another Node', () => {
  it(`is one line naming the module, both Node versions and the rebuild command (exit 16); nothing is written`, () => {
    const { include, major } = headers!;
    // A copy of the installed package whose better-sqlite3 holds an addon built for the other Node.
    const pkg = join(work.path, 'installed');
    for (const part of ['bin', 'build', 'package.json']) cpSync(join(REPO, part), join(pkg, part), { recursive: true });
    mkdirSync(join(pkg, 'node_modules'));
    for (const name of readdirSync(join(REPO, 'node_modules'))) {
      if (name !== 'better-sqlite3' && !name.startsWith('.'))
        symlinkSync(join(REPO, 'node_modules', name), join(pkg, 'node_modules', name));
    }
    const sqlite = join(pkg, 'node_modules/better-sqlite3');
    for (const part of ['lib', 'package.json'])
      cpSync(join(REPO, 'node_modules/better-sqlite3', part), join(sqlite, part), { recursive: true });
    mkdirSync(join(sqlite, 'build/Release'), { recursive: true });
    const source = join(work.path, 'addon.cc');
    writeFileSync(source, '#include <node.h>\nstatic void Init(v8::Local<v8::Object>) {}\nNODE_MODULE(better_sqlite3, Init)\n');
    const compiled = spawnSync(
      'g++',
      ['-std=c++20', '-shared', '-fPIC', '-w', `-I${include}`, source, '-o', join(sqlite, 'build/Release/better_sqlite3.node')],
      { encoding: 'utf8' },
    );
    expect(compiled.status, compiled.stderr).toBe(0);

    const out = join(work.path, 'out-mismatch');
    const result = spawnSync(process.execPath, [join(pkg, 'bin/profile-snapshot.js'), 'build', '--db', db, '--out', out], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '' },
    });
    const line = expectOneRuntimeLine(result);
    expect(line).toContain(`the native module better-sqlite3 was built for Node.js ${major} (NODE_MODULE_VERSION `);
    expect(line).toContain(`but this is Node.js ${process.versions.node} (NODE_MODULE_VERSION ${process.versions.modules})`);
    expect(line).toContain('Fix: rebuild it for this Node with `npm rebuild better-sqlite3`');
    expect(existsSync(out)).toBe(false);
  });
});

describe('the supported versions', () => {
  it('agree: engines admits every version CI runs, and .node-version names the first', () => {
    const engines = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')).engines.node as string;
    const [minMajor, minMinor] = /^>=(\d+)\.(\d+)\.\d+$/.exec(engines)!.slice(1).map(Number);
    const ci = readFileSync(join(REPO, '.ci/node-versions'), 'utf8')
      .split('\n')
      .filter((line) => /^\d/.test(line))
      .map((line) => line.trim().split('.').map(Number));
    expect(ci.length).toBeGreaterThanOrEqual(3);
    for (const [major, minor] of ci)
      expect(major! > minMajor! || (major === minMajor && minor! >= minMinor!), `${major}.${minor}`).toBe(true);
    expect(readFileSync(join(REPO, '.node-version'), 'utf8').trim()).toBe(String(ci[0]![0]));
  });
});

describe.skipIf(older === undefined)('a Node older than 22.12', () => {
  it('is one line naming this Node and the supported ones (exit 16)', () => {
    const result = spawnSync(older!, [join(REPO, 'bin/profile-snapshot.js'), '--help'], { encoding: 'utf8' });
    const line = expectOneRuntimeLine(result);
    expect(line).toMatch(/^profile-snapshot: this is Node\.js \d+\.\d+\.\d+, and profile-snapshot needs Node\.js 22\.12 or later/);
  });
});

describe(`no deprecation warning on Node ${process.versions.node}`, () => {
  const deprecation = ['--throw-deprecation'];
  // Node's own warnings ("(node:…) [DEP0…] DeprecationWarning: …"); the CLI's lower-case "warning:" lines are its own.
  const silent = (stderr: string) => expect(stderr).not.toMatch(/DeprecationWarning|\[DEP\d+\]|Warning:/);
  let server: S3Server;
  const running: Proc[] = [];
  beforeAll(async () => {
    server = await startS3rver();
  });
  afterAll(async () => {
    for (const proc of running) await proc.stop();
    await server?.close();
  });

  it('build, verify and a store clock', () => {
    const out = join(work.path, 'out-build');
    for (const args of [
      ['build', '--db', db, '--out', out],
      ['verify', '--out', out],
      ['store', 'track', '--db', db],
      ['netlify', 'config'],
    ]) {
      const result = runCli(args, { nodeArgs: deprecation });
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0);
      silent(result.stderr);
    }
  });

  it('publish to an S3 server (the AWS SDK)', async () => {
    const out = join(work.path, 'out-publish');
    expect(runCli(['build', '--db', db, '--out', out]).code).toBe(0);
    const bucket = await server.bucket();
    const run = await runCliAsync(['publish', '--out', out, '--to', `s3://${bucket}/p`, '--endpoint', server.endpoint, '--single-writer'], {
      nodeArgs: deprecation,
      env: s3Env(),
    });
    expect(run.code, run.stderr).toBe(0);
    silent(run.stderr);
    expect((await readBucket(server.endpoint, bucket, 'p')).size).toBeGreaterThan(10);
  });

  it('serve on two cluster workers, its quick path and its metrics, until SIGTERM', async () => {
    const out = join(work.path, 'out-serve');
    expect(runCli(['build', '--db', db, '--out', out]).code).toBe(0);
    const serve = startCli(['serve', '--out', out, '--port', '0', '--workers', '2', '--metrics', '0'], { nodeArgs: deprecation });
    running.push(serve);
    const base = (await serve.waitForStderr(/serving .* on (http:\/\/\S+)/))[1]!;
    const metrics = (await serve.waitForStderr(/metrics on (http:\/\/\S+\/metrics)/))[1]!;
    for (const path of ['/api/v1/users/alice', '/api/v1/users/nobody', '/service-api/v1/creators'])
      await (await fetch(base + path)).arrayBuffer();
    expect((await fetch(metrics)).status).toBe(200);
    expect((await serve.stop(10_000)).code, serve.stderr()).toBe(0);
    silent(serve.stderr());
  });

  it('watch with a publish thread, until SIGTERM', async () => {
    const out = join(work.path, 'out-watch');
    const bucket = await server.bucket();
    const args = ['watch', '--db', db, '--out', out, '--interval', '0.5', '--metrics', '0'];
    const watch = startCli([...args, '--publish', `s3://${bucket}/w`, '--endpoint', server.endpoint, '--single-writer'], {
      nodeArgs: deprecation,
      env: s3Env(),
    });
    running.push(watch);
    await watch.waitForStderr(/published /, 30_000);
    expect((await watch.stop(10_000)).code, watch.stderr()).toBe(0);
    silent(watch.stderr());
  });
});
