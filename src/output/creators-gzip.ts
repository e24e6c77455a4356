/**
 * The creators list's gzip variant: the list's exact bytes as one gzip member, written in the same
 * transaction as the list, for hosts to send to clients that accept gzip (CDNs do not compress a
 * document this large themselves).
 *
 * Kept cheap to refresh: the members are cut into pieces of about PIECE_MEMBERS members each, and a
 * piece whose members (and the few members before it, its dictionary) did not change is copied
 * compressed from the last variant instead of being deflated again (gzip-member.ts). Piece
 * boundaries fall where a member's name (a shard's part: its data) hashes to one, so a member added
 * or removed moves no other boundary. Where each piece sits in the variant is kept beside the
 * manifest (CREATORS_GZIP_INDEX_FILE), tied to the variant file it describes by that file's stamp.
 * When many pieces must be deflated, a worker thread deflates some of them (deflate-pool.ts), from
 * as soon as the list's writing begins when one was started ahead of it (BegunVariant).
 */
import { fstatSync } from 'node:fs';
import { FINGERPRINT_LENGTH, fnv1a } from '../core/hash.js';
import { join } from 'node:path';
import { CREATORS_GZIP_INDEX_FILE, gzipVariantPath } from '../core/layout.js';
import type { BufferedFileWriter } from './file-writer.js';
import type { Column } from './list-order.js';
import { crc32, crc32Append, deflatePiece, GZIP_HEADER, gzipTrailer, lengthShift, WINDOW_BYTES } from './gzip-member.js';
import {
  emptyPieceTable,
  readIndexFile,
  readPieceIndex,
  writePieceIndex,
  type PieceCut,
  type PieceIndex,
  type PieceTable,
} from './gzip-index.js';
import {
  pieceDeflater,
  SHARE_DEFLATE_FROM,
  type DeflatedPiece,
  type DeflateOptions,
  type PieceDeflater,
  type PieceRanges,
} from './deflate-pool.js';
import { releaseFreedNow } from '../core/memory.js';
import { PositionedReader } from './positioned-reader.js';
import type { OutputTransaction } from './tree.js';

/**
 * Members per piece, on average (a boundary where a name's hash is 0 modulo this). Smaller pieces
 * re-deflate less of the list when a few members change; each piece also compresses a little worse.
 * BENCHMARKS.md ("The creators list, compressed") measures the trade.
 */
const PIECE_MEMBERS = 16;
/** A piece ends after this many members whatever the names: bounds a piece's size. */
const MAX_PIECE_MEMBERS = 4 * PIECE_MEMBERS;
/** The members before a piece that are its dictionary: most of what deflate gains from a long window. */
const DICTIONARY_MEMBERS = 4;

/** The settings the pieces were cut and keyed with: an index made with others is not used. */
export const PIECE_SETTINGS = `mean ${PIECE_MEMBERS} max ${MAX_PIECE_MEMBERS} dictionary ${DICTIONARY_MEMBERS} key murmur53 lanes`;
/**
 * The settings of a shard's part: its first piece has no dictionary, and its boundaries are drawn
 * from the members' data hashes (`pieceMarks`).
 */
const PART_PIECE_SETTINGS = `${PIECE_SETTINGS} first alone, ends by data`;

/** The list as its members lie in its file, in list order. */
export interface ListLayout {
  /** Bytes before the array's "[". */
  headLength: number;
  names: Column<string>;
  /** Each member's data hash, FINGERPRINT_LENGTH bytes, one after the other. */
  hashes: Buffer;
  lengths: ArrayLike<number>;
  /**
   * For a whole list, each member's piece mark where the last list knew it (PIECE_END, NOT_END;
   * UNMARKED elsewhere): completed here, in place, so the next list can take its members' marks
   * from this one (ListOrder.pieceMarks).
   */
  pieceMarks?: Uint8Array;
  /**
   * The list is a shard's part of a list joined in the bucket (publish/shards/part.ts): its first piece
   * is deflated without the head as its dictionary, so the pieces decode after any other bytes.
   */
  partOfJoined: boolean;
  /** This list's number among those this process made (ListOrder.made). */
  made: number;
  /**
   * The runs of members carried over unchanged from the last list (creators.ts carriedRuns: triples
   * of position, index in the last list, length), and that list's number, when this process made it.
   */
  carried?: { from: number; runs: Int32Array };
}

/**
 * What one variant cost: pieces in all, those copied from the last variant (of which those found by
 * the list's carried runs, without hashing their members), and those deflated on a worker.
 */
