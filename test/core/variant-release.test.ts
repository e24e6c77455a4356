/**
 * A gzip variant that deflated many pieces hands the memory it freed back (core/memory.ts
 * releaseFreedNow): zlib's buffers, and the deflate worker's, stay in malloc's arenas otherwise,
 * resident through the copy's update and the commit that follow. A variant whose pieces were copied
 * from the last one has freed little, and does not ask.
 */
import { afterEach, beforeEach, expect, it, vi } from 'vitest';

vi.mock(import('../../src/core/release-freed.js'), async (original) => ({ ...(await original()), releaseFreedMemory: vi.fn(() => true) }));

import { fingerprint } from '../../src/core/hash.js';
import { enableMemoryUpkeep } from '../../src/core/memory.js';
import { releaseFreedMemory } from '../../src/core/release-freed.js';
import { CreatorsList } from '../../src/output/creators.js';
import { SHARE_DEFLATE_FROM } from '../../src/output/deflate-pool.js';
import { OutputTransaction } from '../../src/output/tree.js';
import { tempDir } from '../helpers/store.js';

let dir: ReturnType<typeof tempDir>;
beforeEach(() => {
  dir = tempDir();
});
afterEach(() => dir.cleanup());

/** One build of a list of `count` members, the first `changed` of them changed; what its variant cost, and the releases asked. */
function buildList(count: number, changed = 0) {
  const tx = OutputTransaction.begin(dir.path);
  const list = new CreatorsList(tx, 'list');
  for (let i = 0; i < count; i++) {
    const name = `user${String(i).padStart(6, '0')}`;
    const json = JSON.stringify({ username: name, bio: `bio ${i} ${'x'.repeat(i % 40)}`, views: i < changed ? 1 : 0 });
    tx.profile(name, fingerprint(json), '', Buffer.byteLength(json), () => json);
    list.add(name, json, fingerprint(json));
  }
  vi.mocked(releaseFreedMemory).mockClear();
  const pieces = list.finish(tx, '{"data":', () => '}')!;
  const released = vi.mocked(releaseFreedMemory).mock.calls.length;
  tx.commit();
  return { deflated: pieces.pieces - pieces.reused, released };
}

it('hands freed memory back after deflating many pieces, not after copying them', () => {
  enableMemoryUpkeep();
  const first = buildList(12_000);
  expect(first.deflated).toBeGreaterThanOrEqual(SHARE_DEFLATE_FROM);
  expect(first.released).toBe(1);

  const again = buildList(12_000, 5);
  expect(again.deflated).toBeLessThan(SHARE_DEFLATE_FROM);
  expect(again.released).toBe(0);
});
