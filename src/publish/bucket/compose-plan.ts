/**
 * How to join objects in the bucket into one, server-side: the parts of a multipart upload, each
 * either copied from a byte range of an object already there (`UploadPartCopy`: a request, no
 * transfer) or uploaded from bytes this process holds or reads first. Pure: compose.ts carries it out.
 *
 * The stores' rules for the parts of one upload:
 * - S3 (and MinIO, moto): every part but the last at least 5 MiB, none over 5 GiB, at most 10,000.
 * - R2 adds, in its documentation: every part but the last the same size, and the last no larger.
 *
 * `planParts` cuts the joined bytes into parts that meet the rules it is given. A part that lies in
 * one source object is copied; only a part that would span sources, or is a small source that no
 * rule lets stand alone, is read and uploaded. Sources laid out in multiples of the part size (R2)
 * or each at least the minimum (S3) are joined by copies alone.
 */

/** A source of the joined object: a byte range of an object in the bucket, or bytes held here. */
export type ComposeSource = { readonly key: string; readonly start: number; readonly end: number } | { readonly bytes: Uint8Array };

export interface PartRules {
  /** Least bytes of every part but the last. */
  minPartBytes: number;
  /** Most bytes of a part. */
  maxPartBytes: number;
  /** Most parts of one upload. */
  maxParts: number;
  /** Every part but the last this size exactly, and the last no larger (R2); undefined: sizes vary. */
  fixedPartBytes: number | undefined;
}

export const S3_PART_RULES: PartRules = Object.freeze({
  minPartBytes: 5 * 2 ** 20,
  maxPartBytes: 5 * 2 ** 30,
  maxParts: 10_000,
  fixedPartBytes: undefined,
});

/** R2's rules with parts of `partBytes` each (at least S3's minimum). */
export function r2PartRules(partBytes: number): PartRules {
  if (partBytes < S3_PART_RULES.minPartBytes || partBytes > S3_PART_RULES.maxPartBytes) {
    throw new Error(`bug: an R2 part of ${partBytes} bytes is outside 5 MiB..5 GiB`);
  }
  return Object.freeze({ ...S3_PART_RULES, fixedPartBytes: partBytes });
}

/** One piece of a part: a byte range of an object, or bytes held here. */
export type PartPiece = { readonly key: string; readonly start: number; readonly end: number } | { readonly bytes: Uint8Array };

/** A part: copied whole from one object's range, or uploaded from its pieces (objects' ranges read first). */
export type PlannedPart =
  { readonly copy: { readonly key: string; readonly start: number; readonly end: number } } | { readonly upload: readonly PartPiece[] };

export const sourceBytes = (source: ComposeSource): number => ('bytes' in source ? source.bytes.length : source.end - source.start);

/** The parts that join `sources` in order under `rules`. An empty composition has one empty part. */
export function planParts(sources: readonly ComposeSource[], rules: PartRules): PlannedPart[] {
  const pieces = sources.filter((source) => sourceBytes(source) > 0);
  const parts = rules.fixedPartBytes === undefined ? variableParts(pieces, rules) : fixedParts(pieces, rules.fixedPartBytes);
  if (parts.length > rules.maxParts) {
    throw new Error(`a composition of ${parts.length} parts is more than the ${rules.maxParts} one upload may have`);
  }
  return parts.length === 0 ? [{ upload: [] }] : parts;
}

/**
 * S3: each source object is copied whole (in ranges of at most the maximum) where it is at least the
 * minimum; smaller ones, and bytes held here, are gathered into an uploaded part with their
 * neighbours until it reaches the minimum, borrowing the head of the next object when needed.
 */
function variableParts(sources: readonly ComposeSource[], rules: PartRules): PlannedPart[] {
  const parts: PlannedPart[] = [];
  let gathered: PartPiece[] = [];
  let gatheredBytes = 0;
  const gather = (piece: PartPiece) => {
    gathered.push(piece);
    gatheredBytes += sourceBytes(piece);
  };
  const flush = () => {
    if (gathered.length > 0) parts.push({ upload: gathered });
    gathered = [];
    gatheredBytes = 0;
  };
  for (const source of sources) {
    if ('bytes' in source || sourceBytes(source) < rules.minPartBytes) {
      gather(source);
      if (gatheredBytes >= rules.minPartBytes) flush();
      continue;
    }
    let { start } = source;
    if (gatheredBytes > 0) {
      // Filled up to the minimum from this object's head; the rest is copied when it still can be.
      const borrowed = Math.min(rules.minPartBytes - gatheredBytes, source.end - start);
      const rest = source.end - start - borrowed;
      const take = rest >= rules.minPartBytes ? borrowed : source.end - start;
      gather({ key: source.key, start, end: start + take });
      start += take;
      flush();
    }
    for (; start < source.end;) {
      const end = copyEnd(start, source.end, rules);
      parts.push({ copy: { key: source.key, start, end } });
      start = end;
    }
  }
  flush();
  return parts;
}

/**
 * Where a copy from `start` ends: at most the maximum, and never leaving a tail below the minimum
 * (what is left past one maximum then goes in two halves, each far above the minimum).
 */
function copyEnd(start: number, end: number, rules: PartRules): number {
  if (end - start <= rules.maxPartBytes) return end;
  const next = start + rules.maxPartBytes;
  return end - next < rules.minPartBytes ? start + Math.ceil((end - start) / 2) : next;
}

/**
 * R2: the joined bytes in windows of `size`: a window inside one object is copied, one that spans
 * sources (or holds bytes held here) is uploaded.
 */
function fixedParts(sources: readonly ComposeSource[], size: number): PlannedPart[] {
  const parts: PlannedPart[] = [];
  let window: PartPiece[] = [];
  let filled = 0;
  for (const source of sources) {
    const total = sourceBytes(source);
    for (let at = 0; at < total;) {
      const take = Math.min(size - filled, total - at);
      window.push(
        'bytes' in source
          ? { bytes: source.bytes.subarray(at, at + take) }
          : { key: source.key, start: source.start + at, end: source.start + at + take },
      );
      filled += take;
      at += take;
      if (filled === size) {
        parts.push(partOf(window));
        window = [];
        filled = 0;
      }
    }
  }
  if (window.length > 0) parts.push(partOf(window));
  return parts;
}

const partOf = (pieces: PartPiece[]): PlannedPart =>
  pieces.length === 1 && !('bytes' in pieces[0]!) ? { copy: pieces[0]! as Extract<PartPiece, { key: string }> } : { upload: pieces };
