/**
 * A build that fails (exit 3, 4 or 5) leaves the out dir as it found it: an out dir that did not
 * exist still does not (nor do the parents the build would have made for it), and an existing one
 * gains no folder and no file, not even the tool's own `.profile-snapshot/`. Real CLI, real stores.
 */
import fg from 'fast-glob';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sampleStore } from '../helpers/store.js';
import { buildArgs, cli, makeStore, tempDir } from './helpers.js';

let dir: ReturnType<typeof tempDir>;
beforeEach(() => {
  dir = tempDir();
});
afterEach(() => dir.cleanup());

/** Every entry under `root`, folders included (dot folders too), or undefined when it does not exist. */
function entries(root: string): string[] | undefined {
  if (!existsSync(root)) return undefined;
  return fg.sync('**/*', { cwd: root, dot: true, onlyFiles: false, markDirectories: true, followSymbolicLinks: false }).sort();
}

/** A store of about 1 MB, so a fault fired at the fifth staged file lands mid-pass. */
function bigStore(): string {
  const db = join(dir.path, 'big.db');
  makeStore(db, 700, { bioBytes: 1200, journal: 'delete' });
  return db;
}

function sample(): string {
  const db = join(dir.path, 'sample.db');
  sampleStore(db); // holds rows with data warnings
  return db;
}

describe('a failed build into an out dir that did not exist', () => {
  it('--strict with data warnings (exit 4): no out dir, and none of the parents it would have made', () => {
    const out = join(dir.path, 'new', 'deeper', 'dist');
    const r = cli(buildArgs(sample(), out, '--strict'));
    expect(r.code, r.stderr).toBe(4);
    expect(existsSync(join(dir.path, 'new'))).toBe(false);
  });

  it('the store truncated mid-pass (exit 3): no out dir', () => {
    const db = bigStore();
    const out = join(dir.path, 'dist');
    const r = cli(buildArgs(db, out), { FAULT_OUT: out, FAULT_ON_STAGE: `truncate -s 65536 '${db}'` });
    expect(r.code, r.stderr).toBe(3);
    expect(entries(out)).toBeUndefined();
  });

  it('the disk full mid-pass (exit 5): no out dir', () => {
    const out = join(dir.path, 'dist');
    const r = cli(buildArgs(bigStore(), out), { FAULT_OUT: out, FAULT_ENOSPC_AFTER: '20000' });
    expect(r.code, r.stderr).toBe(5);
    expect(r.stderr).toContain('ENOSPC');
    expect(entries(out)).toBeUndefined();
  });
});

describe('a failed build into an existing out dir that it never wrote', () => {
  it('--strict with data warnings (exit 4): an empty out dir stays empty', () => {
    const out = join(dir.path, 'dist');
    mkdirSync(out);
    const r = cli(buildArgs(sample(), out, '--strict'));
    expect(r.code, r.stderr).toBe(4);
    expect(entries(out)).toEqual([]);
  });

  it('a file it did not write in the way (exit 5): the out dir holds exactly what it held', () => {
    const out = join(dir.path, 'dist');
    mkdirSync(join(out, 'api/v1/users'), { recursive: true });
    writeFileSync(join(out, 'api/v1/users/user00001'), 'hand-written');
    writeFileSync(join(out, 'index.html'), '<h1>landing</h1>');
    const before = entries(out);
    const r = cli(buildArgs(bigStore(), out));
    expect(r.code, r.stderr).toBe(5);
    expect(r.stderr).toContain('refusing to overwrite');
    expect(entries(out)).toEqual(before);
  });

  it('the store truncated mid-pass (exit 3): the out dir holds exactly what it held', () => {
    const db = bigStore();
    const out = join(dir.path, 'dist');
    mkdirSync(out);
    writeFileSync(join(out, 'index.html'), '<h1>landing</h1>');
    const r = cli(buildArgs(db, out), { FAULT_OUT: out, FAULT_ON_STAGE: `truncate -s 65536 '${db}'` });
    expect(r.code, r.stderr).toBe(3);
    expect(entries(out)).toEqual(['index.html']);
  });
});
