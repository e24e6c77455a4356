/**
 * `import { build } from 'profile-snapshot'` leaves its host process as it found it: no V8 flag set
 * (expose-gc would show in a fresh context), no handler, exit code, working folder or environment
 * changed, even for a store large enough to share its pass between threads and grow the heap past
 * the point where the CLI collects. The memory upkeep the CLI uses is the host's to opt in to.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SHARE_FROM } from '../../src/pass/threads.js';
import { REPO } from '../helpers/paths.js';
import { TestStore, tempDir, userName } from '../helpers/store.js';
import { ensureCompiled } from '../watch/helpers.js';
import { runCli } from '../helpers/process.js';

const FIXTURE = join(REPO, 'test/core/fixtures/library-host.mjs');
const ENTRY = pathToFileURL(join(REPO, 'build/index.js')).href;

describe('the library in a host process', () => {
  const dir = tempDir('ps-library-host-');
  afterAll(() => dir.cleanup());
  const db = join(dir.path, 'profiles.db');
  beforeAll(() => {
    ensureCompiled();
    const store = new TestStore(db);
    store.users(SHARE_FROM + 5_000, (id) => ({ user: { username: userName(id), bio: `A bio of user ${id}. `.repeat(8), views: id } }));
    store.close();
  }, 120_000);

  const host = (out: string, ...flags: string[]) => {
    const run = spawnSync(process.execPath, [FIXTURE, ENTRY, db, join(dir.path, out), ...flags], { encoding: 'utf8', timeout: 120_000 });
    expect(run.status, run.stderr).toBe(0);
    return JSON.parse(run.stdout) as { before: unknown; after: { gcExposed: boolean }; threads: number; profiles: number };
  };

  it('build() sets no V8 flag and changes nothing of its host', () => {
    const seen = host('plain');
    expect(seen.threads).toBe(2);
    expect(seen.profiles).toBe(SHARE_FROM + 5_000);
    expect(seen.after).toEqual(seen.before);
  }, 120_000);

  it('a host that opts in gets the upkeep the CLI uses', () => {
    const seen = host('opted-in', 'opt-in');
    expect(seen.after.gcExposed).toBe(true);
  }, 120_000);

  it('the CLI takes its upkeep from PROFILE_SNAPSHOT_MEMORY_UPKEEP, and refuses a part it does not know', () => {
    const out = join(dir.path, 'cli');
    for (const setting of ['off', '-rows,-young-generation', '']) {
      const run = runCli(['build', '--db', db, '--out', out], { env: { PROFILE_SNAPSHOT_MEMORY_UPKEEP: setting } });
      expect(run.code, run.stderr).toBe(0);
    }
    const bad = runCli(['build', '--db', db, '--out', out], { env: { PROFILE_SNAPSHOT_MEMORY_UPKEEP: '-nonsense' } });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(
      /PROFILE_SNAPSHOT_MEMORY_UPKEEP has an unknown part "-nonsense".*-young-generation, -release-freed, -map-large, -rows/,
    );
  }, 120_000);
});
