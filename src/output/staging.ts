/**
 * The staging folder of a build, inside the out dir (same filesystem, so a commit is renames): every
 * document the diff (diff.ts) found changed is written here first, and nothing else. Threads of one
 * pass stage into the same folder, each from its own range of slots, so they never pick one name.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROFILE_DIRS, STAGING_DIR } from '../core/layout.js';
import type { Slice } from '../core/slice.js';
import { BufferedFileWriter } from './file-writer.js';
import { asOutputError, guard, linkOrCopy } from './folders.js';
import { releaseHeld } from './held-files.js';

/** A staged document other than a profile. */
export interface StagedFile {
  path: string;
  hash: string;
  staged: string;
}

/** A profile's place in a handover: not staged (kept, or its data unchanged), or staged as a whole folder. */
export const NOT_STAGED = -1;
export const STAGED_FRESH = -2;

/** Each slice's staging slots start here, so threads never pick the same staged file name. */
const SLOTS_PER_SLICE = 2 ** 32;

export class Staging {
  readonly dir: string;
  /** Staged profiles as parallel arrays (name, staging slot unless fresh): a million stay compact. */
  readonly names: string[] = [];
  readonly slots: number[] = [];
  readonly files: StagedFile[] = [];
  /**
   * Paths whose published file a long-lived writer holds once replaced (held-files.ts): the commit
   * holds it, and the next build's streamedFile of the path lets go of it right before writing.
   */
  readonly held = new Set<string>();
  /**
   * With no users folder yet (a first build), profiles are staged as whole folders, `fresh/<i>/<name>`
   * for alias folder i, and each folder is renamed into place at commit: one rename instead of one
   * per file, which brings a cold build close to the cost of merely writing the files.
   */
  freshDirs: string[] | undefined;
  private nextSlot: number;

  private constructor(
    private readonly outDir: string,
    firstSlot: number,
  ) {
    this.dir = join(outDir, STAGING_DIR);
    this.nextSlot = firstSlot;
  }

  /** The owner's staging: a folder left by a crashed run holds nothing anyone reads, so it starts clean. */
  static create(outDir: string): Staging {
    const staging = new Staging(outDir, 0);
    guard(`cannot prepare the staging folder ${staging.dir}`, () => {
      rmSync(staging.dir, { recursive: true, force: true });
      mkdirSync(staging.dir);
    });
    return staging;
  }

  /** A slice's part in the owner's staging folder, which the owner created and clears. */
  static join(outDir: string, slice: Slice): Staging {
    return new Staging(outDir, slice.index * SLOTS_PER_SLICE);
  }

  /** Stages a profile, as part of a whole fresh folder or in a slot of its own. */
  profile(name: string, bytes: string, fresh: boolean): void {
    if (fresh) {
      this.stageFresh(name, bytes);
    } else {
      this.slots.push(this.nextSlot);
      this.stage(bytes);
    }
    this.names.push(name);
  }

  /** Any other document, at a path relative to the out dir. */
  file(path: string, hash: string, bytes: string): void {
    this.files.push({ path, hash, staged: this.stage(bytes) });
  }

  /** A document too large to hold as one string: `write` streams it into the staging folder. */
  streamedFile(path: string, hash: string, write: (sink: BufferedFileWriter) => void): void {
    const sink = this.scratchFile();
    // The file the last commit replaced at `path`, held until now, lets go of its memory for this one.
    if (this.held.has(path)) releaseHeld(this.outDir, path);
    try {
      write(sink);
    } finally {
      sink.close();
    }
    this.files.push({ path, hash, staged: sink.path });
  }

  /** A scratch file in the staging folder; it goes away with the staging folder. */
  scratchFile(): BufferedFileWriter {
    return new BufferedFileWriter(this.slotPath(), (cause) => asOutputError(cause, `cannot write into ${this.outDir}`));
  }

  /** The file `path` will be once committed: the staged one when this build rewrites it, else the published one. */
  fileToPublish(path: string): string {
    return this.files.find((s) => s.path === path)?.staged ?? join(this.outDir, path);
  }

  /** Each of `names` (a slice's profiles, in the order they were added) as its staging slot, for a handover. */
  slotsOf(names: readonly string[]): Float64Array {
    const slots = new Float64Array(names.length).fill(NOT_STAGED);
    positionsAmong(names, this.names).forEach((at, staged) => {
      slots[at] = this.freshDirs ? STAGED_FRESH : this.slots[staged]!;
    });
    return slots;
  }

  /** Takes in a profile another thread staged in this folder (`slot` from its `slotsOf`). */
  adopt(name: string, slot: number): void {
    if (slot === NOT_STAGED) return;
    this.names.push(name);
    if (slot === STAGED_FRESH) this.freshDirs ??= this.freshDirPaths();
    else this.slots.push(slot);
  }

  /** Best effort: it runs while another error propagates, and the next build clears the folder anyway. */
  discard(): void {
    try {
      rmSync(this.dir, { recursive: true, force: true });
    } catch {
      // left for the next build
    }
  }

  /** The folders a first build stages each alias's profiles in, one per alias folder. */
  private freshDirPaths(): string[] {
    return PROFILE_DIRS.map((_, i) => join(this.dir, 'fresh', String(i)));
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
      for (const dir of others) linkOrCopy(path, `${dir}/${name}`);
    });
  }

  private slotPath(): string {
    return `${this.dir}/${this.nextSlot++}`;
  }

  private stage(bytes: string): string {
    const staged = this.slotPath();
    guard(`cannot write into ${this.outDir}`, () => writeFileSync(staged, bytes));
    return staged;
  }
}

/**
 * Where each of `names` sits in `profiles`, of which it is a subsequence in the same order
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
