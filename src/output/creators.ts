/**
 * The creators list: every active user, ordered by lower-cased username, each element the same bytes
 * as the data of that user's own document. Users arrive in id order, so each rendered member's JSON
 * is appended to a scratch file as it comes (never all held in memory: at a million users that would
 * be the largest thing in the process) with only its name, offset and length kept; `finish` sorts those and streams the list out.
 *
 * A member whose row did not change since the last build is not rendered at all: its bytes are
 * copied from the last build's list file. The manifest lists that list's members in order with their
 * lengths, so where each sits follows; both lists are in name order, so they are walked side by side
 * and unchanged neighbours form runs that are copied in one read each.
 *
 * The list's change hash is taken over the members' own hashes in order, so an unchanged list costs
 * no rewrite and no assembly.
 */
import { FINGERPRINT_LENGTH, Fingerprint } from '../core/hash.js';
import { collectNow } from '../core/memory.js';
import { BegunVariant, piecesAbout, stageCreatorsGzip, UNMARKED, type GzipPieces } from './creators-gzip.js';
import { WorkerAhead, type DeflateOptions } from './deflate-pool.js';
import type { BufferedFileWriter } from './file-writer.js';
import { ComposedColumn, type Column, type ListMembers, type ListOrder } from './list-order.js';
import { PositionedReader } from './positioned-reader.js';
import { FingerprintColumn } from './fingerprint-column.js';
import type { CarriedOver } from './diff.js';
import { positionsAmong } from './staging.js';
import type { OutputHandover, OutputTransaction, SliceTransaction } from './tree.js';

/**
 * Up to this size the scratch file is read back whole; beyond it, one positioned read per member.
 * Kept small: the whole read is resident memory, and a build that keeps most members has few reads.
 */
const READ_WHOLE_LIMIT = 8 * 2 ** 20;

/** The lists this process made (ListOrder.made numbers them). */
let listsMade = 0;

/**
 * The members another thread's slice of a pass found (see `handOver`), as plain data. Names and
 * hashes are not repeated here: each member is named by its place among the slice's profiles,
 * whose names and manifest entries (which start with the data hash) cross beside it.
 */
export interface CreatorsHandover {
  /** Its scratch file (in the staging folder) and the bytes in it. */
  scratch: string;
  scratchBytes: number;
  /** Each member's index in the slice's profiles. */
  profiles: Int32Array;
  offsets: Float64Array;
  lengths: Float64Array;
}

/** A slice's profiles, as its transaction hands them over. */
type SliceProfiles = Pick<OutputHandover, 'names' | 'entries'>;

export class CreatorsList {
  private readonly names: string[] = [];
  /**
   * Each member's data hash, as its bytes (from a hash, or a manifest entry that starts with one),
   * adopted members' after the own ones.
   */
  private readonly hashes = new FingerprintColumn();
  /**
   * Where a member's JSON is: >= 0, an offset in the scratch file; KEPT (kept, its hash being its
   * whole manifest entry, which this build leaves as it is), in the last list file.
   */
  private readonly offsets: number[] = [];
  private readonly lengths: number[] = [];
  /**
   * The members of the slices adopted from other threads, numbered after this list's own (the
   * columns above, whose offsets are in this list's scratch file), each slice's kept as it was
   * handed over, with its own scratch file: copied member by member into the
   * columns, they made each column grow in steps, and the columns' old storage, most of a million
   * members' worth, was garbage at the pass's peak.
   */
  private readonly adoptedMembers: AdoptedMembers[] = [];
  private adoptedCount = 0;
  private readonly scratch: BufferedFileWriter;
  /** The last build's list file and members, when members can be copied from it. */
  private last: { file: string; members: ListOrder } | undefined;
  /**
   * In a selective pass (keepCarried), the last list's members carried over as they were, kept as
   * that list plus the few that dropped out, not member by member: at a million members, copying
   * each into the columns above cost more than the rest of a quiet cycle's bookkeeping.
   */
  private carried: CarriedMembers | undefined;
  /** The members once `finish` has let go of their bookkeeping. */
  private finalSize: number | undefined;

  /**
   * `mayKeep` false: every member is rendered, none kept (a slice of a pass whose owner cannot copy
   * members from the last list).
   */
  constructor(
    tx: OutputTransaction | SliceTransaction,
    private readonly path: string,
    private readonly readWholeLimit = READ_WHOLE_LIMIT,
    mayKeep = true,
  ) {
    this.scratch = tx.scratchFile();
    this.last = mayKeep ? tx.previousList(path) : undefined;
  }

