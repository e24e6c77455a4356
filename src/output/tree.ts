/**
 * The only code that touches the output tree. A build is a transaction over it, in three parts:
 *
 *   - the diff against the last build's manifest (diff.ts) says which documents changed;
 *   - the staging (staging.ts) writes only those, into a folder inside the out dir;
 *   - the commit (commit.ts) claims, renames into place, removes what is no longer published, and
 *     writes the manifest.
 *
 * Any failure before commit (bad data under --strict, a foreign file in the way, disk full) discards
 * the staging folder: the previous output is untouched. Files the tool did not write are never
 * replaced or removed: a target path that exists but is not in the manifest stops the build (exit 5).
 *
 * Two kinds of transaction share that work: the owner's (`OutputTransaction`: it commits), and a
 * thread's part in the owner's pass (`SliceTransaction`: it stages one slice of the users into the
 * owner's folder and hands it over). Each has only its own methods.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { CANONICAL_USERNAME, PROFILE_DIRS, STATE_DIR } from '../core/layout.js';
import { collectNow } from '../core/memory.js';
import type { Slice } from '../core/slice.js';
import { commitTree, type WriteCounts } from './commit.js';
import { refuseForeign, TreeDiff, TRUST_NOTHING, type CarriedOver, type SliceDiff, type Trust } from './diff.js';
import type { BufferedFileWriter } from './file-writer.js';
import { prepareDir } from './folders.js';
import type { ManifestCache } from './manifest-cache.js';
import { PENDING, fileEntryStamp, readManifest } from './manifest.js';
import type { ListOrder } from './list-order.js';
import { Staging } from './staging.js';

export type { WriteCounts } from './commit.js';
export type { Trust } from './diff.js';

/**
 * What a thread staged for its slice of a pass (`SliceTransaction.handOver`), for the owner to
 * `adopt`: plain data, so it crosses threads, and each name in it once (a copy crosses for each time
 * a string is named).
 */
export interface OutputHandover extends SliceDiff {
  /** Per profile, in `names` order: its staging slot, STAGED_FRESH, or NOT_STAGED (kept, or its data unchanged). */
  slots: Float64Array;
}

/** What both kinds of transaction do: publish or keep profiles, and stage scratch files. */
abstract class TreeWriter {
  protected finished = false;

  protected constructor(
    readonly outDir: string,
    protected readonly diff: TreeDiff,
    protected readonly staging: Staging,
    /** Whether the users folders existed before this build; if not, no foreign file can be in the way. */
    private readonly profileDirsExisted: boolean,
  ) {}

  /** Files of the last build rewritten because a healing build found them damaged. */
  get repaired(): number {
    return this.diff.repaired;
  }

  /**
   * The last build's manifest entry for a profile (see manifest.ts: hasSignature, listLength) when
   * its row signature can be trusted, for `keepProfile`.
   */
  previousProfile(name: string): string | undefined {
    return this.diff.previousProfile(name);
  }

  /** Whether a profile of this name is already part of this build (case-insensitive duplicates). */
  hasProfile(name: string): boolean {
    return this.diff.hasProfile(name);
  }

  /** Keeps a profile as the last build published it; false when a healing build found it damaged. */
  keepProfile(name: string, entry: string): boolean {
    return this.diff.keepProfile(name, entry);
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
    const change = this.diff.profile(name, hash, signature, listLength);
    if (change === 'unchanged') return;
    if (change === 'new' && this.profileDirsExisted) {
      for (const dir of PROFILE_DIRS) refuseForeign(this.outDir, join(dir, name));
    }
    this.assertOpen();
    this.staging.profile(name, render(), !this.profileDirsExisted);
  }

  /** For a pass that reads every row (see TreeDiff.readsEveryRow). */
  readsEveryRow(): void {
    this.diff.readsEveryRow();
  }

