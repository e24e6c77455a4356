/**
 * The diff of a build against the last one: the last build's manifest (`previous`, emptied as this
 * build takes each entry from it) and this build's (`next`). It decides, per document, whether the
 * file on disk can stay as it is; whatever must be written is the staging's (staging.ts), and the
 * commit (commit.ts) turns what is left in `previous` into removals. What may be trusted of the last
 * build at all is not decided here but handed in (`Trust`, from incremental/trust.ts).
 */
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { outputError } from '../core/errors.js';
import { PROFILE_DIRS } from '../core/layout.js';
import { damagedProfileFiles } from './intact.js';
import { entryHash, fileEntry, fileEntryStamp, fileStamp, PENDING, profileEntry, type Manifest } from './manifest.js';
import type { ListOrder } from './list-order.js';
import type { EntryTable } from './entry-table.js';
import { ProfileEntries } from './profile-entries.js';

/** What a build may take on trust from the last one; the rules are incremental/trust.ts's. */
export interface Trust {
  /** The render key this build writes in the manifest's header (core/render-key.ts). */
  readonly renderKey: string;
  /** `build --full`: a file the manifest says is unchanged is kept only once it is checked on disk. */
  readonly healing: boolean;
  /** Whether row signatures and list entries recorded under `lastKey` describe what this build renders. */
  signaturesHold(lastKey: string): boolean;
  /** Whether a selective pass may carry the last build's entries over in one move, unread. */
  mayCarryOver(last: { signaturesHold: boolean; anyPending: boolean }): boolean;
}

/** Nothing of the last build is trusted: every row is rendered (a tree with no known render key). */
export const TRUST_NOTHING: Trust = Object.freeze({
  renderKey: '',
  healing: false,
  signaturesHold: () => false,
  mayCarryOver: () => false,
});

/** What a slice's diff hands to the owner's: plain data, each name once (see OutputHandover). */
export interface SliceDiff {
  /** Every profile the slice published or kept, with its manifest entry. */
  names: string[];
  entries: string[];
  /** Profiles of the last build in this slice that it no longer publishes (for commit to remove). */
  stale: string[];
  unchangedFiles: number;
  /** Files of its slice found damaged (see `repaired`). */
  repaired: number;
  /** Whether an entry of its slice differs from the last build's (see `manifestChanged`). */
  manifestChanged: boolean;
}

/** What became of a profile this build publishes (see `TreeDiff.profile`). */
export type ProfileChange = 'unchanged' | 'changed' | 'new';

export class TreeDiff {
  readonly next: Manifest;
  /** Whether the last build's row signatures hold for this one (see Trust). */
  readonly signaturesHold: boolean;
  /**
   * In a selective pass (see `carryOver`), the profiles this pass has published itself; every other
   * profile of `next` was carried over from the last build.
   */
  private claimed: Set<string> | undefined;
  unchangedFiles = 0;
  /**
   * Files of the last build whose data did not change, found missing, truncated or altered and
   * rewritten by a healing build (a plain build does not look: always 0).
   */
  repaired = 0;
  /**
   * Whether the manifest must be written even when no file changes: another render key wrote the
   * last build, or an unchanged document was rendered from a changed row (its entry records a new
   * signature). Left as it was, the next build could keep nothing it rendered.
   */
  manifestChanged: boolean;
  /** The table of the last manifest's lines this diff started from (a watcher's; else empty). */
  readonly lastTable: EntryTable;
  /** Profiles `keepProfile` found damaged (their files already counted in `repaired`). */
  private readonly damaged = new Set<string>();

  /** `previous` is consumed: each entry this build takes leaves it, and what is left is stale. */
  constructor(
    readonly outDir: string,
    readonly previous: Manifest,
    private readonly trust: Trust,
    /** Whether this diff writes the manifest (the owner's) and so must note a new render key. */
    writesManifest: boolean,
  ) {
    this.next = { renderKey: trust.renderKey, profiles: new ProfileEntries(), files: new Map(), list: undefined };
    this.signaturesHold = trust.signaturesHold(previous.renderKey);
    this.lastTable = previous.profiles.base;
    this.manifestChanged = writesManifest && previous.renderKey !== trust.renderKey;
  }

  get healing(): boolean {
    return this.trust.healing;
  }

  /** Last entries of a slice the owner reads itself after all (see OutputTransaction.includeSlice). */
  includeEntries(profiles: Iterable<[string, string]>): void {
    for (const [name, entry] of profiles) this.previous.profiles.set(name, entry);
  }

