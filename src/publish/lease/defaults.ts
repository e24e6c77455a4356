/**
 * How long publishers wait for and hold a lease on the prefix (lease.ts), apart from it so the CLI's
 * help can name them without loading the AWS SDK.
 */
import { thisHolder } from './holder.js';
import type { LeaseOptions } from './lease.js';

/** How long a publish waits for another publisher's lease before exit 8. */
export const DEFAULT_LOCK_TIMEOUT_MS = 120_000;
/** How long a lease lives unrenewed: a killed holder blocks the prefix this long at most. */
export const DEFAULT_LEASE_TTL_MS = 60_000;

/** How long a publish or a join waits for a held lease: the time asked for, or the default. */
export function lockWaitOf(asked: { lockTimeoutMs?: number | undefined }): number {
  return asked.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS;
}

/** The lease a publish or a join takes: the TTL asked for or the default, the store's writers, and this process. */
export function leaseOptionsOf(asked: { leaseTtlMs?: number | undefined; singleWriter?: boolean | undefined }): LeaseOptions {
  return { ttlMs: asked.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS, singleWriter: Boolean(asked.singleWriter), holder: thisHolder() };
}
