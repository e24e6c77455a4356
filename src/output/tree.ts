/**
 * The only code that touches the output tree. A build is a transaction over it:
 *
 *   1. during the store pass, each document whose data hash differs from the manifest's is written
 *      to a staging folder inside the out dir (same filesystem); unchanged documents are not touched;
 *   2. commit: the manifest is first rewritten to claim every file about to change (so a crash leaves
 *      files the next run knows are its own), then each staged file is renamed over its target (atomic
 *      for readers), files no longer published are removed, and the final manifest is written;
 *   3. any failure before commit (bad data under --strict, a foreign file in the way, disk full)
 *      discards the staging folder: the previous output is untouched.
 *
 * Files the tool did not write are never replaced or removed: a target path that exists but is not
 * in the manifest stops the build (exit 5).
 */
import { copyFileSync, existsSync, linkSync, mkdirSync, renameSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { outputError } from '../core/errors.js';
import { BufferedFileWriter } from './file-writer.js';
import { lastMemberLines, type LastMemberLines } from './unchanged-lines.js';
import { asOutputError, guard, prepareDir } from './folders.js';
import { damagedProfileFiles } from './intact.js';
import type { ManifestCache } from './manifest-cache.js';
import { CANONICAL_USERNAME, MANIFEST_FILE, PROFILE_DIRS, STAGING_DIR, STATE_DIR } from '../core/layout.js';
import type { Slice } from '../core/slice.js';
import {
  entryHash,
  fileEntry,
  fileEntryStamp,
  fileStamp,
  PENDING,
  profileEntry,
  readManifest,
  writeClaims,
  writeManifest,
  type ListOrder,
  type Manifest,
} from './manifest.js';

/** Profile names and file paths a commit changes. */
interface Claims {
  profiles: readonly string[];
  files: readonly string[];
}

export interface WriteCounts {
  written: number;
  unchanged: number;
  removed: number;
}

interface StagedFile {
  path: string;
  hash: string;
  staged: string;
}

/**
 * What another thread staged for its share of a pass (see `join`), handed to the owning transaction
 * (`adopt`): plain data, so it crosses threads, and each name in it once (a copy crosses for each
 * time a string is named).
 */
export interface OutputShare {
  /** Every profile the share published or kept, with its manifest entry. */
  names: string[];
  entries: string[];
  /** Per profile: its staging slot, STAGED_FRESH, or NOT_STAGED (kept, or its data unchanged). */
  slots: Float64Array;
  /** Profiles of the last build in this share that it no longer publishes (for commit to remove). */
  stale: string[];
  unchangedFiles: number;
  /** Whether it staged whole fresh folders (a first build). */
  fresh: boolean;
  /** Files of its share found damaged (see `repaired`). */
  repaired: number;
  /** Whether an entry of its share differs from the last build's (see `manifestChanged`). */
  manifestChanged: boolean;
}

const NOT_STAGED = -1;
const STAGED_FRESH = -2;

/**
 * Where each of `names` sits in a share's `profiles`, of which it is a subsequence in the same order
 * (profiles are staged and listed as they are added, and each is added once): one walk, no map.
 */
export function positionsAmong(profiles: readonly string[], names: readonly string[]): Int32Array {
  const positions = new Int32Array(names.length);
  let found = 0;
  for (let i = 0; i < profiles.length && found < names.length; i++) {
    if (profiles[i] === names[found]) positions[found++] = i;
  }
  if (found !== names.length) throw new Error('bug: names out of step with the published profiles');
  return positions;
}

/** Each share's staging slots start here, so threads never pick the same staged file name. */
const SLOTS_PER_SHARE = 2 ** 32;

/** Who a transaction works for: the owner (of all users, or of its own slice of a shared pass) or a thread's share. */
export interface TransactionRole {
  /** A thread's share of a shared pass (`join`). */
  share?: Slice;
  /** The owner's own slice of a shared pass: the only one whose last entries it reads. */
  ownSlice?: Slice;
  /** `build --full`: check the files it would otherwise trust, and rewrite damaged ones. */
  healing?: boolean;
  /** The manifest its process wrote last (a watcher's session keeps it between builds). */
  cache?: ManifestCache;
}

export class OutputTransaction {
  readonly outDir: string;
  private readonly previous: Manifest;
  private readonly next: Manifest;
  /**
   * In a selective pass (see `carryOver`), the profiles this pass has published itself; every other
   * profile of `next` was carried over from the last build.
   */
  private claimed: Set<string> | undefined;
  /** Whether the last build rendered with this tool and base URL, so its row signatures still hold. */
  private readonly signaturesHold: boolean;
  private readonly stagingDir: string;
  /** Staged profiles as parallel arrays (name, staging slot unless fresh): a million stay compact. */
  private readonly stagedNames: string[] = [];
  private readonly stagedSlots: number[] = [];
  private readonly stagedFiles: StagedFile[] = [];
  /** Whether the users folders existed before this build; if not, no foreign file can be in the way. */
  private readonly profileDirsExisted: boolean;
  /**
   * With no users folder yet (a first build), profiles are staged as whole folders, `fresh/<i>/<name>`
   * for alias folder i, and each folder is renamed into place at commit: one rename instead of one
   * per file, which brings a cold build close to the cost of merely writing the files.
   */
  private freshDirs: string[] | undefined;
  private stagedCount = 0;
  private unchangedFiles = 0;
  /**
   * Whether the manifest must be written even when no file changes: another tool or base URL
   * rendered the last build, or an unchanged document was rendered from a changed row (its entry
   * records a new signature). Left as it was, the next build could keep nothing it rendered.
   */
  private manifestChanged = false;
  /** The last manifest's member lines, when this process wrote it: unchanged ones are copied from there. */
  private lastMemberLines: LastMemberLines | undefined;
  private finished = false;
  private readonly committed: ((stampOf: (path: string) => string | undefined) => void)[] = [];
  /** A share's view (`join`): it stages into the owner's folder and never commits or clears it. */
  private readonly share: Slice | undefined;
  /** In a shared pass, the owner's own share: the only one whose last entries it read. */
  private readonly ownSlice: Slice | undefined;
  /**
   * A healing build (`build --full`): a file the manifest says is unchanged is trusted only once it
   * is checked on disk (see `needsRepair`, `intactPreviousFile`); one that is not is rewritten.
   */
  private readonly healing: boolean;
  private readonly cache: ManifestCache | undefined;
  /** Profiles `keepProfile` found damaged (their files already counted in `repaired`). */
  private readonly damaged = new Set<string>();
  /**
   * Files of the last build whose data did not change, found missing, truncated or altered and
   * rewritten by a healing build (a plain build does not look: always 0).
   */
  repaired = 0;

  private constructor(outDir: string, renderedBy: string, role: TransactionRole) {
    const { share, ownSlice } = role;
    this.cache = role.cache;
    this.outDir = outDir;
    this.share = share;
    this.healing = role.healing ?? false;
    this.stagingDir = join(outDir, STAGING_DIR);
    if (share === undefined) {
      prepareDir(outDir, outDir);
      prepareDir(outDir, join(outDir, STATE_DIR));
      const cached = role.cache?.take(outDir);
      this.ownSlice = cached === undefined ? ownSlice : undefined;
      this.previous = cached ?? readManifest(outDir, undefined, ownSlice && { slice: ownSlice, wholeList: true });
      // A staging folder left by a crashed run holds nothing anyone reads: start clean.
      guard(`cannot prepare the staging folder ${this.stagingDir}`, () => {
        rmSync(this.stagingDir, { recursive: true, force: true });
        mkdirSync(this.stagingDir);
      });
    } else {
      this.previous = readManifest(outDir, undefined, { slice: share, wholeList: false });
      this.stagedCount = share.index * SLOTS_PER_SHARE;
    }
    this.next = { renderedBy, profiles: new Map(), files: new Map(), list: undefined };
    this.signaturesHold = renderedBy !== '' && this.previous.renderedBy === renderedBy;
    this.manifestChanged = share === undefined && this.previous.renderedBy !== renderedBy;
    this.profileDirsExisted = PROFILE_DIRS.some((dir) => existsSync(join(outDir, dir)));
  }

  /**
   * Opens the out dir (absolute; created if needed) and reads what the last build wrote. `renderedBy` names
   * the tool and base URL rendering this build: row signatures recorded under another are not used.
   * With `ownSlice`, the owner of a shared pass reads only that share's profiles (`join` reads the
   * others' in their threads); see `includeSlice` for a share it reads after all. See TransactionRole
   * for the rest.
   */
  static begin(outDir: string, renderedBy = '', role: Omit<TransactionRole, 'share'> = {}): OutputTransaction {
    return new OutputTransaction(outDir, renderedBy, role);
  }

  /**
   * Another thread's part in a transaction `begin` opened (and holds open) in this process: it
   * stages the profiles of one share of the users, with that share of the last build's entries,
   * and hands them over with `handOver`. It commits nothing and never clears the staging folder.
   */
  static join(outDir: string, renderedBy: string, share: Slice, healing = false): OutputTransaction {
    return new OutputTransaction(outDir, renderedBy, { share, healing });
  }

  /**
   * The owner of a shared pass reads a share itself after all (its thread did not): that share's
   * entries of the last build, which the owner did not read (see `begin`), are read now.
   */
  includeSlice(slice: Slice): void {
    if (this.ownSlice === undefined) return;
    const { profiles } = readManifest(this.outDir, undefined, { slice, wholeList: false });
    for (const [name, entry] of profiles) this.previous.profiles.set(name, entry);
  }

  /** Ends a share's part (see `join`): what it staged, for the owner to `adopt`. */
  handOver(): OutputShare {
    if (this.share === undefined) throw new Error('bug: only a share hands over');
    this.assertOpen();
    this.finished = true;
    const names = [...this.next.profiles.keys()];
    return {
      names,
      entries: [...this.next.profiles.values()],
      slots: this.slotsOf(names),
      stale: [...this.previous.profiles.keys()],
      unchangedFiles: this.unchangedFiles,
      fresh: this.freshDirs !== undefined,
      manifestChanged: this.manifestChanged,
      repaired: this.repaired,
    };
  }

  /** Each profile's staging slot, in `names` order. */
  private slotsOf(names: readonly string[]): Float64Array {
    const slots = new Float64Array(names.length).fill(NOT_STAGED);
    positionsAmong(names, this.stagedNames).forEach((at, staged) => {
      slots[at] = this.freshDirs ? STAGED_FRESH : this.stagedSlots[staged]!;
    });
    return slots;
  }

  /** Takes over what another thread staged for its share of this pass, to commit it with the rest. */
  adopt(share: OutputShare): void {
    this.assertOpen();
    const { previous, next, stagedNames, stagedSlots } = this;
    for (let i = 0; i < share.names.length; i++) {
      const name = share.names[i]!;
      previous.profiles.delete(name);
      next.profiles.set(name, share.entries[i]!);
      const slot = share.slots[i]!;
      if (slot === NOT_STAGED) continue;
      stagedNames.push(name);
      if (slot !== STAGED_FRESH) stagedSlots.push(slot);
    }
    // What it left stale is removed at commit, like this thread's own (already there when this
    // thread read every share's last entries).
    for (const name of share.stale) if (!previous.profiles.has(name)) previous.profiles.set(name, PENDING);
    this.unchangedFiles += share.unchangedFiles;
    this.repaired += share.repaired;
    this.manifestChanged ||= share.manifestChanged;
    if (share.fresh) this.freshDirs ??= this.freshDirPaths();
  }

  /**
   * The last build's manifest entry for a profile (see manifest.ts: hasSignature, listLength) when
   * its row signature can be trusted (same tool, same base URL), for `keepProfile`.
   */
  previousProfile(name: string): string | undefined {
    return this.signaturesHold ? this.previous.profiles.get(name) : undefined;
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
    this.previous.profiles.delete(name);
    this.next.profiles.set(name, entry);
    this.claimed?.add(name);
    this.unchangedFiles += PROFILE_DIRS.length;
    return true;
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
   * Starts a selective pass, one that reads only the users whose rows changed: every profile of the
   * last build is kept as it is (in one move, not one by one) except the `released` ones, which this
   * pass publishes again or removes. Returns how many were carried over, or undefined when the last
   * build's entries cannot be trusted that way (another tool or base URL rendered them, or some are
   * half-way through a commit), and a pass must read every row.
   */
  carryOver(released: ReadonlySet<string>): number | undefined {
    // A healing build checks every profile it keeps, which carrying them over in one move cannot.
    if (this.healing || !this.signaturesHold || this.next.profiles.size > 0 || this.claimed !== undefined) return undefined;
    const carried = this.previous.profiles;
    for (const entry of carried.values()) if (entry === PENDING) return undefined;
    const returned = new Map<string, string>();
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
    return carried.size;
  }

  /**
   * For a pass that reads every row: the last list's recorded entries serve only `carryOver`, and
   * would keep every member's last entry alive beside the one this pass makes for it.
   */
  readsEveryRow(): void {
    if (this.previous.list !== undefined) this.previous.list.entries = undefined;
  }

  /** The entry of a profile carried over by `carryOver` and not published again by this pass. */
  carriedEntry(name: string): string | undefined {
    const claimed = this.claimed;
    return claimed === undefined || claimed.has(name) ? undefined : this.next.profiles.get(name);
  }

  /**
   * Right after `carryOver`, before this pass publishes anything, the names it handed back (their
   * users are read again): every other member of the last list is carried over. Undefined otherwise.
   */
  releasedProfiles(): Iterable<string> | undefined {
    return this.claimed?.size === 0 ? this.previous.profiles.keys() : undefined;
  }

  /**
   * One profile, written under every alias folder. `render` (the full document, meta included) is
   * only called when the data changed, so an unchanged profile keeps its bytes and is not rewritten.
   * `signature` is the row signature it was rendered from ('' when it must always be re-rendered);
   * `listLength` the byte length of its data in the creators list, for a member.
   */
  profile(name: string, hash: string, signature: string, listLength: number | undefined, render: () => string): void {
    // Names are path segments: anything but a canonical (lower-case publishable) name is a bug here.
    if (!CANONICAL_USERNAME.test(name)) throw new Error(`bug: unsafe profile file name ${JSON.stringify(name)}`);
    const previousEntry = this.previous.profiles.get(name);
    const previousHash = previousEntry === undefined ? undefined : entryHash(previousEntry);
    this.previous.profiles.delete(name);
    const entry = profileEntry(hash, signature, listLength);
    this.next.profiles.set(name, entry);
    this.claimed?.add(name);
    if (entry !== previousEntry) this.manifestChanged = true;
    if (previousHash === hash && !this.needsRepair(name, hash)) {
      this.unchangedFiles += PROFILE_DIRS.length;
      return;
    }
    if (previousHash === undefined && this.profileDirsExisted) {
      for (const dir of PROFILE_DIRS) this.refuseForeign(join(dir, name));
    }
    if (!this.profileDirsExisted) {
      this.stageFresh(name, render());
    } else {
      this.stagedSlots.push(this.stagedCount);
      this.stage(render());
    }
    this.stagedNames.push(name);
  }

  /** The folders a first build stages each alias's profiles in, one per alias folder. */
  private freshDirPaths(): string[] {
    return PROFILE_DIRS.map((_, i) => join(this.stagingDir, 'fresh', String(i)));
  }

  private stageFresh(name: string, bytes: string): void {
    const dirs = (this.freshDirs ??= this.freshDirPaths().map((dir) => {
      guard(`cannot write into ${this.outDir}`, () => mkdirSync(dir, { recursive: true }));
      return dir;
    }));
    const [first, ...others] = dirs;
    // Plain concatenation on this per-profile path (path.join showed in a cold build's profile):
    // a canonical name is a single safe segment.
    const path = `${first!}/${name}`;
    guard(`cannot write into ${this.outDir}`, () => {
      writeFileSync(path, bytes);
      for (const dir of others) {
        try {
          linkSync(path, `${dir}/${name}`);
        } catch {
          copyFileSync(path, `${dir}/${name}`); // filesystems without hard links
        }
      }
    });
  }

  /** Any other document (creators list, error documents), at a path relative to the out dir. */
  file(path: string, hash: string, render: () => string): void {
    if (this.takePreviousFile(path, hash)) return;
    this.stagedFiles.push({ path, hash, staged: this.stage(render()) });
  }

  /**
   * A document too large to hold as one string (the creators list at a million profiles): `write`
   * streams it to the staging folder, and is only called when `hash` differs from the last build's,
   * or `always` (a file derived from another that this build rewrites). Returns whether it was.
   */
  streamedFile(path: string, hash: string, write: (sink: BufferedFileWriter) => void, always = false): boolean {
    if (this.takePreviousFile(path, hash, always)) return false;
    const sink = this.scratchFile();
    try {
      write(sink);
    } finally {
      sink.close();
    }
    this.stagedFiles.push({ path, hash, staged: sink.path });
    return true;
  }

  /** A scratch file in the staging folder; it goes away with the staging folder. */
  scratchFile(): BufferedFileWriter {
    return new BufferedFileWriter(this.stagingPath(), (cause) => asOutputError(cause, `cannot write into ${this.outDir}`));
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
   * Undefined otherwise.
   */
  previousList(path: string): { file: string; members: ListOrder } | undefined {
    const members = this.previous.list;
    const file = this.intactPreviousFile(path);
    return !this.signaturesHold || members === undefined || file === undefined ? undefined : { file: file.file, members };
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

  /** The file `path` will be once committed: the staged one when this build rewrites it, else the published one. */
  fileToPublish(path: string): string {
    return this.stagedFiles.find((s) => s.path === path)?.staged ?? join(this.outDir, path);
  }

  /**
   * Runs `callback` once a commit has put every file in place, with each file's final stamp: for
   * bookkeeping that describes published files (a shortcut for the next build, which must not fail
   * this one: its errors are ignored).
   */
  onCommitted(callback: (stampOf: (path: string) => string | undefined) => void): void {
    this.committed.push(callback);
  }

  /** This build's creators list members in list order, with their lengths (the manifest lists them so). */
  setList(members: ListOrder): void {
    this.next.list = members;
    const { previous } = this;
    this.lastMemberLines = lastMemberLines(join(this.outDir, MANIFEST_FILE), previous.membersAt, previous.list);
    previous.list = undefined; // read only while the new list is made: a million members' worth
  }

  /** Whether a profile of this name is already part of this build (case-insensitive duplicates). */
  hasProfile(name: string): boolean {
    return this.next.profiles.has(name);
  }

  /** Publishes everything staged and removes what is no longer published. */
  commit(): WriteCounts {
    if (this.share !== undefined) throw new Error('bug: a share hands over, its owner commits');
    this.assertOpen();
    this.finished = true;
    const { outDir, next } = this;
    const stale: Claims = { profiles: [...this.previous.profiles.keys()], files: [...this.previous.files.keys()] };
    const counts: WriteCounts = { written: 0, unchanged: this.unchangedFiles, removed: 0 };
    try {
      // Each staged profile's final entry (hash, signature, list length), put back once its files are in.
      const stagedEntries = this.stagedNames.map((name) => next.profiles.get(name)!);
      const changing = this.stagedNames.length + this.stagedFiles.length + stale.profiles.length + stale.files.length;
      if (changing > 0) {
        this.claim(stale);
        counts.written = this.moveStagedIntoPlace(stagedEntries);
        counts.removed = this.removeStale(stale);
        this.completeListEntries();
        writeManifest(outDir, next, this.lastMemberLines);
      } else if (this.manifestChanged) {
        this.completeListEntries();
        writeManifest(outDir, next, this.lastMemberLines);
      }
      rmSync(this.stagingDir, { recursive: true, force: true });
    } catch (cause) {
      // abort() is a no-op once commit has begun, so clean up here: what was not renamed yet is of no
      // use (the manifest, if rewritten, claims it as pending). Best effort: the next build wipes it too.
      try {
        rmSync(this.stagingDir, { recursive: true, force: true });
      } catch {
        // left for the next build
      }
      throw asOutputError(cause, `cannot publish into ${outDir}`);
    }
    this.cache?.keep(outDir, next);
    this.runCommitted();
    return counts;
  }

  /**
   * Claims every file about to change before touching it: after a crash, the next run still knows
   * they are ours and rewrites or removes them. The claim is the manifest on disk (the last build's,
   * which `previous` was read from) with these files marked pending; with no manifest yet, the whole
   * new one, in plain order (pending members cannot be listed as the list's).
   */
  private claim(stale: Claims): void {
    const { outDir, next, stagedNames, stagedFiles } = this;
    for (const name of stagedNames) next.profiles.set(name, PENDING);
    for (const s of stagedFiles) next.files.set(s.path, PENDING);
    for (const name of stale.profiles) next.profiles.set(name, PENDING);
    for (const path of stale.files) next.files.set(path, PENDING);
    this.prepareFolders();
    const claims = { profiles: [...stagedNames, ...stale.profiles], files: [...stagedFiles.map((s) => s.path), ...stale.files] };
    if (!writeClaims(outDir, claims)) writeManifest(outDir, { ...next, list: undefined });
  }

  /**
   * Fills in the list's entries it does not know (members rendered in this build) from the
   * committed entries, so the manifest and the next cycle (the session's ManifestCache) take each from there.
   */
  private completeListEntries(): void {
    const list = this.next.list;
    if (list === undefined) return;
    const entries = (list.entries ??= new Array<string | undefined>(list.names.length));
    for (let i = 0; i < list.names.length; i++) entries[i] ??= this.next.profiles.get(list.names[i]!);
  }

  /** Folders first: a path that cannot be used (a symlink, a file) fails before anything moves. */
  private prepareFolders(): void {
    const { outDir } = this;
    if (this.freshDirs) {
      for (const dir of PROFILE_DIRS) {
        prepareDir(outDir, dirname(join(outDir, dir)));
        if (existsSync(join(outDir, dir)))
          throw outputError(`${join(outDir, dir)} appeared during the build`, 'rebuild; only one writer may use an out dir at a time');
      }
    } else if (this.stagedNames.length > 0) {
      for (const dir of PROFILE_DIRS) prepareDir(outDir, join(outDir, dir));
    }
    for (const s of this.stagedFiles) prepareDir(outDir, dirname(join(outDir, s.path)));
  }

  /** Renames every staged document into place and records its entry; returns the files written. */
  private moveStagedIntoPlace(stagedEntries: readonly string[]): number {
    const { outDir, next, stagedNames, stagedSlots } = this;
    let written = 0;
    if (this.freshDirs) {
      this.freshDirs.forEach((staged, i) => renameSync(staged, join(outDir, PROFILE_DIRS[i]!)));
    }
    for (let i = 0; i < stagedNames.length; i++) {
      if (!this.freshDirs) this.publishProfile(stagedNames[i]!, `${this.stagingDir}/${stagedSlots[i]!}`);
      next.profiles.set(stagedNames[i]!, stagedEntries[i]!);
      written += PROFILE_DIRS.length;
    }
    for (const s of this.stagedFiles) {
      renameSync(s.staged, join(outDir, s.path));
      next.files.set(s.path, fileEntry(s.hash, fileStamp(join(outDir, s.path))));
      written += 1;
    }
    return written;
  }

  /** Removes what the last build published and this one does not; returns the files removed. */
  private removeStale(stale: Claims): number {
    const { outDir, next } = this;
    let removed = 0;
    for (const name of stale.profiles) {
      for (const dir of PROFILE_DIRS) removed += removeIfPresent(join(outDir, dir, name));
      next.profiles.delete(name);
    }
    for (const path of stale.files) {
      removed += removeIfPresent(join(outDir, path));
      next.files.delete(path);
    }
    return removed;
  }

  /** Discards everything staged; the previous output stays exactly as it was. */
  abort(): void {
    if (this.finished) return;
    this.finished = true;
    if (this.share !== undefined) return; // the owner clears the staging folder
    // Best effort: abort runs while another error propagates (the disk may have just turned
    // read-only), which must not be masked; the next build clears the staging folder anyway.
    try {
      rmSync(this.stagingDir, { recursive: true, force: true });
    } catch {
      // left for the next build
    }
    this.cache?.forget();
  }

  private runCommitted(): void {
    const stampOf = (path: string) => {
      const entry = this.next.files.get(path);
      return entry === undefined || entry === PENDING ? undefined : fileEntryStamp(entry);
    };
    for (const callback of this.committed) {
      try {
        callback(stampOf);
      } catch {
        // a shortcut lost: the next build does the work again
      }
    }
  }

  private stagingPath(): string {
    this.assertOpen();
    return `${this.stagingDir}/${this.stagedCount++}`;
  }

  private stage(bytes: string): string {
    const staged = this.stagingPath();
    guard(`cannot write into ${this.outDir}`, () => writeFileSync(staged, bytes));
    return staged;
  }

  /** The first alias gets the staged file; the others are hard links to it (same bytes, no copy). */
  private publishProfile(name: string, staged: string): void {
    const [first, ...others] = PROFILE_DIRS;
    for (const dir of others) {
      const link = `${staged}.${dir.length}`;
      try {
        linkSync(staged, link);
      } catch {
        copyFileSync(staged, link); // filesystems without hard links
      }
      renameSync(link, `${this.outDir}/${dir}/${name}`);
    }
    renameSync(staged, `${this.outDir}/${first}/${name}`);
  }

  /**
   * Whether the last build's file at `path` has this hash and is kept (unless `rewrite`); its entry
   * moves to `next`. A healing build keeps it only while it is the very file the manifest recorded
   * (see `isDamaged`); otherwise it is rewritten and counted as repaired.
   */
  private takePreviousFile(path: string, hash: string, rewrite = false): boolean {
    const previousEntry = this.previous.files.get(path);
    const previousHash = previousEntry === undefined ? undefined : entryHash(previousEntry);
    const damaged = this.healing && previousHash === hash && this.isDamaged(path, previousEntry!);
    if (damaged) this.repaired += 1;
    this.previous.files.delete(path);
    const kept = previousHash === hash && !rewrite && !damaged;
    // An unchanged file keeps its entry, stamp included; a rewritten one gets its stamp at commit.
    this.next.files.set(path, kept ? previousEntry! : hash);
    if (kept) this.unchangedFiles += 1;
    else if (previousHash === undefined) this.refuseForeign(path);
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

  private refuseForeign(relativePath: string): void {
    const path = join(this.outDir, relativePath);
    if (existsSync(path)) {
      throw outputError(
        `refusing to overwrite ${path}: profile-snapshot did not write it`,
        'move that file away (or choose another --out); the tool only replaces files it wrote itself',
      );
    }
  }

  private assertOpen(): void {
    if (this.finished) throw new Error('bug: output transaction already finished');
  }
}

function removeIfPresent(path: string): number {
  try {
    unlinkSync(path);
    return 1;
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw cause;
  }
}