export interface GzipPieces {
  pieces: number;
  reused: number;
  byCarriedRuns: number;
  onWorker: number;
}

/**
 * A variant begun: the last variant's pieces, the plan, the list file open for this thread's reads
 * and the pieces to deflate under way. Begun while the list is written (`whileWritten`) when a
 * worker started ahead can deflate as the list's bytes reach the file; else once it is written.
 * Begun only after the list, the deflating had this thread wait for the worker, or do it itself,
 * while the worker had been idle through the list's writing.
 */
export class BegunVariant {
  private constructor(
    readonly last: PieceIndex | undefined,
    readonly plan: PiecePlan,
    readonly list: PositionedReader,
    readonly deflater: PieceDeflater,
  ) {}

  /**
   * Begins the variant of the list being written into `sink`, when a worker started ahead can
   * deflate as it is written (else undefined: it is begun once the list is written, `afterList`).
   */
  static whileWritten(
    tx: OutputTransaction,
    listPath: string,
    sink: BufferedFileWriter,
    layout: ListLayout,
    deflating: DeflateOptions,
  ): BegunVariant | undefined {
    if (deflating.ahead === undefined) return undefined;
    const begun = BegunVariant.of(lastPieces(tx, listPath, layout), sink.path, layout, deflating, true);
    sink.onWrittenOut((bytes) => begun.deflater.fileHolds(bytes));
    return begun;
  }

  /** Begins the variant of the list written at `listFile`, `last` its last variant's pieces (lastPieces). */
  static afterList(last: PieceIndex | undefined, listFile: string, layout: ListLayout, deflating: DeflateOptions): BegunVariant {
    return BegunVariant.of(last, listFile, layout, deflating, false);
  }

  private static of(
    last: PieceIndex | undefined,
    listFile: string,
    layout: ListLayout,
    deflating: DeflateOptions,
    whileWritten: boolean,
  ): BegunVariant {
    const plan = planPieces(layout, last);
    const list = new PositionedReader(listFile, false);
    try {
      return new BegunVariant(last, plan, list, pieceDeflater(list, listFile, plan.ranges, deflating, whileWritten));
    } catch (error) {
      list.close();
      throw error;
    }
  }

  /** Ends the deflating (when not ended yet) and closes the list. */
  end(): void {
    try {
      this.deflater.close();
    } finally {
      this.list.close();
    }
  }
}

/**
 * The last variant's pieces, read before this build stages a variant of its own (the published
 * variant is the last one only until then).
 */
const lastPieces = (tx: OutputTransaction, listPath: string, layout: ListLayout): PieceIndex | undefined =>
  readPieceIndex(tx, gzipVariantPath(listPath), pieceSettings(layout));

/** The settings a list's variant is cut and keyed with. */
const pieceSettings = (layout: ListLayout): string => (layout.partOfJoined ? PART_PIECE_SETTINGS : PIECE_SETTINGS);

/**
 * Stages the variant whenever the list is (`listRewritten`: its envelope's meta may differ even when
 * its members do not) or the last build left none; after the commit, records where its pieces are
 * for the next build. The pieces to deflate are shared between up to `deflating.threads` threads
 * (deflate-pool.ts), with the worker started `ahead` when there is one; `begun`, when the variant
 * was begun as the list was written.
 */
export function stageCreatorsGzip(
  tx: OutputTransaction,
  list: { path: string; hash: string; rewritten: boolean },
  layout: ListLayout,
  deflating: DeflateOptions,
  begun?: BegunVariant,
): GzipPieces | undefined {
  const listPath = list.path;
  const variantPath = gzipVariantPath(listPath);
  let unused = begun;
  let next: { pieces: PieceTable; cut: PieceCut } | undefined;
  let counts: GzipPieces | undefined;
  let staged: boolean;
  try {
    const last = begun === undefined ? lastPieces(tx, listPath, layout) : undefined;
    // A watcher writes the variant into the memory of the one it replaced last cycle (held-files.ts).
    tx.holdWhenReplaced(variantPath);
    const write = (sink: BufferedFileWriter) => {
      unused = undefined; // assemble ends it
      const start = begun ?? BegunVariant.afterList(last, tx.fileToPublish(listPath), layout, deflating);
      const { written, cut, ...cost } = assemble(sink, layout, start);
      next = { pieces: written, cut };
      counts = cost;
    };
    staged = tx.streamedFile(variantPath, list.hash, write, list.rewritten);
  } finally {
    unused?.end();
  }
  if (counts !== undefined && counts.pieces - counts.reused >= SHARE_DEFLATE_FROM) releaseFreedNow();
  const index = next;
  if (staged && index !== undefined)
    tx.onCommitted((stampOf) => writePieceIndex(tx.outDir, stampOf(variantPath), pieceSettings(layout), index.pieces, index.cut));
  return counts;
}