  /** Takes in what a thread's diff of its slice found (see SliceTransaction.handOver). */
  adopt(handover: SliceDiff): void {
    const { previous, next } = this;
    handover.names.forEach((name, i) => {
      previous.profiles.delete(name);
      next.profiles.set(name, handover.entries[i]!);
    });
    // What it left stale is removed at commit, like this diff's own (already there when this diff
    // read every slice's last entries).
    for (const name of handover.stale) if (!previous.profiles.has(name)) previous.profiles.set(name, PENDING);
    this.unchangedFiles += handover.unchangedFiles;
    this.repaired += handover.repaired;
    this.manifestChanged ||= handover.manifestChanged;
  }

  /** What this diff found, for the owner's `adopt` (a slice's part of a pass). */
  handOver(): SliceDiff {
    // Filled in one walk, each array at its final size: spread from iterators, they grew in steps,
    // their old storage garbage at the thread's peak, with its slice's whole pass still in memory.
    const { profiles } = this.next;
    const names = new Array<string>(profiles.size);
    const entries = new Array<string>(profiles.size);
    let at = 0;
    for (const [name, entry] of profiles) {
      names[at] = name;
      entries[at++] = entry;
    }
    return {
      names,
      entries,
      stale: [...this.previous.profiles.keys()],
      unchangedFiles: this.unchangedFiles,
      manifestChanged: this.manifestChanged,
      repaired: this.repaired,
    };
  }

  /** The last build's entry for a profile when its row signature can be trusted (see RowKeeper). */
  previousProfile(name: string): string | undefined {
    return this.signaturesHold ? this.previous.profiles.get(name) : undefined;
  }

  /** Whether a profile of this name is already part of this build (case-insensitive duplicates). */
  hasProfile(name: string): boolean {
    return this.next.profiles.has(name);
  }

  /**
   * Keeps a profile exactly as the last build published it (its row signature did not change).
   * False, keeping nothing, when a healing build finds its files damaged: it must be rendered again.
   */
  keepProfile(name: string, entry: string): boolean {
    if (this.healing && this.countDamaged(name, entryHash(entry)) > 0) {
      this.damaged.add(name);
      return false;
    }
    this.take(name, entry);
    this.unchangedFiles += PROFILE_DIRS.length;
    return true;
  }

  /** Records a rendered profile's entry, and whether its files stay as they are or must be written. */
  profile(name: string, hash: string, signature: string, listLength: number | undefined): ProfileChange {
    const previousEntry = this.previous.profiles.get(name);
    const previousHash = previousEntry === undefined ? undefined : entryHash(previousEntry);
    const entry = profileEntry(hash, signature, listLength);
    this.take(name, entry);
    if (entry !== previousEntry) this.manifestChanged = true;
    if (previousHash === hash && !this.needsRepair(name, hash)) {
      this.unchangedFiles += PROFILE_DIRS.length;
      return 'unchanged';
    }
    return previousHash === undefined ? 'new' : 'changed';
  }

  private take(name: string, entry: string): void {
    this.previous.profiles.delete(name);
    this.next.profiles.set(name, entry);
    this.claimed?.add(name);
  }

  /** Counts a profile's damaged files into `repaired` (they are about to be rewritten); returns them. */
  private countDamaged(name: string, hash: string): number {
    const damaged = damagedProfileFiles(this.outDir, name, hash);
    this.repaired += damaged;
    return damaged;
  }

  /** In a healing build, whether a profile whose data did not change must be rewritten all the same. */
  private needsRepair(name: string, hash: string): boolean {
    if (!this.healing) return false;
    return this.damaged.delete(name) || this.countDamaged(name, hash) > 0;
  }

  /**
   * Whether the last build's file at `path` has this hash and is kept (unless `rewrite`); its entry
   * moves to `next`. A healing build keeps it only while it is the very file the manifest recorded
   * (see `isDamaged`); otherwise it is rewritten and counted as repaired.
   */
  keepFile(path: string, hash: string, rewrite = false): boolean {
    const previousEntry = this.previous.files.get(path);
    const previousHash = previousEntry === undefined ? undefined : entryHash(previousEntry);
    const damaged = this.healing && previousHash === hash && this.isDamaged(path, previousEntry!);
    if (damaged) this.repaired += 1;
    this.previous.files.delete(path);
    const kept = previousHash === hash && !rewrite && !damaged;
    // An unchanged file keeps its entry, stamp included; a rewritten one gets its stamp at commit.
    this.next.files.set(path, kept ? previousEntry! : hash);
    if (kept) this.unchangedFiles += 1;
    else if (previousHash === undefined) refuseForeign(this.outDir, path);
    return kept;
  }

