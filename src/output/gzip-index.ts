/**
 * Where each piece of the last gzip variant of the creators list sits in it (creators-gzip.ts): a
 * header line naming the piece settings and the stamp of the variant file it describes, then a
 * record per piece of RECORD_FIELDS little-endian doubles. It is only a shortcut: when it does not
 * match the variant on disk, every piece is deflated again.
 *
 * In memory the pieces are a PieceTable: the file's records as they lie in it, in one array of
 * doubles, and a table from key to piece made on the first lookup. A list of a million members has
 * tens of thousands of pieces, and an object and a map entry for each, made every cycle, cost a
 * quiet cycle more than the rest of its work on the variant.
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { CREATORS_GZIP_INDEX_FILE } from '../core/layout.js';
import { replaceFileWith } from './folders.js';
import { fileStamp } from './manifest.js';
import { lengthShift } from './gzip-member.js';
import type { OutputTransaction } from './tree.js';

/** A record's fields, in order, in the file as in memory. */
const KEY = 0,
  OFFSET = 1,
  COMPRESSED = 2,
  LENGTH = 3,
  CRC = 4,
  RECORD_FIELDS = 5;
const RECORD_BYTES = RECORD_FIELDS * 8;
/** Whether this machine keeps doubles little-endian, as the file does: then records are copied as they are. */
const LITTLE_ENDIAN = new Uint8Array(Float64Array.of(1).buffer)[7] === 0x3f;
/** A slot of the key table that holds no piece. */
const EMPTY = -1;

/** The pieces of a gzip variant, in variant order. */
export class PieceTable {
  count = 0;
  private records: Float64Array;
  /** Each piece's lengthShift (gzip-member.ts), which appending its CRC takes: made once, not in the file. */
  private shifts: Uint32Array;
  /** Open addressing from a key's low bits to a piece's number, made on the first lookup. */
  private slots: Int32Array | undefined;
  /** The last key table's memory, for the next one of the same size (`clear`). */
  private spareSlots: Int32Array | undefined;

  constructor(capacity: number) {
    this.records = new Float64Array(Math.max(1, capacity) * RECORD_FIELDS);
    this.shifts = new Uint32Array(Math.max(1, capacity));
  }

  /**
   * Appends a piece: `key` digests its members' and dictionary's hashes (creators-gzip.ts pieceKey,
   * an integer of 53 bits or fewer); its compressed bytes are at [offset, offset + compressed) of
   * the variant; it holds `length` bytes of the list whose CRC-32 is `crc`, and `shift` is that
   * length's lengthShift.
   */
  add(key: number, offset: number, compressed: number, length: number, crc: number, shift: number): void {
    if (this.count === this.shifts.length) this.grow();
    const at = this.count * RECORD_FIELDS;
    const records = this.records;
    records[at + KEY] = key;
    records[at + OFFSET] = offset;
    records[at + COMPRESSED] = compressed;
    records[at + LENGTH] = length;
    records[at + CRC] = crc;
    this.shifts[this.count++] = shift;
    this.slots = undefined;
  }

  /** Empties the table, its memory kept for the pieces added next. */
  clear(): void {
    this.count = 0;
    this.spareSlots = this.slots ?? this.spareSlots;
    this.slots = undefined;
  }

  /** The pieces it holds without growing. */
  get capacity(): number {
    return this.shifts.length;
  }

  key(piece: number): number {
    return this.records[piece * RECORD_FIELDS + KEY]!;
  }

  offset(piece: number): number {
    return this.records[piece * RECORD_FIELDS + OFFSET]!;
  }

  compressed(piece: number): number {
    return this.records[piece * RECORD_FIELDS + COMPRESSED]!;
  }

  length(piece: number): number {
    return this.records[piece * RECORD_FIELDS + LENGTH]!;
  }

  crc(piece: number): number {
    return this.records[piece * RECORD_FIELDS + CRC]!;
  }

  shift(piece: number): number {
    return this.shifts[piece]!;
  }

  /** Appends `piece` of `from` (another variant's), now at `offset`. */
  addCopy(from: PieceTable, piece: number, offset: number): void {
    this.add(from.key(piece), offset, from.compressed(piece), from.length(piece), from.crc(piece), from.shift(piece));
  }

  /** The number of a piece with `key` (any one, when several have it: their bytes are the same), or -1. */
  find(key: number): number {
    const slots = (this.slots ??= this.keyTable());
    const mask = slots.length - 1;
    // A key is a hash already: its low 32 bits are as good a slot as any.
    for (let slot = (key >>> 0) & mask; ; slot = (slot + 1) & mask) {
      const piece = slots[slot]!;
      if (piece === EMPTY || this.records[piece * RECORD_FIELDS + KEY] === key) return piece;
    }
  }

  /** The file's records: RECORD_BYTES per piece, little-endian. */
  recordBytes(): Buffer {
    const bytes = Buffer.from(this.records.buffer, this.records.byteOffset, this.count * RECORD_BYTES);
    return LITTLE_ENDIAN ? bytes : Buffer.from(bytes).swap64();
  }