  get size(): number {
    return this.finalSize ?? this.names.length + this.adoptedCount + (this.carried?.count ?? 0);
  }

  /** Whether members can be kept from the last list (`keep`); otherwise each must be `add`ed. */
  get canKeep(): boolean {
    return this.last !== undefined;
  }

  /** A member rendered in this build; returns the byte length of its JSON (for the manifest). */
  add(name: string, userJson: string, hash: string): number {
    this.assertNoneAdopted(name);
    const offset = this.scratch.bytesWritten;
    this.scratch.write(userJson);
    const length = this.scratch.bytesWritten - offset;
    this.names.push(name);
    this.hashes.push(hash);
    this.offsets.push(offset);
    this.lengths.push(length);
    return length;
  }

  /**
   * A member unchanged since the last build, whose `length` bytes of JSON are in the last list file.
   * `hash` is its data hash, or its manifest entry (which starts with it: not cut out per member).
   */
  keep(name: string, hash: string, length: number): void {
    if (!this.canKeep) throw new Error(`bug: ${name} kept without a last list to copy it from`);
    this.assertNoneAdopted(name);
    this.names.push(name);
    this.hashes.push(hash);
    this.offsets.push(KEPT);
    this.lengths.push(length);
  }

  /**
   * Ends a slice's list (one thread's slice of a pass): its members, for the owner to `adopt`, each
   * by its index in `profileNames`, the slice's profiles in the order they were added.
   */
  handOver(profileNames: readonly string[]): CreatorsHandover {
    this.scratch.close();
    const { offsets, lengths } = this;
    return {
      scratch: this.scratch.path,
      scratchBytes: this.scratch.bytesWritten,
      profiles: positionsAmong(profileNames, this.names),
      offsets: Float64Array.from(offsets),
      lengths: Float64Array.from(lengths),
    };
  }

  /** Takes over the members another thread's slice of this pass found, among its `profiles`. */
  adopt(handover: CreatorsHandover, profiles: SliceProfiles): void {
    const { names, entries } = profiles;
    const { scratch, scratchBytes, profiles: members, offsets, lengths } = handover;
    const first = this.names.length + this.adoptedCount;
    this.adoptedMembers.push({ first, scratch, scratchBytes, names, members, offsets, lengths });
    this.adoptedCount += members.length;
    // Numbered after the own members in the column too: the slice's entry strings need not stay.
    for (let j = 0; j < members.length; j++) this.hashes.push(entries[members[j]!]!);
  }

  /** Own members are numbered before adopted ones: none may come after an adoption. */
  private assertNoneAdopted(name: string): void {
    if (this.adoptedCount > 0) throw new Error(`bug: ${name} added to the creators list after another slice's members`);
  }

  /** Which adopted slice member `i` (numbered after the own members) is in. */
  private adoptedIndex(i: number): number {
    const slices = this.adoptedMembers;
    let at = slices.length - 1;
    while (slices[at]!.first > i) at--;
    return at;
  }

  private adoptedSlice(i: number): AdoptedMembers {
    return this.adoptedMembers[this.adoptedIndex(i)]!;
  }

  private offsetOf(i: number): number {
    if (i < this.offsets.length) return this.offsets[i]!;
    const slice = this.adoptedSlice(i);
    return slice.offsets[i - slice.first]!;
  }

  private lengthOf(i: number): number {
    if (i < this.lengths.length) return this.lengths[i]!;
    const slice = this.adoptedSlice(i);
    return slice.lengths[i - slice.first]!;
  }

  /** Which scratch file member `i`'s offset is in: 0 this list's own, s + 1 adopted slice s's. */
  private scratchOf(i: number): number {
    return i < this.offsets.length ? 0 : this.adoptedIndex(i) + 1;
  }

  /** Every member's name, own and adopted, as one array: what the list is sorted by, and kept past letGoOfMembers. */
  private memberNames(): string[] {
    const own = this.names;
    const names = new Array<string>(own.length + this.adoptedCount);
    for (let i = 0; i < own.length; i++) names[i] = own[i]!;
    for (const slice of this.adoptedMembers) {
      for (let j = 0; j < slice.members.length; j++) names[slice.first + j] = slice.names[slice.members[j]!]!;
    }
    return names;
  }

