/**
 * A limit on work in flight: at most `concurrency` of the tasks handed to it run at once, the rest
 * wait their turn in order. Shared by callers that must stay within one bound together (both objects
 * of a join share one).
 */
export type Limit = <T>(task: () => Promise<T>) => Promise<T>;

export function limitTo(concurrency: number): Limit {
  let running = 0;
  const waiting: (() => void)[] = [];
  return async <T>(task: () => Promise<T>): Promise<T> => {
    while (running >= concurrency) await new Promise<void>((resolve) => waiting.push(resolve));
    running++;
    try {
      return await task();
    } finally {
      running--;
      waiting.shift()?.();
    }
  };
}
