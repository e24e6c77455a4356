/**
 * The package installs like a CLI. A clean copy of the repository (sources, tests, scripts and a
 * stray dist/, but no build/: prepack must compile it) is packed with `npm pack`; the tarball is
 * installed with `npm install -g` into an empty prefix under the Node running the test, as a user's
 * machine would (better-sqlite3's N-API binary comes prebuilt inside its package). The installed
 * `profile-snapshot` must answer --help and build the sample store, and the tarball must hold the
 * compiled code, bin/, the contract and data/'s SQL, never tests, scripts, sources, source maps or
 * dist/.
 */
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO, sampleStore, tempDir } from '../helpers/store.js';

const SKIPPED_IN_COPY = new Set(['node_modules', 'build', 'dist', '.git', '.bench', '.scratch', 'coverage']);

let work: ReturnType<typeof tempDir>;
let tarball: string;
let contents: string[];
let installed: string;

/**
 * What a user's shell may carry for npm to reach its registry: a proxy, or the extra CA certificates
 * of a proxy that inspects TLS (Node reads NODE_EXTRA_CA_CERTS; npm's own cafile is in its config).
 */
const REGISTRY_ACCESS = ['NODE_EXTRA_CA_CERTS', 'HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy', 'NO_PROXY', 'no_proxy'];

function run(command: string, args: string[], cwd: string, timeoutMs = 60_000) {
  // Only what a user's shell has: the node that runs npm, a home for npm's cache, and registry access.
  const env: NodeJS.ProcessEnv = { PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`, HOME: process.env.HOME ?? '' };
  for (const name of REGISTRY_ACCESS) if (process.env[name] !== undefined) env[name] = process.env[name];
  const r = spawnSync(command, args, { cwd, env, encoding: 'utf8', timeout: timeoutMs });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, error: r.error };
}

beforeAll(() => {
  work = tempDir('ps-package-');
  const clone = join(work.path, 'clone');
  cpSync(REPO, clone, { recursive: true, filter: (src) => !SKIPPED_IN_COPY.has(src.slice(REPO.length).split('/')[0] ?? '') });
  // What a clean clone has after `npm ci`; a dist/ from a build run there must not be packed.
  symlinkSync(join(REPO, 'node_modules'), join(clone, 'node_modules'));
  mkdirSync(join(clone, 'dist/api/v1/users'), { recursive: true });
  writeFileSync(join(clone, 'dist/api/v1/users/alice'), '{}');
  expect(existsSync(join(clone, 'build'))).toBe(false);

  const packed = run('npm', ['pack', '--pack-destination', work.path], clone, 180_000);
  expect(packed.code, `${packed.stderr}${packed.error ?? ''}`).toBe(0);
  const name = readdirSync(work.path).find((f) => /^profile-snapshot-.+\.tgz$/.test(f));
  expect(name, readdirSync(work.path).join(', ')).toBeDefined();
  tarball = join(work.path, name!);
  const listing = run('tar', ['-tzf', tarball], work.path);
  expect(listing.code, listing.stderr).toBe(0);
  contents = listing.stdout
    .split('\n')
    .filter(Boolean)
    .map((f) => f.replace(/^package\//, ''));

  const prefix = join(work.path, 'prefix');
  // --prefix also moves npm's global config to <prefix>/etc/npmrc: keep this machine's (its registry, its CA file).
  const globalConfig = run('npm', ['config', 'get', 'globalconfig'], work.path).stdout.trim();
  const install = run(
    'npm',
    ['install', '-g', '--prefix', prefix, '--globalconfig', globalConfig, tarball, '--prefer-offline', '--no-audit', '--no-fund'],
    work.path,
    540_000,
  );
  expect(install.code, `${install.stderr}${install.error ?? ''}`).toBe(0);
  installed = join(prefix, 'bin/profile-snapshot');
}, 600_000);

afterAll(() => work?.cleanup());

describe('npm pack, then npm install -g of the tarball', () => {
  it('packs the compiled code, bin/, the contract, the SQL and the docs its messages name, and nothing else', () => {
    for (const file of [
      'bin/profile-snapshot.js',
      'build/cli/main.js',
      'build/index.js',
      'build/index.d.ts',
      'build/verify/profiles-worker.js',
      'contract/openapi.json',
      'data/schema.sql',
      'data/sample.sql',
      // The CLI's hints and --help send a reader to these (store errors, --shard, store track).
      'docs/store.md',
      'docs/scaling-out.md',
      'docs/change-clock.md',
      'package.json',
      'README.md',
    ]) {
      expect(contents, file).toContain(file);
    }
    const stray = contents.filter(
      (f) => /^(test|scripts|src|dist|\.ci|\.profile-snapshot|node_modules)\//.test(f) || f.endsWith('.map') || f.endsWith('.db'),
    );
    expect(stray).toEqual([]);
  });

  it('gives a working profile-snapshot --help', () => {
    const help = run(installed, ['--help'], work.path);
    expect(help.code, help.stderr).toBe(0);
    expect(help.stdout).toMatch(/^Usage: profile-snapshot /m);
    for (const command of ['build', 'watch', 'serve', 'verify']) expect(help.stdout).toContain(command);
  });

  it('builds a store into an out dir, the contract included', () => {
    const db = join(work.path, 'profiles.db');
    sampleStore(db);
    const out = join(work.path, 'site');
    const built = run(installed, ['build', '--db', db, '--out', out], work.path);
    expect(built.code, built.stderr).toBe(0);
    expect(built.stderr).toMatch(/profiles published/);
    expect(JSON.parse(readFileSync(join(out, 'api/v1/users/alice'), 'utf8')).data.username).toBe('Alice');
    expect(readFileSync(join(out, 'api/v1/openapi.json'), 'utf8')).toBe(readFileSync(join(REPO, 'contract/openapi.json'), 'utf8'));
  });
});