  /**
   * Right after OutputTransaction.carryOver (a selective pass), keeps every member of the last list
   * whose profile was carried over: all but those it released, found by name. An entry the last
   * list did not record is filled in from the carried profiles. False when members cannot be kept.
   */
  keepCarried(owner: OutputTransaction, { released }: CarriedOver): boolean {
    const last = this.last;
    if (last === undefined) return false;
    const { names, entries: known } = last.members;
    const dropped = new Uint8Array(names.length);
    let count = names.length;
    const drop = (index: number) => {
      count -= 1 - dropped[index]!;
      dropped[index] = 1;
    };
    for (const name of released) {
      const index = indexOfName(names, name);
      if (index !== -1) drop(index);
    }
    let entries: Column<string | undefined> = known ?? [];
    const carriedEntry = (i: number) => (dropped[i] === 0 ? owner.carriedEntry(names.at(i)!) : undefined);
    // A composed list (one a watcher's quiet cycle made) lacks its own members' entries alone: those
    // are filled in, not a string per member.
    if (known instanceof ComposedColumn) entries = known.filled(carriedEntry, drop);
    else if (known?.complete !== true) {
      const filled = new Array<string | undefined>(names.length);
      for (let i = 0; i < names.length; i++) {
        if (dropped[i] === 0 && (filled[i] = known?.at(i) ?? carriedEntry(i)) === undefined) drop(i);
      }
      entries = filled;
    }
    this.carried = { members: last.members, entries, dropped, count };
    return true;
  }

  /**
   * Publishes the list as `head` + JSON array + `tail()` (the envelope), rewriting it only when its
   * members or their data changed, and gives the transaction the members in list order. Then its
   * gzip variant (creators-gzip.ts), deflated on up to `threads` threads; returns what that cost,
   * when it was staged. A list that is a shard's part of a joined one (`partOfJoined`) has a
   * variant whose members can be joined after another shard's (see creators-gzip.ts).
   */
  finish(
    owner: OutputTransaction,
    head: string,
    tail: () => string,
    { threads = 1, partOfJoined = false }: { threads?: number; partOfJoined?: boolean } = {},
  ): GzipPieces | undefined {
    const deflating: DeflateOptions = { threads };
    try {
      return this.writeWithVariant(owner, head, tail, partOfJoined, deflating);
    } finally {
      void deflating.ahead?.close(); // the worker started ahead, when no variant took it
    }
  }

  private writeWithVariant(
    owner: OutputTransaction,
    head: string,
    tail: () => string,
    partOfJoined: boolean,
    deflating: DeflateOptions,
  ): GzipPieces | undefined {
    this.scratch.close();
    const names = this.memberNames();
    const order = this.listOrder(names);
    const headLength = Buffer.byteLength(head);
    const runs = carriedRuns(order);
    const memberHashes = this.memberHashes(order, runs);
    const digest = new Fingerprint().update(memberHashes).digest();
    const listed = this.inListOrder(order, names);
    // Completed by the variant (stageCreatorsGzip), in place, before the next list reads them.
    const pieceMarks = partOfJoined ? undefined : this.knownPieceMarks(order);
    const made = ++listsMade;
    const lastMade = this.carried?.members.made;
    const carried = lastMade === undefined ? undefined : { from: lastMade, runs };
    const layout = {
      headLength,
      ...listed,
      hashes: memberHashes,
      made,
      partOfJoined,
      ...(pieceMarks && { pieceMarks }),
      ...(carried && { carried }),
    };
    // A watcher writes the list into the memory of the one it replaced last cycle (held-files.ts).
    owner.holdWhenReplaced(this.path);
    let begun: BegunVariant | undefined;
    let rewritten: boolean;
    try {
      rewritten = owner.streamedFile(this.path, digest, (sink) => {
        // A rewritten list has a variant to deflate, in part: its worker starts while the list is
        // written, and deflates the pieces to deflate as their bytes are written.
        deflating.ahead ??= WorkerAhead.start(deflating, piecesAbout(order.length));
        begun = BegunVariant.whileWritten(owner, this.path, sink, layout, deflating);
        sink.write(`${head}[`);
        this.writeMembers(sink, order, names, headLength);
        sink.write(`]${tail()}`);
      });
      owner.setList({ ...listed, hashes: memberHashes, made, ...(pieceMarks && { pieceMarks }) });
      if (!rewritten) this.stampUnchanged(owner, headLength, listed.lengths);
      this.letGoOfMembers();
    } catch (error) {
      begun?.end();
      throw error;
    }
    return stageCreatorsGzip(owner, { path: this.path, hash: digest, rewritten }, layout, deflating, begun);
  }

