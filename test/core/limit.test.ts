import { describe, expect, it } from 'vitest';
import { limitTo } from '../../src/core/limit.js';

describe('limitTo', () => {
  it('runs at most n tasks at once, every task once, in the order given, failures passed on', async () => {
    const limit = limitTo(3);
    let running = 0;
    let most = 0;
    const started: number[] = [];
    const task = (i: number) => async () => {
      started.push(i);
      running++;
      most = Math.max(most, running);
      await new Promise((resolve) => setTimeout(resolve, 1 + (i % 4)));
      running--;
      if (i === 7) throw new Error('task 7');
      return i;
    };
    const results = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => limit(task(i))));
    expect(most).toBe(3);
    expect(started).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(results.filter((r) => r.status === 'fulfilled').map((r) => (r as PromiseFulfilledResult<number>).value)).toHaveLength(19);
    expect(results[7]).toMatchObject({ status: 'rejected', reason: new Error('task 7') });
  });
});
