/**
 * A map of profile names to manifest entries, as a Map<string, string> behaves (insertion order, an
 * entry set again keeps its place), with each entry kept as its bytes. A full pass sets a million
 * entries: as strings in a Map, each cost its string (about 56 bytes of heap) and the Map's own
 * slots (about 50 more once the table has doubled past a million), while the names are held anyway
 * by the pass's staging and creators list. Here a profile costs its name's reference, its entry's
 * bytes in a fixed slot, and a few bytes of index.
 */
import { fnv1a } from '../core/hash.js';

/** Bytes of an entry kept in its slot: `hash<TAB>signature<TAB>length` is 34 plus the length's digits. */
const SLOT = 40;
/** Rows per chunk of slots (2^CHUNK_SHIFT): the slots grow a chunk at a time, never copied to grow. */
const CHUNK_SHIFT = 14;
const CHUNK_ROWS = 1 << CHUNK_SHIFT;
/** A row's length that says its entry is in `long` (longer than a slot, or not Latin-1). */
const LONG = 255;
const FIRST_INDEX = 1 << 4;
/** The index grows when its rows would fill more than this part of it. */
const MAX_LOAD = 0.75;

/** What may be read of an EntryMap: by name, in order, and row by row (its entries' bytes too). */
export type ReadonlyEntries = Pick<
  EntryMap,
  | 'size'
  | 'get'
  | typeof Symbol.iterator
  | 'rowCount'
  | 'nameAt'
  | 'rowOf'
  | 'entryAt'
  | 'entryLength'
  | 'copyEntry'
  | 'slotChunk'
  | 'slotStart'
  | 'entryIs'
>;

export class EntryMap {
  /** Each row's name; undefined once deleted. */
  private names: (string | undefined)[] = [];
  private lengths: Uint8Array = new Uint8Array(0);
  /** Each row's name hashed (hashName): the index is grown and mended without hashing names again. */
  private hashes: Int32Array = new Int32Array(0);
  private readonly chunks: Buffer[] = [];
  /** Entries that do not fit a slot, by row (a manifest edited by hand; never one this tool writes). */
  private readonly long = new Map<number, string>();
  /** Open addressing, linear probing: row + 1 of each live name, 0 for an empty place. */
  private index = new Int32Array(FIRST_INDEX);
  private live = 0;

  get size(): number {
    return this.live;
  }

  get(name: string): string | undefined {
    const row = this.rowOf(name);
    return row === -1 ? undefined : this.entryAt(row);
  }

  /** Rows ever set, deleted ones included: the rows `nameAt` and the rest take are below this. */
  get rowCount(): number {
    return this.names.length;
  }

  /** Row `row`'s name; undefined once deleted. */
  nameAt(row: number): string | undefined {
    return this.names[row];
  }

  /** The row of `name`, or -1. */
  rowOf(name: string): number {
    return this.index[this.placeOf(name, hashName(name))]! - 1;
  }

  /** Row `row`'s entry. */
  entryAt(row: number): string {
    const length = this.lengths[row]!;
    if (length === LONG) return this.long.get(row)!;
    const at = this.slotStart(row);
    return this.slotChunk(row).toString('latin1', at, at + length);
  }

  /**
   * Row `row`'s entry's length in bytes, when its bytes are in its slot (-1: it is kept as a string,
   * longer than a slot or not Latin-1; take it with `entryAt`).
   */
  entryLength(row: number): number {
    const length = this.lengths[row]!;
    return length === LONG ? -1 : length;
  }

  /**
   * Copies row `row`'s entry (one whose bytes are in its slot: see `entryLength`) into `into` at
   * `at`; returns where it ends. A manifest line takes its entry so, with no string made for it.
   */
  copyEntry(row: number, into: Uint8Array, at: number): number {
    const length = this.lengths[row]!;
    const chunk = this.slotChunk(row);
    const from = this.slotStart(row);
    for (let c = 0; c < length; c++) into[at++] = chunk[from + c]!;
    return at;
  }

  /** The memory row `row`'s entry is kept in (one whose bytes are in its slot): from `slotStart(row)` on. */
  slotChunk(row: number): Buffer {
    return this.chunks[row >>> CHUNK_SHIFT]!;
  }

  /** Where row `row`'s entry starts in `slotChunk(row)`. */
  slotStart(row: number): number {
    return (row & (CHUNK_ROWS - 1)) * SLOT;
  }

  /** Whether row `row`'s entry is exactly `entry`. */
  entryIs(row: number, entry: string): boolean {
    const length = this.lengths[row]!;
    if (length === LONG) return this.long.get(row) === entry;
    return length === entry.length && this.slotHolds(row, entry);
  }

  has(name: string): boolean {
    return this.rowOf(name) !== -1;
  }

  set(name: string, entry: string): this {
    const hash = hashName(name);
    const place = this.placeOf(name, hash);
    const found = this.index[place]! - 1;
    if (found !== -1) {
      if (this.lengths[found] === LONG) this.long.delete(found);
      this.store(found, entry);
      return this;
    }
    const row = this.names.length;
    if (row === this.lengths.length) this.growColumns();
    this.names.push(name);
    this.hashes[row] = hash;
    this.store(row, entry);
    this.live++;
    if (this.live / this.index.length > MAX_LOAD) this.reindex(this.index.length * 2);
    else this.index[place] = row + 1;
    return this;
  }