  /**
   * Frees the per-member bookkeeping and the last list once the list is written: at a million
   * members they are tens of megabytes the variant and the commit after it do not need.
   */
  private letGoOfMembers(): void {
    this.finalSize = this.size;
    for (const column of [this.names, this.offsets, this.lengths]) column.length = 0;
    this.hashes.clear();
    this.adoptedMembers.length = 0;
    this.adoptedCount = 0;
    this.last = undefined;
    this.carried = undefined;
    collectNow('list-written'); // most of the heap's growth since the last collection is garbage now
  }

  /**
   * The members in list order, each as its index in the columns, or as ~i for member i of the last
   * list carried over. Lower-case ASCII names: code-unit order is "lower case, ascending".
   * `names`: every member's, own and adopted (memberNames).
   */
  private listOrder(names: readonly string[]): number[] {
    // Filled by index: Array.from(names.keys()) made an iterator result per member, a heap's worth
    // of garbage at a million members right where the build's memory peaks.
    const own = new Array<number>(names.length);
    for (let i = 0; i < names.length; i++) own[i] = i;
    own.sort((a, b) => (names[a]! < names[b]! ? -1 : 1));
    const carried = this.carried;
    if (carried === undefined) return own;
    // Each rendered member goes in before the first carried one whose name is greater, found by a
    // binary search: a cycle renders few members, and comparing a name per carried member cost more.
    const order = new Array<number>(own.length + carried.count);
    const lastNames = carried.members.names;
    let at = 0;
    let from = 0;
    for (const member of own) {
      const until = firstAfter(lastNames, names[member]!, from);
      at = appendCarried(order, at, carried.dropped, from, until);
      order[at++] = member;
      from = until;
    }
    appendCarried(order, at, carried.dropped, from, lastNames.length);
    return order;
  }

  /** The list's members in `order`, with their lengths and (where this pass leaves it as it was) manifest entries. */
  private inListOrder(order: number[], names: string[]): ListMembers {
    const last = this.carried?.members;
    // Views, not a copy per member: the last list's members stay where they are (its manifest
    // table, at best), and this build's own names (memberNames' array) are kept past letGoOfMembers.
    const lengths = new Float64Array(order.length);
    for (let at = 0; at < order.length; at++) {
      const i = order[at]!;
      lengths[at] = i < 0 ? last!.lengths[~i]! : this.lengthOf(i);
    }
    const listed: ListMembers = {
      names: ComposedColumn.of(order, last?.names, names),
      lengths,
      entries: ComposedColumn.of(order, this.carried?.entries, undefined),
    };
    if (last?.table !== undefined) {
      // Looked up now, not through the last list's rows: a chain of those would grow every cycle.
      const lastRows = last.tableRows;
      const rows = new Int32Array(order.length);
      for (let at = 0; at < order.length; at++) {
        const i = order[at]!;
        rows[at] = i >= 0 ? -1 : lastRows === undefined ? ~i : lastRows[~i]!;
      }
      listed.table = last.table;
      listed.tableRows = rows;
    }
    return listed;
  }

  /**
   * The gzip variant's piece marks (creators-gzip.ts) of the members carried over from the last
   * list, UNMARKED for the others, in `order`.
   */
  private knownPieceMarks(order: number[]): Uint8Array {
    const marks = new Uint8Array(order.length).fill(UNMARKED);
    const lastMarks = this.carried?.members.pieceMarks;
    if (lastMarks === undefined) return marks;
    for (let at = 0; at < order.length; at++) {
      const i = order[at]!;
      if (i < 0) marks[at] = lastMarks[~i]!;
    }
    return marks;
  }

