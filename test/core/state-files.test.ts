/**
 * The tool's small files under `.profile-snapshot/` (the manifest, the last-pass record, the
 * watcher's status) go through one writer with one guard: none is ever written through a symlink
 * standing where the state folder should be.
 */
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { STATE_DIR } from '../../src/core/layout.js';
import { recordPass } from '../../src/incremental/last-pass.js';
import { renderKeyOf } from '../../src/core/render-key.js';
import { writeClaims } from '../../src/output/manifest.js';
import { writeStatus, type WatchStatus } from '../../src/watch/status.js';
import { eachTestWorkspace, type Workspace } from '../helpers/store.js';

let dir: Workspace['dir'];
let out: string;
eachTestWorkspace((w) => ({ dir, out } = w), { prefix: 'ps-state-files-' });

/** The out dir with its state folder a symlink to a folder holding a manifest; returns that folder. */
function linkedStateDir(): string {
  const elsewhere = join(dir.path, 'elsewhere');
  mkdirSync(elsewhere);
  writeFileSync(join(elsewhere, 'manifest'), 'profile-snapshot manifest 1\n');
  mkdirSync(out);
  symlinkSync(elsewhere, join(out, STATE_DIR));
  return elsewhere;
}

describe('small files under the state folder', () => {
  it('the status, the manifest and the last-pass record refuse a symlinked state folder and write nothing through it', () => {
    const elsewhere = linkedStateDir();
    expect(() => writeStatus(out, { pid: 1 } as unknown as WatchStatus)).toThrow(/symbolic link/);
    expect(() => writeClaims(out, { profiles: ['alice'], files: [] })).toThrow(/symbolic link/);
    // Best effort by design: a record it cannot write is skipped, never written elsewhere.
    recordPass(out, {
      renderKey: renderKeyOf('https://p.example.com', 't'),
      store: 's',
      snapshotMs: 0,
      stableUntilMs: null,
      profiles: 0,
      creators: 0,
      skipped: 0,
      files: 0,
      warnings: [],
    });
    expect(readdirSync(elsewhere)).toEqual(['manifest']);
    expect(readFileSync(join(elsewhere, 'manifest'), 'utf8')).toBe('profile-snapshot manifest 1\n');
  });
});