  /**
   * Whether a recorded file is not the one the manifest recorded: another inode, size or mtime. An
   * entry of an older manifest has no stamp; its file is only required to be there (a build that
   * keeps it records a stamp where it can, see `stampUnchangedFile`).
   */
  private isDamaged(path: string, entry: string): boolean {
    if (fileEntryStamp(entry) !== undefined) return this.intactPreviousFile(path) === undefined;
    return !statSync(join(this.outDir, path), { throwIfNoEntry: false })?.isFile();
  }

  /**
   * A file the last build wrote, when it is still exactly as written (same inode, size and mtime as
   * the manifest records): its path and that stamp. Undefined otherwise.
   */
  intactPreviousFile(path: string): { file: string; stamp: string } | undefined {
    const entry = this.previous.files.get(path);
    if (entry === undefined || entry === PENDING) return undefined;
    const stamp = fileEntryStamp(entry);
    const file = join(this.outDir, path);
    return stamp !== undefined && stamp === fileStamp(file) ? { file, stamp } : undefined;
  }

  /**
   * Records the stamp of an unchanged published file whose entry has none (a format 1 manifest), if
   * `isIntact` finds the file is the one the manifest describes (only read when a stamp is missing).
   */
  stampUnchangedFile(path: string, isIntact: (file: string) => boolean): void {
    const entry = this.next.files.get(path);
    if (entry === undefined || entry === PENDING || fileEntryStamp(entry) !== undefined) return;
    const file = join(this.outDir, path);
    const stamp = isIntact(file) ? fileStamp(file) : undefined;
    if (stamp === undefined) return;
    this.next.files.set(path, fileEntry(entry, stamp));
    this.manifestChanged = true;
  }

  /**
   * The last build's creators list, to copy unchanged members from: its file, when it is exactly the
   * one that build wrote, and its members in list order with their lengths, when row signatures hold.
   */
  previousList(path: string): { file: string; members: ListOrder } | undefined {
    const members = this.previous.list;
    const file = this.intactPreviousFile(path);
    return !this.signaturesHold || members === undefined || file === undefined ? undefined : { file: file.file, members };
  }

  /** This build's creators list members in list order, with their lengths (the manifest lists them so). */
  setList(members: ListOrder): void {
    this.next.list = members;
    this.previous.list = undefined; // read only while the new list is made
  }

  /**
   * Once committed, lets go of both manifests' profiles and lists (what a watcher keeps for its
   * next build is its own copy, see commitTree): at a million profiles they are most of the heap.
   */
  letGo(): void {
    for (const manifest of [this.previous, this.next]) {
      manifest.profiles = new ProfileEntries();
      manifest.list = undefined;
    }
  }

  /**
   * For a pass that reads every row: the last list's recorded entries serve only `carryOver`, and
   * would keep every member's last entry alive beside the one this pass makes for it.
   */
  readsEveryRow(): void {
    if (this.previous.list !== undefined) this.previous.list.entries = undefined;
  }

  /**
   * Starts a selective pass: every profile of the last build is kept as it is (in one move, not one
   * by one) except the `released` ones, which this pass publishes again or removes. Says what was
   * carried over, or undefined when the trust rules say a pass must read every row.
   */
  carryOver(released: ReadonlySet<string>): CarriedOver | undefined {
    if (this.next.profiles.size > 0 || this.claimed !== undefined) return undefined;
    const carried = this.previous.profiles;
    const anyPending = carried.anyPending(PENDING);
    if (!this.trust.mayCarryOver({ signaturesHold: this.signaturesHold, anyPending })) return undefined;
    const returned = new ProfileEntries();
    for (const name of released) {
      const entry = carried.get(name);
      if (entry === undefined) continue;
      returned.set(name, entry);
      carried.delete(name);
    }
    this.previous.profiles = returned;
    this.next.profiles = carried;
    this.claimed = new Set();
    this.unchangedFiles += carried.size * PROFILE_DIRS.length;
    return { count: carried.size, released: [...returned.keys()] };
  }

  /** The entry of a profile carried over by `carryOver` and not published again by this pass. */
  carriedEntry(name: string): string | undefined {
    const claimed = this.claimed;
    return claimed === undefined || claimed.has(name) ? undefined : this.next.profiles.get(name);
  }
}

/** What a selective pass carried over (see `TreeDiff.carryOver`). */
export interface CarriedOver {
  /** Profiles carried over as the last build published them. */
  count: number;
  /** The last build's profiles handed back (their users are read again): every other one was carried. */
  released: readonly string[];
}

/** A path the manifest does not know, if something is there, is someone else's: never replaced. */
export function refuseForeign(outDir: string, relativePath: string): void {
  const path = join(outDir, relativePath);
  if (existsSync(path)) {
    throw outputError(
      `refusing to overwrite ${path}: profile-snapshot did not write it`,
      'move that file away (or choose another --out); the tool only replaces files it wrote itself',
    );
  }
}
