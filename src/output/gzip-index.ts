/**
 * Where each piece of the last gzip variant of the creators list sits in it (creators-gzip.ts): a
 * header line naming the piece settings and the stamp of the variant file it describes, then a
 * record per piece of RECORD_FIELDS little-endian doubles (written every cycle: as text, a line per
 * piece cost a watcher's quiet cycle nearly as much as copying the variant). It is only a shortcut:
 * when it does not match the variant on disk, every piece is deflated again.
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { CREATORS_GZIP_INDEX_FILE } from '../core/layout.js';
import { replaceFileWith } from './folders.js';
import { fileStamp } from './manifest.js';
import { lengthShift } from './gzip-member.js';
import type { OutputTransaction } from './tree.js';

export interface Piece {
  /** Its members' and dictionary's hashes, digested (creators-gzip.ts pieceKey): an integer of 53 bits or fewer. */
  key: number;
  /** Where its compressed bytes start in the variant, and how many there are. */
  offset: number;
  compressed: number;
  /** Its bytes of the list, and their CRC-32. */
  length: number;
  crc: number;
  /**
   * Its length's lengthShift (gzip-member.ts), which appending its CRC takes: not in the file, made
   * once when a piece is deflated or read, then carried with the piece from cycle to cycle.
   */
  shift: number;
  /** Whether this build copied it from the last variant. */
  reused: boolean;
}

export interface PieceIndex {
  /** The last variant's file, exactly as the index describes it. */
  file: string;
  pieces: Map<number, Piece>;
}

/**
 * The index this process wrote last, as it wrote it: a long-lived process (the watcher) takes it
 * from here, while the file is still that one, rather than reading and parsing it every cycle.
 */
let written: { indexPath: string; indexStamp: string | undefined; header: string; pieces: readonly Piece[] } | undefined;

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
    return { file: last.file, pieces: byKey(written.pieces) };
  const pieces = readIndexFile(indexPath, header);
  return pieces === undefined ? undefined : { file: last.file, pieces: byKey(pieces) };
}

/** Pieces by key, set one by one: no [key, piece] pair made for each. */
function byKey(pieces: readonly Piece[]): Map<number, Piece> {
  const map = new Map<number, Piece>();
  for (const piece of pieces) map.set(piece.key, piece);
  return map;
}

/** A record's fields, in order: key, offset, compressed, length, crc. */
const RECORD_FIELDS = 5;
const RECORD_BYTES = RECORD_FIELDS * 8;

/** The pieces the index file at `indexPath` lists, in variant order, when its header is `header`. */
export function readIndexFile(indexPath: string, header: string): Piece[] | undefined {
  let file: Buffer;
  try {
    file = readFileSync(indexPath);
  } catch {
    return undefined;
  }
  const headerEnd = file.indexOf(0x0a);
  if (headerEnd < 0 || file.toString('latin1', 0, headerEnd) !== header) return undefined;
  const first = headerEnd + 1;
  if ((file.length - first) % RECORD_BYTES !== 0) return undefined; // cut short
  const pieces: Piece[] = [];
  for (let at = first; at < file.length; at += RECORD_BYTES) {
    const length = file.readDoubleLE(at + 24);
    pieces.push({
      key: file.readDoubleLE(at),
      offset: file.readDoubleLE(at + 8),
      compressed: file.readDoubleLE(at + 16),
      length,
      crc: file.readDoubleLE(at + 32),
      shift: lengthShift(length),
      reused: false,
    });
  }
  return pieces;
}

/** Writes the index of the variant whose file has `stamp` (none: nothing is written), pieces cut with `settings`. */
export function writePieceIndex(outDir: string, stamp: string | undefined, settings: string, pieces: readonly Piece[]): void {
  written = undefined;
  if (stamp === undefined) return;
  const indexPath = join(outDir, CREATORS_GZIP_INDEX_FILE);
  const header = `${settings}\t${stamp}`;
  const headerBytes = Buffer.byteLength(header, 'latin1') + 1;
  const file = Buffer.allocUnsafe(headerBytes + pieces.length * RECORD_BYTES);
  file.write(`${header}\n`, 0, 'latin1');
  let at = headerBytes;
  for (const { key, offset, compressed, length, crc } of pieces) {
    at = file.writeDoubleLE(key, at);
    at = file.writeDoubleLE(offset, at);
    at = file.writeDoubleLE(compressed, at);
    at = file.writeDoubleLE(length, at);
    at = file.writeDoubleLE(crc, at);
  }
  replaceFileWith(outDir, indexPath, file);
  written = { indexPath, indexStamp: fileStamp(indexPath), header, pieces };
}
