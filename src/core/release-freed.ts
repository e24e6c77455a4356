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

type Trim = (pad: bigint) => number;

let trim: Trim | null | undefined;

/** Returns the process's freed memory to the system; true when it could ask (glibc, node:ffi). */
export function releaseFreedMemory(): boolean {
  trim ??= loadTrim();
  if (trim === null) return false;
  trim(0n);
  return true;
}

function loadTrim(): Trim | null {
  if (process.platform !== 'linux') return null;
  try {
    // Typed as always there, which it is not before Node 26: undefined then.
    const ffi = quietly(() => process.getBuiltinModule('node:ffi')) as typeof Ffi | undefined;
    if (ffi === undefined) return null;
    // From the process's own image: whichever libc it runs on, malloc_trim is there only in glibc's.
    return ffi.dlopen(null, { malloc_trim: { arguments: ['u64'], return: 'i32' } }).functions.malloc_trim;
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
