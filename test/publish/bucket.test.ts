/**
 * The bucket's own parts that need no server: the stores' quirks table (bucket/stores.ts) and the one
 * worker pool every request goes through (bucket/pool.ts).
 */
import { describe, expect, it } from 'vitest';
import { S3_PART_RULES } from '../../src/publish/bucket/compose-plan.js';
import { inPool, runPool } from '../../src/publish/bucket/pool.js';
import { partRulesOf, quirksOf } from '../../src/publish/bucket/stores.js';

describe('the stores table', () => {
  it('tells R2, GCS and any other endpoint apart by host', () => {
    expect(quirksOf('https://abc123.r2.cloudflarestorage.com')).toEqual({ equalParts: true, batchDelete: true });
    expect(quirksOf('https://storage.googleapis.com')).toEqual({ equalParts: false, batchDelete: false });
    expect(quirksOf('http://127.0.0.1:9000')).toEqual({ equalParts: false, batchDelete: true });
    expect(quirksOf(undefined)).toEqual({ equalParts: false, batchDelete: true });
    // A host that only contains a store's name is not that store.
    expect(quirksOf('https://r2.cloudflarestorage.com.example.org').equalParts).toBe(false);
  });

  it("joins in equal parts on R2, or when told to, and by S3's rules elsewhere", () => {
    expect(partRulesOf('https://abc123.r2.cloudflarestorage.com', undefined).fixedPartBytes).toBe(S3_PART_RULES.minPartBytes);
    expect(partRulesOf('http://127.0.0.1:9000', undefined)).toBe(S3_PART_RULES);
    expect(partRulesOf('http://127.0.0.1:9000', true).fixedPartBytes).toBe(S3_PART_RULES.minPartBytes);
    expect(partRulesOf('https://abc123.r2.cloudflarestorage.com', false)).toBe(S3_PART_RULES);
  });
});

describe('the worker pool', () => {
  const settle = () => new Promise((resolve) => setImmediate(resolve));

  it('runs every item, never more than its concurrency at once', async () => {
    let running = 0,
      most = 0;
    const done: number[] = [];
    await inPool([1, 2, 3, 4, 5, 6, 7], 3, async (item) => {
      most = Math.max(most, ++running);
      await settle();
      done.push(item);
      running--;
    });
    expect(done.toSorted()).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(most).toBe(3);
  });

  it('stops at the first failure: nothing further starts, what is in flight ends, the error is thrown', async () => {
    const started: number[] = [];
    let inFlightEnded = 0;
    const failing = inPool([1, 2, 3, 4, 5, 6], 2, async (item) => {
      started.push(item);
      await settle();
      if (item === 1) throw new Error('one failed');
      inFlightEnded++;
    });
    await expect(failing).rejects.toThrow('one failed');
    expect(started).toEqual([1, 2]);
    expect(inFlightEnded).toBe(1);
  });

  it('keeps the failures it is told to set aside and goes on; returns what a stop left unstarted', async () => {
    const aside: number[] = [];
    let stopped = false;
    const notStarted = await runPool(
      [1, 2, 3, 4, 5, 6],
      1,
      async (item) => {
        if (item % 2 === 0) throw new Error(`even ${item}`);
        if (item === 3) stopped = true;
      },
      { setAside: (item) => (aside.push(item), true), stop: () => stopped },
    );
    expect(aside).toEqual([2]);
    expect(notStarted).toEqual([4, 5, 6]);
  });
});
