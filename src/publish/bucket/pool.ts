/**
 * The one worker pool of a publish's requests: the uploads, the deletions, a large object's parts and
 * the rounds of sending again later (later.ts) all run through it.
 */

export interface PoolOptions<T> {
  /**
   * Whether a failure of `item` is kept for the caller while the pool goes on (later.ts: a transient
   * one). Any other failure stops the pool: nothing further is started, what is in flight is awaited,
   * and the first such error is thrown.
   */
  setAside?(item: T, error: unknown): boolean;
  /** Asked before each item: true starts no more (the items left are returned as not started). */
  stop?(): boolean;
}

/** Runs `task` for every item, at most `concurrency` at once; returns the items never started. */
export async function runPool<T>(
  items: readonly T[],
  concurrency: number,
  task: (item: T) => Promise<void>,
  options: PoolOptions<T> = {},
): Promise<T[]> {
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async () => {
    while (failure === undefined && !options.stop?.() && next < items.length) {
      const item = items[next++]!;
      try {
        await task(item);
      } catch (error) {
        if (!options.setAside?.(item, error)) failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  if (failure !== undefined) throw failure.error;
  return items.slice(next);
}

/** Runs `task` for every item, at most `concurrency` at once; the first failure stops the rest. */
export async function inPool<T>(items: readonly T[], concurrency: number, task: (item: T) => Promise<void>): Promise<void> {
  await runPool(items, concurrency, task);
}