  /**
   * The members' data hashes in list order, FINGERPRINT_LENGTH bytes each: the list's change hash is taken
   * over them, and the gzip variant's piece keys (creators-gzip.ts). The members of this pass are
   * copied from their column, those carried over from the last list's (or their manifest entries).
   */
  private memberHashes(order: number[], runs: Int32Array): Buffer {
    const hashes = Buffer.allocUnsafe(order.length * FINGERPRINT_LENGTH);
    const carried = this.carried;
    const lastHashes = carried?.members.hashes;
    let at = 0;
    let run = 0;
    for (let position = 0; position < order.length; position++) {
      const i = order[position]!;
      if (i >= 0) {
        at += this.hashes.copyTo(i, hashes, at);
        continue;
      }
      if (lastHashes !== undefined) {
        // A run of members carried over lies in the last list's hashes as one range.
        while (runs[run]! < position) run += 3;
        const length = runs[run + 2]!;
        at += lastHashes.copy(hashes, at, ~i * FINGERPRINT_LENGTH, (~i + length) * FINGERPRINT_LENGTH);
        position += length - 1;
        continue;
      }
      const text = carried!.entries.at(~i)!;
      // Copied by a loop: a call into the encoder per member cost several times the copying.
      for (let c = 0; c < FINGERPRINT_LENGTH; c++) hashes[at++] = text.charCodeAt(c);
    }
    return hashes;
  }

  /** Writes the members, commas between: rendered ones from the scratch file, kept ones from the last list. */
  private writeMembers(sink: BufferedFileWriter, order: number[], names: readonly string[], headLength: number): void {
    const scratchFiles = [
      { path: this.scratch.path, bytes: this.scratch.bytesWritten },
      ...this.adoptedMembers.map((slice) => ({ path: slice.scratch, bytes: slice.scratchBytes })),
    ];
    const scratch: PositionedReader[] = [];
    const last = this.last === undefined ? undefined : new PositionedReader(this.last.file, false);
    const cursor = new LastListCursor(this.last?.members, headLength);
    const carried = new LastListOffsets(this.carried?.members, headLength);
    try {
      for (const file of scratchFiles) scratch.push(new PositionedReader(file.path, file.bytes <= this.readWholeLimit));
      for (let position = 0; position < order.length;) {
        if (position > 0) sink.write(',');
        const i = order[position]!;
        const offset = i < 0 ? KEPT : this.offsetOf(i);
        if (i < 0) {
          position = copyCarriedRun(sink, last!, carried, order, position);
        } else if (offset !== KEPT) {
          sink.write(scratch[this.scratchOf(i)]!.read(offset, this.lengthOf(i)));
          position++;
        } else {
          position = this.copyKeptRun(sink, last!, cursor, order, names, position);
        }
      }
    } finally {
      for (const reader of scratch) reader.close();
      last?.close();
    }
  }

  /**
   * Copies the run of kept members from `order[position]` on that were neighbours in the last list
   * too, commas between them included, in one read; returns the position after the run.
   */
  private copyKeptRun(
    sink: BufferedFileWriter,
    last: PositionedReader,
    cursor: LastListCursor,
    order: number[],
    names: readonly string[],
    position: number,
  ): number {
    const first = order[position]!;
    const start = cursor.locate(names[first]!);
    let end = start + this.lengthOf(first);
    let runEnd = position + 1;
    while (
      runEnd < order.length &&
      order[runEnd]! >= 0 &&
      this.offsetOf(order[runEnd]!) === KEPT &&
      cursor.isFollowedBy(runEnd - position, names[order[runEnd]!]!)
    ) {
      end += 1 + this.lengthOf(order[runEnd]!);
      runEnd++;
    }
    last.copy(start, end - start, sink);
    return runEnd;
  }

  /**
   * The list did not change, so its file was not rewritten. After a format 1 manifest its entry has
   * no stamp: record one once the file is checked to have the shape the members' lengths give it,
   * so the next build can copy from it.
   */
  private stampUnchanged(owner: OutputTransaction, headLength: number, lengths: ArrayLike<number>): void {
    if (this.last !== undefined) return;
    let closing = headLength + 1 - (lengths.length > 0 ? 1 : 0);
    for (let i = 0; i < lengths.length; i++) closing += lengths[i]! + 1;
    owner.stampUnchangedFile(this.path, (file) => {
      try {
        const reader = new PositionedReader(file, false);
        try {
          return reader.read(headLength, 1)[0] === 0x5b && reader.read(closing, 1)[0] === 0x5d; // '[' ... ']'
        } finally {
          reader.close();
        }
      } catch {
        return false; // not there, or shorter
      }
    });
  }
}

/** The offset of a member kept from the last list (found there in `finish`). */
const KEPT = -1;

