/**
 * Where each piece of the last gzip variant of the creators list sits in it (creators-gzip.ts): one
 * line per piece under a header naming the piece settings and the stamp of the variant file it
 * describes. It is only a shortcut: when it does not match the variant on disk, every piece is
 * deflated again.
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { CREATORS_GZIP_INDEX_FILE } from '../core/layout.js';
import { replaceFileWith } from './folders.js';
import { fileStamp } from './manifest.js';
import type { OutputTransaction } from './tree.js';

export interface Piece {
  /** Its members' and dictionary's hashes, digested (creators-gzip.ts pieceKey). */
  key: string;
  /** Where its compressed bytes start in the variant, and how many there are. */
  offset: number;
  compressed: number;
  /** Its bytes of the list, and their CRC-32. */
  length: number;
  crc: number;
  /** Whether this build copied it from the last variant. */
  reused: boolean;
}

export interface PieceIndex {
  /** The last variant's file, exactly as the index describes it. */
  file: string;
  pieces: Map<string, Piece>;
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
function byKey(pieces: readonly Piece[]): Map<string, Piece> {
  const map = new Map<string, Piece>();
  for (const piece of pieces) map.set(piece.key, piece);
  return map;
}

/** The pieces the index file at `indexPath` lists, in variant order, when its header is `header`. */
export function readIndexFile(indexPath: string, header: string): Piece[] | undefined {
  let text: string;
  try {
    text = readFileSync(indexPath, 'latin1');
  } catch {
    return undefined;
  }
  const lines = text.split('\n');
  if (lines[0] !== header) return undefined;
  const pieces: Piece[] = [];
  for (let i = 1; i < lines.length; i++) {
    const [key, offset, compressed, length, crc] = lines[i]!.split('\t');
    if (key === undefined || crc === undefined) continue;
    pieces.push({ key, offset: Number(offset), compressed: Number(compressed), length: Number(length), crc: Number(crc), reused: false });
  }
  return pieces;
}

/** Writes the index of the variant whose file has `stamp` (none: nothing is written), pieces cut with `settings`. */
export function writePieceIndex(outDir: string, stamp: string | undefined, settings: string, pieces: readonly Piece[]): void {
  written = undefined;
  if (stamp === undefined) return;
  const indexPath = join(outDir, CREATORS_GZIP_INDEX_FILE);
  const header = `${settings}\t${stamp}`;
  const lines = pieces.map((p) => `${p.key}\t${p.offset}\t${p.compressed}\t${p.length}\t${p.crc}\n`);
  replaceFileWith(outDir, indexPath, `${header}\n${lines.join('')}`);
  written = { indexPath, indexStamp: fileStamp(indexPath), header, pieces };
}
