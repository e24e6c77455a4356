/**
 * How long publishers wait for and hold a lease on the prefix (lease.ts), apart from it so the CLI's
 * help can name them without loading the AWS SDK.
 */

/** How long a publish waits for another publisher's lease before exit 8. */
export const DEFAULT_LOCK_TIMEOUT_MS = 120_000;
/** How long a lease lives unrenewed: a killed holder blocks the prefix this long at most. */
export const DEFAULT_LEASE_TTL_MS = 60_000;
