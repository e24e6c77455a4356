/**
 * What a selective pass is given: the users to read, how they were found, and what the last pass
 * knew of the others. Types only, shared by the session (session.ts), a build's clock record
 * (clock-record.ts) and the selective pass (selective.ts).
 */
/**
 * What a selective pass asks of the last pass's users it does not read again: the watcher's copy of
 * the store (store/shadow.ts), or a build's clock record (clock-record.ts).
 */
export interface LastPassCopy {
  /** The name each of these users held (those it has). */
  usernames(ids: Iterable<number>): Map<number, unknown>;
  /** The users whose name was `name` ignoring ASCII letter case. */
  holders(name: string): number[];
}

/**
 * How a pass found the users to read: the store's change clock, the copy compared with the whole
 * store, the store's files unchanged (only ages turning), or not at all (every row read).
 */
export type ChangesFoundBy = 'clock' | 'comparison' | 'stamp' | 'every row';

/** How a pass found what changed, and why it did not follow the store's change clock when it has one. */
export interface ChangeSource {
  by: ChangesFoundBy;
  /** Set when the store has (or had, at the last pass) a change clock that this pass could not follow. */
  clockFallback: string | null;
}

/** The users a selective pass reads; every other profile stands as the last pass published it. */
export interface Selection {
  users: ReadonlySet<number>;
  /** Users the last pass had warnings for (a subset of `users`). */
  warned: ReadonlySet<number>;
  /** No account age of the other users moves before this time (see StoreShadow.changes). */
  stableUntilMs: number;
  source: ChangeSource;
  /** What the last pass knew of the users not read again. */
  copy: LastPassCopy;
}
