/**
 * Keeps a long pass's resident memory near what it really holds. V8 schedules a full collection by
 * how far the old generation has grown, and a build promotes a lot that dies soon after: the last
 * build's manifest as this build's replaces it entry by entry, the growing tables of the new one, the
 * creators list's bookkeeping. That garbage held the peak well above the live data, so the pass asks
 * for a full collection whenever the heap has grown enough since the last one (see MIN_STEP); the
 * peak resident memory is measured in BENCHMARKS.md.
 *
 * gc() is reached the way jest-leak-detector reaches it (expose-gc, then a fresh context). Where the
 * runtime refuses, this does nothing and V8 collects on its own schedule.
 *
 * Where a long-lived process (a watcher) goes idle or past its peak, it also hands what it freed back
 * to the system (core/release-freed.ts): malloc otherwise keeps every thread's high-water mark. Its
 * large buffers are mapped on their own, so that they leave when freed, peak or not.
 *
 * All of it changes the process's V8 (its flags, a collection now), so it is the host's choice: it
 * does nothing until the process opts in (`enableMemoryUpkeep`; the CLI does), and a library user's
 * process is left as it was. Threads a pass starts follow their parent (`memoryUpkeep`).
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { mapAllocationsFrom, releaseFreedMemory } from './release-freed.js';

/**
 * A collection runs once the heap has grown by a quarter of what the last one left live, and by at
 * least this much: a few per pass at any size, each marking about what is live, so they cost a small
 * share of the pass (a full collection is proportional to the live heap). A quarter, not half: at a
 * million profiles, garbage growing by half on top of a rebuild's live data took its peak past the
 * memory target.
 */
const MIN_STEP = 16 * 2 ** 20;

/**
 * Where a pass asks for a collection. Each is kept because the memory benchmark (`npm run
 * bench:memory`, BENCHMARKS.md) shows the peak resident memory rise without it; that benchmark
 * skips them one at a time.
 */
export const BUILD_COLLECTION_POINTS = [
  /** Every few thousand rows of a pass, when the heap grew enough. */
  'rows',
  /** After a full pass's rows, before the list: the threads' handovers have just been taken in. */
  'before-list',
  /** Once the list's bookkeeping is let go of. */
  'list-written',
  /** In a pass's thread, before its handover is posted (the pass that made it is garbage). */
  'handover',
  /**
   * In the owner, between a handover's profiles and its list members: the manifest's tables have
   * just grown to take the profiles in, and their old storage is garbage before the list's grows.
   */
  'adopted-profiles',
  /**
   * Once a build of a process that builds again (a watcher) has committed: the build's garbage is
   * shed before the wait for the next one (and the publish that runs in it).
   */
  'committed',
] as const;

/**
 * Every point where a collection is asked for: a build's, and a publish's, each kept because
 * bench-publish-1m (BENCHMARKS.md) shows the peak rise without it.
 */
export const COLLECTION_POINTS = [
  ...BUILD_COLLECTION_POINTS,
  /**
   * In a publish, once its plan is made and the bucket's state let go of (publish.ts): nothing else
   * frees that much memory before the creators list goes up, its peak.
   */
  'planned',
  /**
   * In a publish, once its uploads are done and the part buffers of its lists let go of: the state
   * it then writes is made without them (the end of a watcher's publish, measured with
   * bench-watch-memory).
   */
  'sent',
  /** In a watcher's publish thread, once a publish is done: the thread is idle until the next. */
  'published',
] as const;
export type CollectionPoint = (typeof COLLECTION_POINTS)[number];

/**
 * Where the freed memory is handed back to the system too: a watcher's points before it waits, and
 * a publish's once its plan let go of the bucket's state. Not within a pass, whose next rows would
 * only take the same memory back.
 */
const RELEASE_POINTS: readonly CollectionPoint[] = ['committed', 'planned', 'published'];

/**
 * A long-lived process's buffers of this size or more are mapped on their own
 * (`keepLargeBuffersApart`): the publish's part buffers and a cycle's larger working buffers. The
 * many smaller ones reuse pages malloc already has: mapped anew each time, every page of each would
 * fault in again.
 */
const MAPPED_FROM_BYTES = 2 ** 20;

