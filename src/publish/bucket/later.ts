/**
 * Sending again later in the same publish. A request that failed after the SDK's own attempts (a
 * dropped connection, throttling, a 5xx) is set aside and sent again once the rest are done, in a
 * few more rounds with a pause before each, so one reset among a million uploads costs one upload
 * again, not the publish. A failure that is not transient (a lost lease, a refusal, the tree's)
 * stops everything at once, as before. A round in which nothing passes any more (the bucket is out
 * of reach) ends early: its remaining items wait for the next round's pause with the failed ones.
 */
import { remoteError, SnapshotError } from '../../core/errors.js';
import { plural } from '../../core/text.js';
import { Remote } from './client.js';
import { runPool } from './pool.js';

/** The pauses before each later round: a blip, a restart, a short outage. */
export const LATER_PAUSES_MS: readonly number[] = [1_000, 5_000, 15_000];

/** Sending again later, for one publish: the pauses before its rounds, and what it sent again. */
export class Later {
  /** Requests set aside after the SDK's attempts failed, and sent again later. */
  sent = 0;

  /** `pausesMs`: before each later round (tests shorten them). */
  constructor(private readonly pausesMs: readonly number[] = LATER_PAUSES_MS) {}

  /** Runs `task` for every item, at most `concurrency` at once, sending transient failures again later. */
  async inPool<T>(items: readonly T[], concurrency: number, task: (item: T) => Promise<void>): Promise<void> {
    let pending = items;
    for (let round = 0; ; round++) {
      const aside = await roundOf(pending, concurrency, task);
      if (aside.items.length === 0) return;
      if (round === this.pausesMs.length) throw gaveUp(aside, this.pausesMs.length);
      this.sent += aside.items.length;
      await new Promise((resolve) => setTimeout(resolve, this.pausesMs[round]));
      pending = aside.items;
    }
  }

  /** One task, sent again later as the pool's items are. */
  once(task: () => Promise<void>): Promise<void> {
    return this.inPool([undefined], 1, task);
  }
}

interface SetAside<T> {
  items: T[];
  /** The last transient failure among them. */
  lastError: unknown;
}

/** One round: items whose task failed transiently, or were not started because nothing passed any more. */
async function roundOf<T>(items: readonly T[], concurrency: number, task: (item: T) => Promise<void>): Promise<SetAside<T>> {
  const aside: SetAside<T> = { items: [], lastError: undefined };
  // Twice the pool failing in a row, nothing passing between: the bucket is out of reach for now.
  const stallAfter = 2 * concurrency;
  let failuresInRow = 0;
  const passed = async (item: T) => {
    await task(item);
    failuresInRow = 0;
  };
  const notStarted = await runPool(items, concurrency, passed, {
    setAside(item, error) {
      if (!Remote.transient(error)) return false;
      aside.items.push(item);
      aside.lastError = error;
      failuresInRow++;
      return true;
    },
    stop: () => failuresInRow >= stallAfter,
  });
  aside.items.push(...notStarted);
  return aside;
}

function gaveUp<T>(aside: SetAside<T>, rounds: number): SnapshotError {
  const last = aside.lastError as SnapshotError;
  return remoteError(
    `${last.message}; ${plural(aside.items.length, 'request')} still failed after ${rounds} more rounds`,
    `${last.hint ?? 'check the bucket and the network'} (what this publish already sent stays sent)`,
    last.cause,
  );
}