  /** The last build's creators list, to copy unchanged members from (see TreeDiff.previousList). */
  previousList(path: string): { file: string; members: ListOrder } | undefined {
    return this.diff.previousList(path);
  }

  /** A scratch file in the staging folder; it goes away with the staging folder. */
  scratchFile(): BufferedFileWriter {
    this.assertOpen();
    return this.staging.scratchFile();
  }

  protected assertOpen(): void {
    if (this.finished) throw new Error('bug: output transaction already finished');
  }
}

/** Who the owner works for: all users, or its own slice of a pass shared with threads. */
export interface OwnerRole {
  /** What may be trusted of the last build (incremental/trust.ts); by default nothing. */
  trust?: Trust;
  /** The owner's own slice of a shared pass: the only one whose last entries it reads. */
  ownSlice?: Slice;
  /** The manifest its process wrote last (a watcher's session keeps it between builds). */
  cache?: ManifestCache;
}

/** The owner's transaction: it takes in the slices' handovers, stages the other documents, and commits. */
export class OutputTransaction extends TreeWriter {
  private readonly committed: ((stampOf: (path: string) => string | undefined) => void)[] = [];

  private constructor(
    outDir: string,
    diff: TreeDiff,
    staging: Staging,
    profileDirsExisted: boolean,
    /** Set when it read only its own slice of the last build (a cached manifest is whole). */
    private readonly ownSlice: Slice | undefined,
    private readonly cache: ManifestCache | undefined,
  ) {
    super(outDir, diff, staging, profileDirsExisted);
  }

  /**
   * Opens the out dir (absolute; created if needed) and reads what the last build wrote. With
   * `ownSlice`, the owner of a shared pass reads only that slice's profiles (the threads read the
   * others'); see `includeSlice` for a slice it reads after all.
   */
  static begin(outDir: string, role: OwnerRole = {}): OutputTransaction {
    prepareDir(outDir, outDir);
    prepareDir(outDir, join(outDir, STATE_DIR));
    const cached = role.cache?.take(outDir);
    const ownSlice = cached === undefined ? role.ownSlice : undefined;
    const previous = cached ?? readManifest(outDir, undefined, ownSlice && { slice: ownSlice, wholeList: true });
    const staging = Staging.create(outDir);
    const diff = new TreeDiff(outDir, previous, role.trust ?? TRUST_NOTHING, true);
    return new OutputTransaction(outDir, diff, staging, profileDirsExist(outDir), ownSlice, role.cache);
  }

  /** The owner reads a slice itself after all (its thread did not): that slice's last entries are read now. */
  includeSlice(slice: Slice): void {
    if (this.ownSlice === undefined) return;
    this.diff.includeEntries(readManifest(this.outDir, undefined, { slice, wholeList: false }).profiles);
  }

  /** Takes over what a thread staged for its slice of this pass, to commit it with the rest. */
  adopt(handover: OutputHandover): void {
    this.assertOpen();
    this.diff.adopt(handover);
    handover.names.forEach((name, i) => this.staging.adopt(name, handover.slots[i]!));
  }

  /** Starts a selective pass (see TreeDiff.carryOver). */
  carryOver(released: ReadonlySet<string>): CarriedOver | undefined {
    return this.diff.carryOver(released);
  }

  /** The entry of a profile carried over and not published again by this pass. */
  carriedEntry(name: string): string | undefined {
    return this.diff.carriedEntry(name);
  }

  /** Any other document (creators list, error documents), at a path relative to the out dir. */
  file(path: string, hash: string, render: () => string): void {
    if (this.diff.keepFile(path, hash)) return;
    this.assertOpen();
    this.staging.file(path, hash, render());
  }

  /**
   * A document too large to hold as one string (the creators list at a million profiles): `write`
   * streams it to the staging folder, and is only called when `hash` differs from the last build's,
   * or `always` (a file derived from another that this build rewrites). Returns whether it was.
   */
  streamedFile(path: string, hash: string, write: (sink: BufferedFileWriter) => void, always = false): boolean {
    if (this.diff.keepFile(path, hash, always)) return false;
    this.assertOpen();
    this.staging.streamedFile(path, hash, write);
    return true;
  }

