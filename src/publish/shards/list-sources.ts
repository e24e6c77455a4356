/**
 * The joined creators list as sources of two multipart uploads (join.ts): each shard's part as a
 * server-side copy of the version its index names, and the tail uploaded. For the gzip variant, the
 * parts' CRC-32s are combined (crc32_combine) with the leading commas' and the tail's, so the
 * trailer is made without reading a byte of the parts.
 */
import { shardLayoutError } from '../../core/errors.js';
import { crc32, crc32Combine, deflatePiece, gzipTrailer } from '../../output/gzip-member.js';
import { API_VERSION, envelopeTail } from '../../render/documents.js';
import type { ObjectRange } from '../bucket/compose.js';
import { objectKey } from '../bucket/target.js';
import { LEAD_CRC, type PartIndex } from './part.js';

export type Source = ObjectRange | { bytes: Uint8Array };

/** Both objects' sources in shard order, and their tails. */
export function listSources(prefix: string, where: string, indexes: readonly PartIndex[]): { identity: Source[]; gzip: Source[] } {
  const key = (path: string) => objectKey(prefix, path);
  const identity: Source[] = [];
  const gzip: Source[] = [];
  let crc = 0;
  let length = 0;
  let members = false;
  for (const [shard, index] of indexes.entries()) {
    if (shard > 0 && index.memberBytes === 0) continue;
    // The first members of the array take no comma before them.
    const lead = shard > 0 && members;
    const skip = (part: PartIndex['identity']) => (shard === 0 || lead ? 0 : part.lead);
    // Each range names the version its index describes: a part replaced since is never joined.
    identity.push({ key: key(index.identity.key), start: skip(index.identity), end: index.identity.bytes, etag: index.identity.etag });
    gzip.push({ key: key(index.gzip.key), start: skip(index.gzip), end: index.gzip.bytes, etag: index.gzip.etag });
    if (lead) [crc, length] = [crc32Combine(crc, LEAD_CRC, 1), length + 1];
    [crc, length] = [length === 0 ? index.crc : crc32Combine(crc, index.crc, index.length), length + index.length];
    members ||= index.memberBytes > 0;
  }
  if (indexes[0]!.identity.bytes === 0) throw shardLayoutError(`${where}: shard 0's part has no envelope head`, 'publish shard 0 again');
  const tail = Buffer.from(`]${envelopeTail(joinedMeta(indexes))}`);
  [crc, length] = [crc32Combine(crc, crc32(tail), tail.length), length + tail.length];
  identity.push({ bytes: tail });
  gzip.push({ bytes: Buffer.concat([deflatePiece(tail, undefined, true), gzipTrailer(crc, length)]) });
  return { identity, gzip };
}

function joinedMeta(indexes: readonly PartIndex[]) {
  const timestamp = indexes
    .map((index) => index.meta.timestamp)
    .sort()
    .at(-1)!;
  const executionTimeMs = Math.max(...indexes.map((index) => index.meta.executionTimeMs));
  return { timestamp, version: API_VERSION, executionTimeMs } as const;
}
