/**
 * Real filesystem faults need mounts: a size-limited tmpfs, a read-only bind mount. Only root with
 * CAP_SYS_ADMIN outside a locked-down container may mount, as on this project's CI machines; tests
 * that need it are skipped elsewhere (their injected-fault twins still run).
 */
import { spawnSync } from 'node:child_process';
import { tempDir } from './store.js';

export const sh = (cmd: string, ...args: string[]) => spawnSync(cmd, args, { encoding: 'utf8' });

/** Whether this machine lets the tests mount. */
export const canMount = (() => {
  if (process.getuid?.() !== 0) return false;
  const dir = tempDir('ps-mount-');
  try {
    const ok = sh('mount', '-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir.path).status === 0;
    if (ok) sh('umount', dir.path);
    return ok;
  } finally {
    dir.cleanup();
  }
})();