/** Another thread's slice's members, as its handover gave them (CreatorsList.adopt). */
interface AdoptedMembers {
  /** The number of its first member in the list (after the list's own and earlier slices'). */
  first: number;
  /** Its scratch file (in the staging folder) and the bytes in it. */
  scratch: string;
  scratchBytes: number;
  /** The slice's profiles' names, and each member's index among them (their hashes are in the column). */
  names: readonly string[];
  members: Int32Array;
  offsets: Float64Array;
  lengths: Float64Array;
}

/** The last list's members a selective pass carried over (CreatorsList.keepCarried). */
interface CarriedMembers {
  members: ListOrder;
  /** Each member's manifest entry (filled in where the list recorded none). */
  entries: Column<string | undefined>;
  /** 1 for a member not carried over. */
  dropped: Uint8Array;
  /** Members carried over. */
  count: number;
}

/** The first index from `low` on whose name is greater than `name` (names.length: none is). */
function firstAfter(names: Column<string>, name: string, low: number): number {
  let high = names.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (names.at(middle)! > name) high = middle;
    else low = middle + 1;
  }
  return low;
}

/** Appends ~i for each last-list member i in [from, until) not dropped; returns the next position. */
function appendCarried(order: number[], at: number, dropped: Uint8Array, from: number, until: number): number {
  for (let i = from; i < until; i++) if (dropped[i] === 0) order[at++] = ~i;
  return at;
}

/**
 * The runs of members carried over from the last list that were neighbours there too, as triples:
 * the run's first position in `order`, its first member's index in the last list, its length.
 */
function carriedRuns(order: number[]): Int32Array {
  const runs: number[] = [];
  for (let position = 0; position < order.length; position++) {
    const i = order[position]!;
    if (i >= 0) continue;
    let end = position + 1;
    while (end < order.length && order[end] === order[end - 1]! - 1) end++;
    runs.push(position, ~i, end - position);
    position = end - 1;
  }
  return Int32Array.from(runs);
}

/** The index of `name` in `names`, which are in code-unit order; -1 when it is not there. */
function indexOfName(names: Column<string>, name: string): number {
  const last = firstAfter(names, name, 0) - 1;
  return last >= 0 && names.at(last) === name ? last : -1;
}

/**
 * Copies the run of carried members from `order[position]` on that were neighbours in the last
 * list too (~i, ~(i + 1), ...), commas between them included, in one read; returns the position after it.
 */
function copyCarriedRun(
  sink: BufferedFileWriter,
  last: PositionedReader,
  offsets: LastListOffsets,
  order: number[],
  position: number,
): number {
  const first = ~order[position]!;
  let runEnd = position + 1;
  while (runEnd < order.length && order[runEnd] === order[runEnd - 1]! - 1) runEnd++;
  const start = offsets.of(first);
  last.copy(start, offsets.of(first + runEnd - position) - 1 - start, sink);
  return runEnd;
}

/** Byte offsets of the last list's members by index, for indexes asked in ascending order. */
class LastListOffsets {
  private index = 0;
  private offset: number;

  constructor(
    private readonly members: ListOrder | undefined,
    headLength: number,
  ) {
    this.offset = headLength + 1; // after the head and its "["
  }

  /** Where member `index` starts (for one past the last, where a next one would). */
  of(index: number): number {
    const lengths = this.members!.lengths;
    for (; this.index < index; this.index++) this.offset += lengths[this.index]! + 1;
    return this.offset;
  }
}

/**
 * Finds kept members in the last list: by name, then where it sits. Both lists are in name order,
 * so members are asked for in ascending order and the offsets are summed forward only.
 */
class LastListCursor {
  private index = 0;
  private readonly offsets: LastListOffsets;

  constructor(
    private readonly members: ListOrder | undefined,
    headLength: number,
  ) {
    this.offsets = new LastListOffsets(members, headLength);
  }

  /** The byte offset of member `name` in the last list file; the cursor stays on it. */
  locate(name: string): number {
    const index = this.members === undefined ? -1 : indexOfName(this.members.names, name);
    if (index === -1) throw new Error(`bug: kept member ${name} is not in the last list`);
    this.index = index;
    return this.offsets.of(index);
  }

  /** Whether the member `ahead` places after the located one in the last list is `name`. */
  isFollowedBy(ahead: number, name: string): boolean {
    return this.members?.names.at(this.index + ahead) === name;
  }
}