/** About how many pieces the variant of a list of `members` is cut into. */
export const piecesAbout = (members: number): number => Math.floor(members / PIECE_MEMBERS);

/** A member's piece mark: it ends a piece by its content, it does not, or that is not known yet. */
const NOT_END = 0,
  PIECE_END = 1;
export const UNMARKED = 2;

/** Each base64url character's 6 bits (core/hash.ts fingerprints are base64url text). */
const BASE64URL_BITS = new Uint8Array(128);
for (const [bits, char] of [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'].entries())
  BASE64URL_BITS[char.charCodeAt(0)] = bits;

/**
 * Each member's piece mark. A whole list's members end pieces by their name, as the variant has
 * always been cut: the marks the last list knew are kept, and only the others' names are hashed
 * (the names of a million members lie all over the heap, and reading each one every cycle was
 * most of planning the pieces). A shard's part ends them by the first 6 bits of each member's data
 * hash, read from the list's hash buffer: a shard's members all share their name's hash modulo the
 * shard count. A member whose data changes moves a boundary about one time in eight, and its piece
 * is deflated again anyway.
 */
function pieceMarks(layout: ListLayout): Uint8Array {
  const count = layout.names.length;
  if (layout.partOfJoined) {
    const marks = new Uint8Array(count);
    const { hashes } = layout;
    for (let i = 0; i < count; i++)
      marks[i] = BASE64URL_BITS[hashes[i * FINGERPRINT_LENGTH]! & 0x7f]! % PIECE_MEMBERS === 0 ? PIECE_END : NOT_END;
    return marks;
  }
  const marks = layout.pieceMarks ?? new Uint8Array(count).fill(UNMARKED);
  const { names } = layout;
  // Where pieces end depends on the names alone.
  for (let i = 0; i < count; i++) if (marks[i] === UNMARKED) marks[i] = fnv1a(names.at(i)!) % PIECE_MEMBERS === 0 ? PIECE_END : NOT_END;
  return marks;
}

/**
 * A piece's key: a 53-bit hash of its members' data hashes and its dictionary members' (which
 * decide its compressed bytes), and of where the piece starts among them, taken from `words`
 * (hashWords) by two MurmurHash3 lanes, each over every other 32-bit word, their ends mixed into
 * each other as MurmurHash3's 128-bit form does. A hash object per piece cost more than the
 * deflating a quiet cycle does, a byte at a time most of planning one, and both lanes over every
 * word half again as much.
 */
function pieceKey(words: Int32Array, from: number, start: number, end: number): number {
  let low = 0x811c9dc5 ^ (start - from);
  let high = 0x050c5d1f ^ (start === 0 ? 0x5e : 0x7c);
  for (let at = from * WORDS_PER_HASH, stop = end * WORDS_PER_HASH; at < stop; at += 2) {
    let a = Math.imul(words[at]!, 0xcc9e2d51);
    a = Math.imul((a << 15) | (a >>> 17), 0x1b873593);
    low ^= a;
    low = (Math.imul((low << 19) | (low >>> 13), 5) + 0x561ccd1b) | 0;
    let b = Math.imul(words[at + 1]!, 0x1b873593);
    b = Math.imul((b << 16) | (b >>> 16), 0xcc9e2d51);
    high ^= b;
    high = (Math.imul((high << 17) | (high >>> 15), 5) + 0x0bcaa747) | 0;
  }
  low = (low + high) | 0;
  high = (high + low) | 0;
  low = finalMix(low);
  high = finalMix(high);
  low = (low + high) | 0;
  high = (high + low) | 0;
  // 53 bits, a number held exactly: a string key for each of tens of thousands of pieces a cycle
  // cost more than hashing their members.
  return (high >>> 11) * 2 ** 32 + (low >>> 0);
}

/** MurmurHash3's finalizer: every input bit moves about half the output bits. */
function finalMix(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/** A data hash's 32-bit words: a fingerprint is an even number of them, a word for each lane. */
const WORDS_PER_HASH = FINGERPRINT_LENGTH / 4;
if (!Number.isInteger(WORDS_PER_HASH / 2)) throw new Error(`bug: a ${FINGERPRINT_LENGTH}-byte fingerprint is not pairs of 32-bit words`);

/** The members' data hashes as 32-bit words, without a copy when the buffer starts on a word boundary. */
function hashWords(hashes: Buffer): Int32Array {
  const bytes = hashes.byteOffset % 4 === 0 ? hashes : Uint8Array.from(hashes);
  return new Int32Array(bytes.buffer, bytes.byteOffset, bytes.length >>> 2);
}

/** A piece the last variant does not hold as it is now. */
const NOT_KEPT = -1;

/**
 * The pieces in list order: each one's key, its number in the last variant when it is kept there
 * (else NOT_KEPT), and its first member. The arrays are views of PlanArrays, valid until the next plan.
 */
interface PiecePlan {
  count: number;
  keys: Float64Array;
  kept: Int32Array;
  starts: Int32Array;
  /** The ranges of the pieces not kept, to deflate (deflate-pool.ts). */
  ranges: PieceRanges;
  /** Where the array's members start in the list file (after its "["), and where they end. */
  membersStart: number;
  membersEnd: number;
  /** The pieces kept because they lie whole in a run of carried members (CarriedPieces), not hashed. */
  byCarriedRuns: number;
}

/**
 * Cuts the list into pieces and finds those the last variant holds, in one walk over the pieces:
 * a piece ends after a member marked to end one (pieceMarks), or after MAX_PIECE_MEMBERS. A piece
 * that lies whole in a run of members carried over is the last variant's piece there (CarriedPieces);
 * any other is keyed by its members' hashes and looked up.
 */
function planPieces(layout: ListLayout, last: PieceIndex | undefined): PiecePlan {
  const marks = pieceMarks(layout);
  const { lengths } = layout;
  const count = lengths.length;
  const words = hashWords(layout.hashes);
  const table = last?.pieces;
  const carried = CarriedPieces.of(layout, last, marks);
  const membersStart = layout.headLength + 1; // after the head and its "["
  const pieces = planArrays.reset(Math.ceil((count / PIECE_MEMBERS) * 1.25));
  const ranges: number[] = [];
  let membersEnd = membersStart;
  let byCarriedRuns = 0;
  // Where the next piece of the last variant is: a piece most often stands where it stood, so it is
  // looked for there before it is looked up.
  let cursor = 0;
  // Each member's first byte is the one after the last member's comma.
  for (let start = 0, startByte = membersStart; start < count;) {
    const byteStart = start === 0 ? membersStart : startByte - 1; // the comma before it
    const same = carried === undefined ? NOT_KEPT : carried.pieceAt(start);
    if (same !== NOT_KEPT) {
      pieces.push(table!.key(same), same, start);
      byCarriedRuns++;
      cursor = same + 1;
      start += carried!.members(same);
      membersEnd = byteStart + table!.length(same);
      startByte = membersEnd + 1;
      continue;
    }
    let end = start;
    let endByte = startByte;
    do endByte += lengths[end]! + 1;
    while (marks[end++] !== PIECE_END && end < count && end - start < MAX_PIECE_MEMBERS);
    const from = Math.max(0, start - DICTIONARY_MEMBERS);
    const key = pieceKey(words, from, start, end);
    const byteEnd = endByte - 1;
    const copy = table === undefined ? NOT_KEPT : cursor < table.count && table.key(cursor) === key ? cursor : table.find(key);
    const keep = copy !== NOT_KEPT && table!.length(copy) === byteEnd - byteStart;
    cursor = copy === NOT_KEPT ? cursor + 1 : copy + 1;
    pieces.push(key, keep ? copy : NOT_KEPT, start);
    if (!keep) {
      let dictionaryStart = startByte;
      for (let k = from; k < start; k++) dictionaryStart -= lengths[k]! + 1;
      if (start === 0) dictionaryStart = layout.partOfJoined ? byteStart : 0;
      ranges.push(Math.max(dictionaryStart, byteStart - WINDOW_BYTES), byteStart, byteEnd);
    }
    start = end;
    startByte = endByte;
    membersEnd = byteEnd;
  }
  return { ...pieces.views(), ranges: Float64Array.from(ranges), membersStart, membersEnd, byCarriedRuns };
}

/**
 * The plan's arrays, their memory kept from one plan to the next: a watcher's cycle plans tens of
 * thousands of pieces, and arrays of them made anew each cycle faulted every page in again, which
 * cost more than the planning.
 */
class PlanArrays {
  private count = 0;
  private keys = new Float64Array(0);
  private kept = new Int32Array(0);
  private starts = new Int32Array(0);

  /** Empties the arrays, with room for `capacity` pieces (they grow past it when needed). */
  reset(capacity: number): this {
    this.count = 0;
    if (this.keys.length < capacity) this.resize(capacity);
    return this;
  }

  push(key: number, kept: number, start: number): void {
    if (this.count === this.keys.length) this.resize(Math.max(16, this.count * 2));
    this.keys[this.count] = key;
    this.kept[this.count] = kept;
    this.starts[this.count++] = start;
  }

  views(): Pick<PiecePlan, 'count' | 'keys' | 'kept' | 'starts'> {
    const count = this.count;
    return { count, keys: this.keys.subarray(0, count), kept: this.kept.subarray(0, count), starts: this.starts.subarray(0, count) };
  }

  private resize(capacity: number): void {
    const [keys, kept, starts] = [new Float64Array(capacity), new Int32Array(capacity), new Int32Array(capacity)];
    keys.set(this.keys.subarray(0, this.count));
    kept.set(this.kept.subarray(0, this.count));
    starts.set(this.starts.subarray(0, this.count));
    [this.keys, this.kept, this.starts] = [keys, kept, starts];
  }
}

const planArrays = new PlanArrays();

/** A copy of `values` with `end` after them (PieceCut.starts: the plan's arrays are written again by the next plan). */
function withEnd(values: Int32Array, end: number): Int32Array {
  const copy = new Int32Array(values.length + 1);
  copy.set(values);
  copy[values.length] = end;
  return copy;
}

/**
 * The last variant's pieces that a list's runs of carried members hold unchanged. The last variant
 * was cut from the very list those members are carried from (PieceCut.list is
 * ListLayout.carried.from), so a piece of it that starts in a run, and whose members and dictionary
 * members all lie in that run, holds the same members' bytes after the same dictionary, at the same
 * distance from the list's start when that is under the dictionary's length: its compressed bytes
 * and key are the last ones. Its end falls where it fell, as marks are a member's own; where the
 * last list's end ended it, this list must end there too. Found by walking the runs and the last
 * pieces' starts side by side, a step per piece: hashing every carried member's data hash again was
 * most of a quiet cycle's work on the variant.
 */
class CarriedPieces {
  private run = 0;
  private piece = 0;

  private constructor(
    private readonly runs: Int32Array,
    private readonly starts: Int32Array,
    private readonly marks: Uint8Array,
  ) {}

  static of(layout: ListLayout, last: PieceIndex | undefined, marks: Uint8Array): CarriedPieces | undefined {
    const cut = last?.cut;
    const carried = layout.carried;
    if (cut === undefined || carried === undefined || cut.list !== carried.from) return undefined;
    return new CarriedPieces(carried.runs, cut.starts, marks);
  }

  /** The members the last variant's piece `piece` holds. */
  members(piece: number): number {
    return this.starts[piece + 1]! - this.starts[piece]!;
  }

  /** The last variant's piece that the piece starting at member `start` is, or NOT_KEPT. Calls come in list order. */
  pieceAt(start: number): number {
    const { runs, starts } = this;
    while (this.run < runs.length && runs[this.run]! + runs[this.run + 2]! <= start) this.run += 3;
    if (this.run === runs.length || start < runs[this.run]!) return NOT_KEPT;
    const runStart = runs[this.run]!;
    const first = runs[this.run + 1]! + start - runStart; // the member's place in the last list
    const pieces = starts.length - 1;
    while (this.piece < pieces && starts[this.piece]! < first) this.piece++;
    if (this.piece === pieces || starts[this.piece] !== first) return NOT_KEPT;
    const end = start + this.members(this.piece);
    const from = Math.max(0, start - DICTIONARY_MEMBERS);
    const lastFrom = Math.max(0, first - DICTIONARY_MEMBERS);
    if (from < runStart || end > runStart + runs[this.run + 2]! || start - from !== first - lastFrom) return NOT_KEPT;
    const endsHere = this.marks[end - 1] === PIECE_END || end - start === MAX_PIECE_MEMBERS || end === this.marks.length;
    return endsHere ? this.piece : NOT_KEPT;
  }
}

/**
 * Writes the variant `start` began into `sink`: pieces kept copied from the last variant, the others
 * taken from its deflater; returns its member pieces, where each now sits. Ends `start`.
 */
function assemble(sink: BufferedFileWriter, layout: ListLayout, start: BegunVariant): GzipPieces & { written: PieceTable; cut: PieceCut } {
  const { last, plan, list, deflater } = start;
  const written = emptyPieceTable(plan.count);
  let lastFile: PositionedReader | undefined;
  let reused = 0;
  let onWorker: number;
  try {
    lastFile = last === undefined ? undefined : new PositionedReader(last.file, false);
    const out = new MemberWriter(sink);
    out.deflate(list.read(0, plan.membersStart));
    deflater.fileHolds(Infinity);
    try {
      for (let p = 0; p < plan.count; p++) {
        const kept = plan.kept[p]!;
        if (kept === NOT_KEPT) {
          const piece = deflater.next();
          const { offset, shift } = out.put(piece);
          written.add(plan.keys[p]!, offset, piece.compressed.length, piece.length, piece.crc, shift);
        } else {
          written.addCopy(last!.pieces, kept, out.copy(lastFile!, last!.pieces, kept));
          reused++;
        }
      }
    } finally {
      onWorker = deflater.close();
    }
    const tailStart = plan.membersEnd;
    const size = fstatSync(list.fd).size;
    out.deflate(list.read(tailStart, size - tailStart), true);
    out.finish(size);
  } finally {
    start.end();
    lastFile?.close();
  }
  const cut = { list: layout.made, starts: withEnd(plan.starts, layout.lengths.length) };
  return { written, cut, pieces: written.count, reused, byCarriedRuns: plan.byCarriedRuns, onWorker };
}

/**
 * Writes a gzip member piece by piece: header, pieces, trailer, with the CRC-32 carried along.
 * Pieces copied from the last variant that lay side by side there are copied as one range: most of
 * a variant is such runs, and a read and a write per piece cost more than the bytes.
 */
class MemberWriter {
  private crc = 0;
  private length = 0;
  /** The run of copied pieces not yet written: where it starts in the last variant, and its bytes. */
  private run: { from: PositionedReader; offset: number; bytes: number } | undefined;

  constructor(private readonly sink: BufferedFileWriter) {
    sink.write(GZIP_HEADER);
  }

  /** Deflates bytes of the list outside its members (the head, or the tail, `last`). */
  deflate(data: Buffer, last = false): void {
    this.put({ compressed: deflatePiece(data, undefined, last), crc: crc32(data), length: data.length });
  }

  /** Writes a piece deflated elsewhere; returns where it went and its length's shift. */
  put({ compressed, crc, length }: DeflatedPiece): { offset: number; shift: number } {
    this.copyRun();
    const offset = this.sink.bytesWritten;
    this.sink.write(compressed);
    const shift = lengthShift(length);
    this.add(crc, length, shift);
    return { offset, shift };
  }

  /** Copies `piece` of `pieces`, compressed before in the last variant `from`; returns its offset in this one. */
  copy(from: PositionedReader, pieces: PieceTable, piece: number): number {
    const start = pieces.offset(piece);
    const compressed = pieces.compressed(piece);
    const run = this.run;
    if (run !== undefined && (run.from !== from || run.offset + run.bytes !== start)) this.copyRun();
    const offset = this.sink.bytesWritten + (this.run?.bytes ?? 0);
    if (this.run === undefined) this.run = { from, offset: start, bytes: compressed };
    else this.run.bytes += compressed;
    this.add(pieces.crc(piece), pieces.length(piece), pieces.shift(piece));
    return offset;
  }

  /** The trailer; `expected` is the list's size, which the pieces must add up to. */
  finish(expected: number): void {
    this.copyRun();
    if (this.length !== expected) throw new Error(`bug: the gzip variant holds ${this.length} bytes of a ${expected}-byte list`);
    this.sink.write(gzipTrailer(this.crc, this.length));
  }

  private copyRun(): void {
    const run = this.run;
    if (run === undefined) return;
    this.run = undefined;
    run.from.copy(run.offset, run.bytes, this.sink);
  }

  private add(crc: number, length: number, shift: number): void {
    this.crc = this.length === 0 ? crc : crc32Append(this.crc, crc, shift);
    this.length += length;
  }
}

/**
 * The member pieces of a shard's variant (one built with `partOfJoined`), in order, as its index
 * describes them; undefined when the index is not of the variant file with `variantStamp`.
 */
export function joinablePieces(outDir: string, variantStamp: string): PieceTable | undefined {
  return readIndexFile(join(outDir, CREATORS_GZIP_INDEX_FILE), `${PART_PIECE_SETTINGS}\t${variantStamp}`);
}
