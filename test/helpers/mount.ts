/**
 * Real filesystem faults need mounts: a size-limited tmpfs, a read-only bind mount. Only root with
 * CAP_SYS_ADMIN outside a locked-down container may mount, as on this project's CI machines; tests
 * that need it are skipped elsewhere (their injected-fault twins still run).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { tempDir } from './store.js';

export const sh = (cmd: string, ...args: string[]) => spawnSync(cmd, args, { encoding: 'utf8' });

/** Whether this machine lets the tests mount. */
export const canMount = (() => {
  if (process.getuid?.() !== 0) return false;
  const dir = tempDir('ps-mount-');
  try {
    mountTmpfs(dir.path, '1m');
    sh('umount', dir.path);
    return true;
  } catch {
    return false;
  } finally {
    dir.cleanup();
  }
})();

/**
 * A new folder at `path` with a tmpfs of `size` (`1m`, `4m`) mounted on it: a disk that fills. The
 * caller unmounts it (`umount -l`).
 */
export function mountTmpfs(path: string, size: string): string {
  mkdirSync(path, { recursive: true });
  const r = sh('mount', '-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', path);
  if (r.status !== 0) throw new Error(`cannot mount a ${size} tmpfs on ${path}: ${r.stderr}`);
  return path;
}
