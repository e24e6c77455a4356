/**
 * Under load and under crashes: a writer process hammers the store (WAL) while cycles run, a reader
 * process reads the tree in a tight loop and must never find a published file missing, partial or
 * inconsistent, and kill -9 at random moments always leaves a servable tree that a restarted watcher
 * brings to exactly what a fresh build writes, with no temporary file left anywhere.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { build } from '../../src/build.js';
import {
  ensureCompiled,
  FIXTURES,
  lastCycle,
  makeStore,
  type Proc,
  publishedFiles,
  startCli,
  startNode,
  status,
  userName,
  waitFor,
} from './helpers.js';
import { eachTestWorkspace, type Workspace } from '../helpers/store.js';

let dir: Workspace['dir'];
let db: string;
let out: string;
const procs: Proc[] = [];
const EPOCH = '1767225600'; // 2026-01-01: a fixed snapshot time, so a reference build can match byte for byte

beforeAll(() => ensureCompiled(), 120_000);
eachTestWorkspace((w) => ({ dir, db, out } = w), { prefix: 'ps-watch-' });
afterEach(async () => {
  for (const proc of procs.splice(0)) await proc.stop();
});

const spawnTracked = (proc: Proc) => (procs.push(proc), proc);
const watch = (...args: string[]) =>
  spawnTracked(
    startCli(['watch', '--db', db, '--out', out, '--base-url', 'https://p.example.com', ...args], { env: { SOURCE_DATE_EPOCH: EPOCH } }),
  );
const writer = () => spawnTracked(startNode([join(FIXTURES, 'writer.mjs'), db]));

async function finish(proc: Proc): Promise<any> {
  proc.child.kill('SIGTERM');
  const { code } = await proc.exit;
  expect(code, proc.stderr()).toBe(0);
  return JSON.parse(proc.stdout());
}

const ALLOWED =
  /^(api\/v1\/users\/[a-z0-9_-][a-z0-9._-]*|service-api\/v1\/users\/[a-z0-9_-][a-z0-9._-]*|service-api\/v1\/creators|service-api\/v1\/\.creators\.gz|api\/v1\/openapi\.json|_errors\/[a-z-]+\.json)$/;

/** Servable: only published paths (no temp file where it would be served), each one whole JSON. */
function expectServable(users: number): void {
  const files = publishedFiles(out);
  expect(files.filter((f) => !ALLOWED.test(f))).toEqual([]);
  for (const f of files) {
    const text = f.endsWith('.gz') ? gunzipSync(readFileSync(join(out, f))).toString('utf8') : readFileSync(join(out, f), 'utf8');
    try {
      JSON.parse(text);
    } catch {
      throw new Error(`${f} is not whole JSON after a crash (${text.length} bytes)`);
    }
  }
  // Users that were published before the crash and still are: every alias file is there.
  const present = new Set(files);
  for (let id = 1; id <= users; id++) {
    for (const prefix of ['api/v1/users/', 'service-api/v1/users/']) {
      if (!present.has(prefix + userName(id))) throw new Error(`${prefix}${userName(id)} missing after a crash`);
    }
  }
}

describe('under load and crashes', () => {
  it('a reader never sees a missing, partial or inconsistent file while a writer hammers the store during many cycles', async () => {
    const users = 300;
    makeStore(db, users);
    const hammer = writer();
    const watcher = watch('--interval', '0.2');
    // Its first cycle done: not cycleAfter, which waits for an idle moment, and cycles slower than
    // the interval (a loaded machine) leave almost none.
    await waitFor('the first cycle', () => lastCycle(out) >= 1, 30_000);
    const names = Array.from({ length: users }, (_, i) => userName(i + 1)).join(',');
    const reader = spawnTracked(startNode([join(FIXTURES, 'reader.mjs'), out, names]));
    await waitFor('the reader to start', () => reader.stderr().includes('reading'));
    const from = lastCycle(out);
    await waitFor('10 more cycles', () => lastCycle(out) >= from + 10, 60_000);

    const read = await finish(reader);
    const wrote = await finish(hammer);
    expect(read.errors).toEqual([]);
    expect(read.reads).toBeGreaterThan(1000);
    expect(read.pairChecks).toBeGreaterThan(10); // the creators list was snapshot-consistent every time
    expect(wrote.error).toBeUndefined();
    expect(wrote.transactions).toBeGreaterThan(100);
    // Every cycle succeeded against the busy store (no SQLITE_BUSY, no inconsistency) and published changes.
    expect(watcher.stderr()).not.toMatch(/FAILED/);
    expect(status(out)!.consecutiveFailures).toBe(0);
    expect((watcher.stderr().match(/cycle \d+: \d/g) ?? []).length).toBeGreaterThanOrEqual(10);
  }, 90_000);

  it('kill -9 at random moments leaves a servable tree; a restart converges to a fresh build and leaves no temp files', async () => {
    const users = 1500;
    makeStore(db, users);
    const hammer = writer();
    for (let round = 1; round <= 3; round++) {
      const watcher = watch('--interval', '0.3');
      // Past its first cycle, then a random moment (during the pass, the commit or the pause).
      await waitFor(
        'a cycle to finish',
        () => status(out)?.pid === watcher.child.pid && (status(out)?.lastCycle?.number ?? 0) >= 1,
        30_000,
      );
      await new Promise((r) => setTimeout(r, Math.random() * 600));
      watcher.child.kill('SIGKILL');
      await watcher.exit;
      expectServable(users);
    }
    await finish(hammer);

    // A restart takes over the dead watcher's lock and converges to the store as it is now.
    const watcher = watch('--interval', '600');
    await waitFor(
      "the restarted watcher's first cycle",
      () => {
        const s = status(out);
        return s !== undefined && s.pid === watcher.child.pid && s.lastCycle?.ok && s.state === 'idle';
      },
      30_000,
    );
    watcher.child.kill('SIGTERM');
    expect((await watcher.exit).code).toBe(0);

    const reference = join(dir.path, 'reference');
    build({ db, out: reference, baseUrl: 'https://p.example.com', snapshotMs: Number(EPOCH) * 1000, reproducible: true });
    const files = publishedFiles(out);
    expect(files).toEqual(publishedFiles(reference));
    for (const f of files) {
      if (readFileSync(join(out, f), 'utf8') !== readFileSync(join(reference, f), 'utf8'))
        throw new Error(`${f} differs from a fresh build`);
    }
    // No staging folder, no temporary manifest, status or lock file left behind.
    expect(readdirSync(join(out, '.profile-snapshot')).sort()).toEqual([
      'creators-gzip-index',
      'last-pass.json',
      'manifest',
      'status.json',
    ]);
  }, 120_000);
});