/** What the host lets the build do to its process (see `enableMemoryUpkeep`). */
export interface MemoryUpkeep {
  /** Keep V8's young generation at its starting size (see `keepYoungGenerationSmall`); default true. */
  youngGeneration?: boolean;
  /** Hand freed memory back to the system at RELEASE_POINTS (see core/release-freed.ts); default true. */
  releaseFreed?: boolean;
  /** In a long-lived process, map large buffers on their own (see `keepLargeBuffersApart`); default true. */
  mapLarge?: boolean;
  /** Collection points left out (for the benchmark that shows what each is worth). */
  skip?: readonly CollectionPoint[];
}

let collect: (() => void) | undefined | null;
let floor = 0;
let upkeep: Required<MemoryUpkeep> | undefined;

/** Lets the build tune this process's V8 and collect when it should (the CLI's choice, and its threads'). */
export function enableMemoryUpkeep(settings: MemoryUpkeep = {}): void {
  upkeep = {
    youngGeneration: settings.youngGeneration ?? true,
    releaseFreed: settings.releaseFreed ?? true,
    mapLarge: settings.mapLarge ?? true,
    skip: [...(settings.skip ?? [])],
  };
}

/** The upkeep this process opted into, for the threads a pass starts (undefined: none). */
export const memoryUpkeep = (): MemoryUpkeep | undefined => upkeep;

/**
 * In a thread started with its parent's `memoryUpkeep()`: the same upkeep, and the young generation
 * kept small again, since the thread's start applied V8's default flags to the whole process.
 */
export function followMemoryUpkeep(parent: MemoryUpkeep | undefined): void {
  if (parent) enableMemoryUpkeep(parent);
  keepYoungGenerationSmall();
}

const collectsAt = (point: CollectionPoint): boolean => upkeep !== undefined && !upkeep.skip.includes(point);

function gc(): (() => void) | null {
  if (upkeep === undefined) return null;
  if (collect === undefined) {
    try {
      setFlagsFromString('--expose-gc');
      collect = runInNewContext('gc') as () => void;
    } catch {
      collect = null;
    }
  }
  return collect;
}

/** Collects when the heap grew enough since the last collection; cheap to call every few thousand rows. */
export function collectIfGrown(point: CollectionPoint): void {
  if (!collectsAt(point)) return;
  const used = process.memoryUsage().heapUsed;
  if (used < Math.max(floor + MIN_STEP, floor * 1.25)) return;
  const run = gc();
  if (run === null) return;
  run();
  floor = process.memoryUsage().heapUsed;
}

/**
 * Collects now, at a point where most of the heap just became garbage (a list's bookkeeping let go
 * of, a thread's pass once its handover is made).
 */
export function collectNow(point: CollectionPoint): void {
  if (!collectsAt(point)) return;
  gc()?.();
  floor = process.memoryUsage().heapUsed;
  if (upkeep?.releaseFreed && RELEASE_POINTS.includes(point)) releaseFreedMemory();
}

/**
 * Hands freed memory back to the system now, with no collection: where a build has just freed much
 * outside V8's heap. A gzip variant with thousands of pieces deflated leaves zlib's buffers and the
 * ended deflate worker's memory free in malloc's arenas; kept there, it stays resident through the
 * copy's update and the commit that follow.
 */
export function releaseFreedNow(): void {
  if (upkeep?.releaseFreed) releaseFreedMemory();
}

/**
 * Collects now when `bytes` were just let go of and they are worth a collection (MIN_STEP or more):
 * a small publish's state is not.
 */
export function collectAfterLettingGo(point: CollectionPoint, bytes: number): void {
  if (bytes >= MIN_STEP) collectNow(point);
}

/**
 * Once, in a process that lives on through many builds (a watcher), before the first: its buffers
 * of MAPPED_FROM_BYTES or more are mapped on their own from then on, in every thread, so each one
 * freed leaves the resident set at once. Otherwise malloc keeps them once its threshold has risen
 * past them, and the process stays at every thread's high-water mark until a point where it
 * releases. Not in a one-shot build, which exits instead of waiting.
 */
export function keepLargeBuffersApart(): void {
  if (upkeep?.mapLarge) mapAllocationsFrom(MAPPED_FROM_BYTES);
}

/**
 * Keeps V8's young generation at its starting size. Left to grow, it reaches tens of megabytes per
 * thread in a pass that allocates steadily (each row's strings die young), which is resident memory
 * and buys nothing here. A worker thread's start applies the process's V8 flags again, so a pass
 * that starts threads calls this once they run.
 */
export function keepYoungGenerationSmall(): void {
  if (!upkeep?.youngGeneration) return;
  try {
    setFlagsFromString('--semi-space-growth-factor=1');
  } catch {
    // a runtime that refuses flags keeps V8's own sizing
  }
}
