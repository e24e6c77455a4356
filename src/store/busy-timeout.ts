/**
 * How long a read of the store waits for a writer's lock, apart from read.ts so the CLI's options
 * can name it without loading SQLite.
 */

/** How long a read waits by default for a writer's lock on the store before giving up (exit 3). */
export const DEFAULT_BUSY_TIMEOUT_MS = 5000;
