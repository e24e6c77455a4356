/**
 * Hands memory the process has freed back to the system. glibc's malloc keeps freed memory in its
 * arenas (one per thread that allocates) for reuse, and raises the size below which it keeps it as
 * large buffers are freed, so a watcher whose cycles and publishes each allocate and free tens of
 * megabytes of buffers stays resident at the sum of every thread's high-water mark, most of it
 * free. `malloc_trim(0)` returns the free pages of every arena, whichever thread calls it.
 *
 * It is reached through Node's `node:ffi` (Node 26 on), loaded on first use with its experimental
 * warning left unsaid (the process asked for nothing experimental). Where there is no `node:ffi`,
 * no glibc (musl, macOS), or the permission model forbids foreign calls, it does nothing: the
 * memory stays with malloc, as it always did.
 */

import type * as Ffi from 'node:ffi';

interface Malloc {
  malloc_trim: (pad: bigint) => number;
  mallopt: (option: number, value: number) => number;
}

/** glibc's malloc.h: the size from which an allocation is mapped on its own. */
const M_MMAP_THRESHOLD = -3;

let malloc: Malloc | null | undefined;

/** Returns the process's freed memory to the system; true when it could ask (glibc, node:ffi). */
export function releaseFreedMemory(): boolean {
  malloc ??= loadMalloc();
  if (malloc === null) return false;
  malloc.malloc_trim(0n);
  return true;
}

/**
 * Has malloc map every allocation of `bytes` or more on its own from now on, so that freeing one
 * returns its pages at once, wherever and whenever it is freed. glibc's own threshold starts at
 * 128 KiB and rises to the size of the largest such buffer freed (up to 32 MiB), after which buffers
 * of a few megabytes come from the arenas, which keep them once freed. A threshold set here is
 * fixed, as the host's `MALLOC_MMAP_THRESHOLD_` would be; that setting, when the host made it,
 * stands. True when the threshold was set.
 */
export function mapAllocationsFrom(bytes: number): boolean {
  if (process.env.MALLOC_MMAP_THRESHOLD_ !== undefined) return false;
  malloc ??= loadMalloc();
  return malloc !== null && malloc.mallopt(M_MMAP_THRESHOLD, bytes) === 1;
}

function loadMalloc(): Malloc | null {
  if (process.platform !== 'linux') return null;
  try {
    // Typed as always there, which it is not before Node 26: undefined then.
    const ffi = quietly(() => process.getBuiltinModule('node:ffi')) as typeof Ffi | undefined;
    if (ffi === undefined) return null;
    // From the process's own image: whichever libc it runs on, malloc_trim is there only in glibc's.
    const { functions } = ffi.dlopen(null, {
      malloc_trim: { arguments: ['u64'], return: 'i32' },
      mallopt: { arguments: ['i32', 'i32'], return: 'i32' },
    });
    return functions as unknown as Malloc;
  } catch {
    // no glibc, or foreign calls not allowed: nothing to release through
    return null;
  }
}

/** Runs `load` with Node's ExperimentalWarning unsaid (Node emits it as `emitWarning(message, type)`). */
function quietly<T>(load: () => T): T {
  const emit = process.emitWarning;
  process.emitWarning = ((...args: unknown[]) => {
    if (args[1] !== 'ExperimentalWarning') (emit as (...args: unknown[]) => void).apply(process, args);
  }) as typeof emit;
  try {
    return load();
  } finally {
    process.emitWarning = emit;
  }
}
