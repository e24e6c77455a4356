/**
 * Reading a tree that a build or watcher may be committing: a reader (publish, verify) reads again
 * until one read saw a single snapshot, or its wait runs out. A read saw one snapshot when the
 * manifest was not replaced and no writer came or went while it read, and no entry was pending
 * while a writer holds the out dir (a commit under way). Entries pending with no writer alive are an
 * interrupted build: no wait mends that, so the read is returned at once.
 */
import { OutDirLock, sleepSync } from './lock.js';
import { manifestStamp } from './manifest.js';

/** How long a reader waits by default for a build's or watcher's commit to end. */
export const DEFAULT_COMMIT_WAIT_MS = 30_000;

export interface SettledRead<T> {
  value: T;
  /** Manifest entries still pending in the last read. */
  pending: number;
  /** The last read may mix two snapshots: a writer replaced the manifest, or came or went, meanwhile. */
  changed: boolean;
  /** A writer held the out dir with entries pending when the wait ran out. */
  inCommit: boolean;
}

/** Runs `read` (which says how many entries it found pending) until it saw one settled tree, at most `waitMs`. */
export function readSettled<T>(
  out: string,
  waitMs: number,
  read: (writerActive: boolean) => { value: T; pending: number },
): SettledRead<T> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const before = manifestStamp(out);
    const writerActive = OutDirLock.holderOf(out) !== undefined;
    const { value, pending } = read(writerActive);
    const changed = manifestStamp(out) !== before || (OutDirLock.holderOf(out) !== undefined) !== writerActive;
    const inCommit = writerActive && pending > 0;
    if ((changed || inCommit) && Date.now() < deadline) {
      // A changed tree is read again at once; a commit under way is given a moment to end.
      if (!changed) sleepSync(100);
      continue;
    }
    return { value, pending, changed, inCommit };
  }
}
