/**
 * Typed failures. Every expected failure is a SnapshotError carrying its exit code, so the CLI has
 * one exit point that maps errors to codes; anything else is a bug and exits 1.
 */
import { nativeMismatchOf } from './runtime.js';
import { plural } from './text.js';

export const ExitCode = {
  ok: 0,
  bug: 1,
  usage: 2,
  store: 3,
  strictWarnings: 4,
  output: 5,
  remote: 6,
  deletionGuard: 7,
  prefixHeld: 8,
  shardCount: 9,
  shardLayout: 10,
  partMissing: 11,
  listBehind: 12,
  stalled: 13,
  storeReadOnly: 14,
  clockFormat: 15,
  runtime: 16,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

export type SnapshotErrorKind =
  | 'usage'
  | 'store'
  | 'strictWarnings'
  | 'output'
  | 'remote'
  | 'deletionGuard'
  | 'prefixHeld'
  | 'shardCount'
  | 'shardLayout'
  | 'partMissing'
  | 'listBehind'
  | 'stalled'
  | 'storeReadOnly'
  | 'clockFormat'
  | 'runtime';

export class SnapshotError extends Error {
  readonly kind: SnapshotErrorKind;
  /** How to fix it, one sentence; printed after the message. */
  readonly hint: string | undefined;

  constructor(kind: SnapshotErrorKind, message: string, options: { hint?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SnapshotError';
    this.kind = kind;
    this.hint = options.hint;
  }

  get exitCode(): ExitCode {
    return ExitCode[this.kind];
  }
}

/** --strict found data warnings: nothing was written; the warnings go into the report. */
export class StrictWarningsError extends SnapshotError {
  readonly warnings: readonly { id: number; reason: string }[];

  constructor(warnings: readonly { id: number; reason: string }[]) {
    super('strictWarnings', `${plural(warnings.length, 'data warning')} under --strict; nothing was written`, {
      hint: 'fix the rows the warnings name in the store, or build without --strict',
    });
    this.warnings = warnings;
  }
}

export const usageError = (message: string, hint?: string, cause?: unknown) => new SnapshotError('usage', message, { hint, cause });
export const storeError = (message: string, hint?: string, cause?: unknown) => new SnapshotError('store', message, { hint, cause });
export const outputError = (message: string, hint?: string, cause?: unknown) => new SnapshotError('output', message, { hint, cause });
/** The object store cannot be used (unreachable, no bucket, access denied, retries exhausted): exit 6. */
export const remoteError = (message: string, hint?: string, cause?: unknown) => new SnapshotError('remote', message, { hint, cause });

/** Another publisher holds the bucket prefix (or took it over): exit 8, transient, a retry may succeed. */
export const prefixHeldError = (message: string, hint?: string, cause?: unknown) =>
  new SnapshotError('prefixHeld', message, { hint, cause });

/** A shard's publisher splits the users in another number of shards than the prefix does: exit 9. */
export const shardCountError = (message: string, hint?: string) => new SnapshotError('shardCount', message, { hint });

/** A tree of one shard published into a prefix of whole trees, or the other way round: exit 10. */
export const shardLayoutError = (message: string, hint?: string) => new SnapshotError('shardLayout', message, { hint });

/** The creators list cannot be joined: a shard has published no part of it yet: exit 11, transient. */
export const partMissingError = (message: string, hint?: string) => new SnapshotError('partMissing', message, { hint });

/** A shard was published, but the creators list could not take its part (another composer held it): exit 12, transient. */
export const listBehindError = (message: string, hint?: string) => new SnapshotError('listBehind', message, { hint });

/**
 * A watcher's main thread made no progress for --stall-timeout: it let its leases go and exits 13,
 * for its supervisor to restart it.
 */
export const stalledError = (message: string, hint?: string) => new SnapshotError('stalled', message, { hint });

/** The message of an unknown thrown value, for cause chains. */
export function describeCause(cause: unknown): string {
  if (cause instanceof Error) {
    const code = (cause as NodeJS.ErrnoException).code;
    return code && !cause.message.includes(code) ? `${code}: ${cause.message}` : cause.message;
  }
  return String(cause);
}

/** How a failure is reported, by the CLI's exit and in a watcher's status alike. */
export interface ErrorReport {
  kind: SnapshotErrorKind | 'bug';
  exitCode: number;
  message: string;
  hint: string | null;
  /** For a bug: the stack, for the report. */
  stack?: string;
}

/** A typed failure keeps its kind, exit code and hint, its cause in its message; anything else is a bug (exit 1). */
export function reportOf(error: unknown): ErrorReport {
  if (error instanceof SnapshotError) {
    return { kind: error.kind, exitCode: error.exitCode, message: messageWithCause(error), hint: error.hint ?? null };
  }
  // Not a bug of ours: a native module installed for another Node than the one running (exit 16).
  const mismatch = nativeMismatchOf(error);
  if (mismatch !== undefined) return { kind: 'runtime', exitCode: ExitCode.runtime, message: mismatch.message, hint: mismatch.hint };
  return {
    kind: 'bug',
    exitCode: ExitCode.bug,
    message: `internal error, please report it: ${error instanceof Error ? error.message : String(error)}`,
    hint: null,
    ...(error instanceof Error && error.stack ? { stack: error.stack } : {}),
  };
}

/** The error's message, with its cause in parentheses unless the message already says it. */
export function messageWithCause(error: SnapshotError): string {
  const cause = error.cause === undefined ? '' : describeCause(error.cause);
  return cause === '' || error.message.includes(cause) ? error.message : `${error.message} (${cause})`;
}