  /**
   * Asks that the file now published at `path`, once this build replaces it, be held until the
   * next build of this process writes its successor (held-files.ts): for a watcher (a build that
   * keeps its manifest for the next), not a build that ends its process.
   */
  holdWhenReplaced(path: string): void {
    if (this.cache !== undefined) this.staging.held.add(path);
  }

  /** Records the stamp of an unchanged published file whose entry has none (see TreeDiff). */
  stampUnchangedFile(path: string, isIntact: (file: string) => boolean): void {
    this.diff.stampUnchangedFile(path, isIntact);
  }

  /** A file the last build wrote, when it is still exactly as written (see TreeDiff). */
  intactPreviousFile(path: string): { file: string; stamp: string } | undefined {
    return this.diff.intactPreviousFile(path);
  }

  /** The file `path` will be once committed: the staged one when this build rewrites it, else the published one. */
  fileToPublish(path: string): string {
    return this.staging.fileToPublish(path);
  }

  /** This build's creators list members in list order, with their lengths (the manifest lists them so). */
  setList(members: ListOrder): void {
    this.diff.setList(members);
  }

  /**
   * Runs `callback` once a commit has put every file in place, with each file's final stamp: for
   * bookkeeping that describes published files (a shortcut for the next build, which must not fail
   * this one: its errors are ignored).
   */
  onCommitted(callback: (stampOf: (path: string) => string | undefined) => void): void {
    this.committed.push(callback);
  }

  /** Publishes everything staged and removes what is no longer published. */
  commit(): WriteCounts {
    this.assertOpen();
    this.finished = true;
    const { counts, kept } = commitTree(this.diff, this.staging, this.cache !== undefined);
    this.runCommitted();
    // A process that builds again (a watcher) sheds this build before it waits for the next: what
    // it kept is its own, and the rest (the last manifest's lines, this build's strings) would
    // otherwise still be resident when the next one starts.
    if (this.cache !== undefined && kept !== undefined) {
      this.diff.letGo();
      this.cache.keep(this.outDir, kept, this.diff.lastTable);
      collectNow('committed');
    }
    return counts;
  }

  /** Discards everything staged; the previous output stays exactly as it was. A no-op once committing. */
  abort(): void {
    if (this.finished) return;
    this.finished = true;
    this.staging.discard();
    this.cache?.forget();
  }

  private runCommitted(): void {
    const { files } = this.diff.next;
    const stampOf = (path: string) => {
      const entry = files.get(path);
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
}

/**
 * A thread's part in a transaction `OutputTransaction.begin` opened (and holds open) in this
 * process: it stages the profiles of one slice of the users, with that slice of the last build's
 * entries, and hands them over. It commits nothing and never clears the staging folder.
 */
export class SliceTransaction extends TreeWriter {
  static join(outDir: string, slice: Slice, trust: Trust = TRUST_NOTHING): SliceTransaction {
    const previous = readManifest(outDir, undefined, { slice, wholeList: false });
    const diff = new TreeDiff(outDir, previous, trust, false);
    return new SliceTransaction(outDir, diff, Staging.join(outDir, slice), profileDirsExist(outDir));
  }

  /** Ends the slice's part: what it staged, for the owner to `adopt`. */
  handOver(): OutputHandover {
    this.assertOpen();
    this.finished = true;
    const found = this.diff.handOver();
    return { ...found, slots: this.staging.slotsOf(found.names) };
  }

  /** Ends the slice's part with nothing handed over; the owner clears the staging folder. */
  abort(): void {
    this.finished = true;
  }
}

function profileDirsExist(outDir: string): boolean {
  return PROFILE_DIRS.some((dir) => existsSync(join(outDir, dir)));
}