  delete(name: string): boolean {
    const place = this.placeOf(name, hashName(name));
    const row = this.index[place]! - 1;
    if (row === -1) return false;
    this.names[row] = undefined;
    this.long.delete(row);
    this.live--;
    this.unindex(place);
    // Deleted rows are dropped once they outnumber the live ones (a manifest read whole, taken
    // over profile by profile as a pass publishes them).
    if (this.names.length > 1024 && this.live < this.names.length / 2) this.compact();
    return true;
  }

  /** Whether any entry is exactly `entry` (looked for in place: no string made per row). */
  includes(entry: string): boolean {
    for (const kept of this.long.values()) if (kept === entry) return true;
    if (entry.length > SLOT) return false;
    const { names, lengths } = this;
    for (let row = 0; row < names.length; row++) {
      if (names[row] !== undefined && lengths[row] === entry.length && this.slotHolds(row, entry)) return true;
    }
    return false;
  }

  *[Symbol.iterator](): IterableIterator<[string, string]> {
    const { names } = this;
    for (let row = 0; row < names.length; row++) {
      const name = names[row];
      if (name !== undefined) yield [name, this.entryAt(row)];
    }
  }

  /** The place of `name` (whose hash is `hash`) in the index, or the empty place where it would go. */
  private placeOf(name: string, hash: number): number {
    const { index, names, hashes } = this;
    const mask = index.length - 1;
    for (let place = hash & mask; ; place = (place + 1) & mask) {
      const row = index[place]!;
      if (row === 0 || (hashes[row - 1] === hash && names[row - 1] === name)) return place;
    }
  }

  /** Empties an index place, moving later names of its run back (linear probing's deletion). */
  private unindex(emptied: number): void {
    const { index, hashes } = this;
    const mask = index.length - 1;
    for (let place = (emptied + 1) & mask; index[place] !== 0; place = (place + 1) & mask) {
      const home = hashes[index[place]! - 1]! & mask;
      // Moved back when its home is not in (emptied, place]: it could not be found past the gap.
      const between = emptied < place ? home > emptied && home <= place : home > emptied || home <= place;
      if (between) continue;
      index[emptied] = index[place]!;
      emptied = place;
    }
    index[emptied] = 0;
  }

  private slotHolds(row: number, entry: string): boolean {
    const chunk = this.slotChunk(row);
    const at = this.slotStart(row);
    for (let c = 0; c < entry.length; c++) if (chunk[at + c] !== entry.charCodeAt(c)) return false;
    return true;
  }

  /** Keeps `entry` as row `row`'s (the row's columns already have room for it). */
  private store(row: number, entry: string): void {
    const chunkIndex = row >>> CHUNK_SHIFT;
    if (chunkIndex === this.chunks.length) this.chunks.push(Buffer.alloc(CHUNK_ROWS * SLOT));
    if (entry.length > SLOT || !this.copyIntoSlot(this.chunks[chunkIndex]!, this.slotStart(row), entry)) {
      this.lengths[row] = LONG;
      this.long.set(row, entry);
      return;
    }
    this.lengths[row] = entry.length;
  }

  /** Copies a Latin-1 entry into its slot; false (nothing of it kept) when it is not Latin-1. */
  private copyIntoSlot(chunk: Buffer, at: number, entry: string): boolean {
    for (let c = 0; c < entry.length; c++) {
      const code = entry.charCodeAt(c);
      if (code > 0xff) return false;
      chunk[at + c] = code;
    }
    return true;
  }

  /** Room for twice as many rows in the per-row columns. */
  private growColumns(): void {
    const rows = Math.max(1024, this.lengths.length * 2);
    const lengths = new Uint8Array(rows);
    lengths.set(this.lengths);
    const hashes = new Int32Array(rows);
    hashes.set(this.hashes);
    this.lengths = lengths;
    this.hashes = hashes;
  }

  /** Drops deleted rows, moving the others down in their order, and indexes them afresh. */
  private compact(): void {
    const { names, lengths, hashes, chunks, long } = this;
    let to = 0;
    for (let from = 0; from < names.length; from++) {
      const name = names[from];
      if (name === undefined) continue;
      if (to !== from) {
        names[to] = name;
        lengths[to] = lengths[from]!;
        hashes[to] = hashes[from]!;
        const at = this.slotStart(from);
        this.slotChunk(from).copy(this.slotChunk(to), this.slotStart(to), at, at + SLOT);
        if (lengths[to] === LONG) {
          long.set(to, long.get(from)!);
          long.delete(from);
        }
      }
      to++;
    }
    names.length = to;
    chunks.length = Math.ceil(to / CHUNK_ROWS);
    let size = FIRST_INDEX;
    while (to / size > MAX_LOAD / 2) size *= 2;
    this.reindex(size);
  }

  /** Indexes every live row afresh, in `size` places (a power of two). */
  private reindex(size: number): void {
    const { names, hashes } = this;
    const index = new Int32Array(size);
    const mask = size - 1;
    for (let row = 0; row < names.length; row++) {
      if (names[row] === undefined) continue;
      let place = hashes[row]! & mask;
      while (index[place] !== 0) place = (place + 1) & mask;
      index[place] = row + 1;
    }
    this.index = index;
  }
}

/** The name hashed last, and its hash: a pass looks one name up in two maps, one after the other. */
let lastName = '';
let lastHash = fnv1a('') | 0;

/** A name's hash as the index and the hashes' column keep it (a signed 32-bit number). */
function hashName(name: string): number {
  if (name === lastName) return lastHash;
  lastName = name;
  lastHash = fnv1a(name) | 0;
  return lastHash;
}