  /** A table of the pieces in `records` (a file's, little-endian), undefined when they are not whole records. */
  static fromRecords(records: Uint8Array): PieceTable | undefined {
    if (records.length % RECORD_BYTES !== 0) return undefined; // cut short
    const table = new PieceTable(records.length / RECORD_BYTES);
    const bytes = new Uint8Array(table.records.buffer);
    bytes.set(records);
    if (!LITTLE_ENDIAN) Buffer.from(bytes.buffer).swap64();
    table.count = records.length / RECORD_BYTES;
    for (let piece = 0; piece < table.count; piece++) table.shifts[piece] = lengthShift(table.length(piece));
    return table;
  }

  private grow(): void {
    const records = new Float64Array(this.records.length * 2);
    records.set(this.records);
    const shifts = new Uint32Array(this.shifts.length * 2);
    shifts.set(this.shifts);
    this.records = records;
    this.shifts = shifts;
  }

  /** Slots for every piece's number, at most half of them used. */
  private keyTable(): Int32Array {
    let size = 2;
    while (size < this.count * 2) size *= 2;
    const slots = this.spareSlots?.length === size ? this.spareSlots.fill(EMPTY) : new Int32Array(size).fill(EMPTY);
    this.spareSlots = undefined;
    const mask = size - 1;
    for (let piece = 0; piece < this.count; piece++) {
      let slot = (this.key(piece) >>> 0) & mask;
      while (slots[slot] !== EMPTY) slot = (slot + 1) & mask;
      slots[slot] = piece;
    }
    return slots;
  }
}

export interface PieceIndex {
  /** The last variant's file, exactly as the index describes it. */
  file: string;
  pieces: PieceTable;
  /** Which members its pieces hold, when this process cut them (not in the file). */
  cut?: PieceCut;
}

/** The members of a list that each piece of a variant holds. */
export interface PieceCut {
  /** The list's number among those this process made (ListOrder.made). */
  list: number;
  /** Each piece's first member, in list order; the list's member count last. */
  starts: Int32Array;
}

/**
 * The index this process wrote last, as it wrote it: a long-lived process (the watcher) takes it
 * from here, while the file is still that one, rather than reading it every cycle.
 */
let written: { indexPath: string; indexStamp: string | undefined; header: string; pieces: PieceTable; cut: PieceCut } | undefined;

/**
 * The table of the index before the one written last, which no build reads any longer: the next
 * build's table is made in its memory. A watcher's cycle lists tens of thousands of pieces, and a
 * table made anew each cycle faulted every page of it in again.
 */
let spare: PieceTable | undefined;

/** An empty table for at least `capacity` pieces, in the spare table's memory when it is large enough. */
export function emptyPieceTable(capacity: number): PieceTable {
  const table = spare !== undefined && spare.capacity >= capacity ? spare : new PieceTable(capacity);
  spare = undefined;
  table.clear();
  return table;
}

/**
 * The last build's pieces of the variant at `variantPath`, when its file is still the one it wrote and the index was made
 * for that file with `settings`. Undefined otherwise (first build, a damaged or foreign index).
 */
export function readPieceIndex(tx: OutputTransaction, variantPath: string, settings: string): PieceIndex | undefined {
  const indexPath = join(tx.outDir, CREATORS_GZIP_INDEX_FILE);
  // A run killed while writing the index leaves its temporary file; this build writes its own.
  rmSync(`${indexPath}.tmp`, { force: true });
  const last = tx.intactPreviousFile(variantPath);
  if (last === undefined) return undefined;
  const header = `${settings}\t${last.stamp}`;
  if (written?.indexPath === indexPath && written.header === header && written.indexStamp === fileStamp(indexPath))
    return { file: last.file, pieces: written.pieces, cut: written.cut };
  const pieces = readIndexFile(indexPath, header);
  return pieces === undefined ? undefined : { file: last.file, pieces };
}

/**
 * The pieces the index file at `indexPath` lists, in variant order, when its header is `header`
 * (whatever it is without one: for a look at an index, not for using its pieces).
 */
export function readIndexFile(indexPath: string, header?: string): PieceTable | undefined {
  let file: Buffer;
  try {
    file = readFileSync(indexPath);
  } catch {
    return undefined;
  }
  const headerEnd = file.indexOf(0x0a);
  if (headerEnd < 0 || (header !== undefined && file.toString('latin1', 0, headerEnd) !== header)) return undefined;
  return PieceTable.fromRecords(file.subarray(headerEnd + 1));
}

/**
 * Writes the index of the variant whose file has `stamp` (none: nothing is written), pieces cut with
 * `settings` out of the members `cut` says, which are kept in memory for this process's next build.
 */
export function writePieceIndex(outDir: string, stamp: string | undefined, settings: string, pieces: PieceTable, cut: PieceCut): void {
  spare = written?.pieces ?? spare;
  written = undefined;
  if (stamp === undefined) return;
  const indexPath = join(outDir, CREATORS_GZIP_INDEX_FILE);
  const header = `${settings}\t${stamp}`;
  replaceFileWith(outDir, indexPath, Buffer.concat([Buffer.from(`${header}\n`, 'latin1'), pieces.recordBytes()]));
  written = { indexPath, indexStamp: fileStamp(indexPath), header, pieces, cut };
}
