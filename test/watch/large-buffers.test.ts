/**
 * A watcher lives through many cycles, so it has malloc map its large buffers on their own before
 * its first (core/memory.ts, keepLargeBuffersApart): what a cycle or a publish frees then leaves the
 * resident set at once. Whether that call maps them is the release test's (test/core); this one
 * checks that a watcher makes it, which taking the call out of Watcher.start would otherwise leave
 * unseen.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { keepLargeBuffersApart } from '../../src/core/memory.js';
import { Watcher, type WatchEvent } from '../../src/watch/loop.js';
import { ensureCompiled, makeStore, tempDir, waitFor } from './helpers.js';

vi.mock(import('../../src/core/memory.js'), async (original) => ({ ...(await original()), keepLargeBuffersApart: vi.fn() }));

describe('a watcher and its large buffers', () => {
  const dir = tempDir();
  afterAll(() => dir.cleanup());

  it('has them mapped apart as it starts, before its first cycle', async () => {
    ensureCompiled();
    const db = join(dir.path, 'store.db');
    makeStore(db, 5);
    const events: WatchEvent[] = [];
    const watcher = Watcher.start({
      build: { db, out: join(dir.path, 'out') },
      intervalMs: 60_000,
      snapshotTime: () => ({ ms: Date.now(), reproducible: false }),
      onEvent: (event) => events.push(event),
    });
    expect(keepLargeBuffersApart).toHaveBeenCalledOnce();
    expect(events.filter((event) => event.type === 'cycle')).toEqual([]);
    await waitFor('the first cycle', () => events.some((event) => event.type === 'cycle'));
    watcher.stop();
    await watcher.done;
    expect(keepLargeBuffersApart).toHaveBeenCalledOnce();
  });
});
