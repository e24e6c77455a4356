/**
 * A shard's part of the creators list, as it publishes it for the bucket to join (join.ts): its
 * members' bytes of the list and of the list's gzip variant, each one object, plus a part index
 * that says what the composer needs without reading them: sizes, the bytes to skip at the start,
 * and the CRC-32 and length of what the gzip part decodes to.
 *
 * Shard 0's part starts with the envelope's head (`{"success":true,"data":[`, and the gzip header);
 * any other shard's with a lead: a comma, and that comma deflated on its own. The composer drops the
 * lead of the first shard with members after an empty shard 0, so the array never starts with a
 * comma. The gzip part is copied from the shard's variant as it lies on disk: a shard's variant is
 * built so its member pieces decode after any bytes (output/creators-gzip.ts `partOfJoined`).
 *
 * The parts are immutable objects named by the publish that wrote them; the index names the current
 * ones, so a composition copies exactly the bytes the index describes, and a part is removed only
 * after a composition no longer needs it.
 */
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { closeSync, fstatSync, readSync } from 'node:fs';
import { outputError } from '../../core/errors.js';
import { CREATORS_FILE, CREATORS_GZIP_FILE } from '../../core/layout.js';
import { formatSlice, type Slice } from '../../core/slice.js';
import { joinablePieces } from '../../output/creators-gzip.js';
import { crc32, crc32Append, crc32Combine, deflatePiece, GZIP_HEADER } from '../../output/gzip-member.js';
import { stampOf } from '../../output/manifest.js';
import { SUCCESS_HEAD } from '../../render/documents.js';
import type { Remote } from '../bucket/client.js';
import { fileStampOf, type LocalTree } from '../plan/local.js';
import { versionOf } from '../bucket/compose.js';
import { readObject, writeObject } from '../bucket/objects.js';
import { partIndexKey, partsFolder } from '../keys.js';
import { objectKey } from '../bucket/target.js';
import type { Later } from '../bucket/later.js';
import { deleteObjects, putPieces, type BodyPiece } from '../bucket/upload.js';

/** One object of a part: its key (relative to the prefix), its size, and the bytes of lead to skip when it comes first. */
export interface StoredPart {
  key: string;
  bytes: number;
  lead: number;
  /** The version uploaded (its ETag, quoted): a join copies only that one. Absent from indexes of older versions. */
  etag?: string | undefined;
}

/** A shard's part index, `.profile-snapshot/shards/<i>-of-<n>/part`. */
export interface PartIndex {
  tool: 'profile-snapshot';
  /** `i/n`. */
  shard: string;
  /** The publish that wrote the part: its objects are named by it. */
  id: string;
  identity: StoredPart;
  gzip: StoredPart;
  /** The bytes of the shard's members (0: the shard has no active creator). */
  memberBytes: number;
  /** What the part holds past its lead (the list's bytes): CRC-32 and length. */
  crc: number;
  length: number;
  /** The meta of the shard's own list: the joined list's meta is made from every shard's. */
  meta: { timestamp: string; executionTimeMs: number };
}

const HEAD = Buffer.from(`${SUCCESS_HEAD}[`);
const LEAD = Buffer.from(',');
/** The lead's gzip form: a comma deflated alone, ending on a byte boundary. */
export const DEFLATED_LEAD = deflatePiece(LEAD, undefined, false);
export const LEAD_CRC = crc32(LEAD);
/** Where the list's meta starts in its tail, `],"meta":{...}}`. */
const META_AT = '],"meta":'.length;
/** More than the tail of any list. */
const TAIL_WINDOW = 1024;

/** The two open files a part is cut from, and what the part index will say. */
interface LocalParts {
  identity: BodyPiece[];
  gzip: BodyPiece[];
  index: Omit<PartIndex, 'tool' | 'shard' | 'id' | 'identity' | 'gzip'> & { identityLead: number; gzipLead: number };
  close(): void;
}

/** Cuts the shard's part from its tree's list and variant, checking both are the files the manifest names. */
function localParts(tree: LocalTree, shard: Slice): LocalParts {
  const list = openChecked(tree, CREATORS_FILE);
  let variant: number | undefined;
  try {
    variant = openChecked(tree, CREATORS_GZIP_FILE);
    const { tailStart, meta } = readEnvelope(tree, list);
    const memberBytes = tailStart - HEAD.length;
    const pieces = joinablePieces(tree.reader.root, fileStampOf(tree, CREATORS_GZIP_FILE) ?? '');
    const unmatched = () => notJoinable(tree, 'its gzip variant has no index of pieces that match the list');
    if (pieces === undefined) throw unmatched();
    let crc = 0;
    let length = 0;
    for (let piece = 0; piece < pieces.count; piece++) {
      crc = crc32Append(crc, pieces.crc(piece), pieces.shift(piece));
      length += pieces.length(piece);
    }
    if (length !== memberBytes) throw unmatched();
    const headEnd = GZIP_HEADER.length + deflatePiece(HEAD, undefined, false).length;
    const last = pieces.count - 1;
    const membersStart = pieces.count === 0 ? headEnd : pieces.offset(0);
    const membersEnd = pieces.count === 0 ? headEnd : pieces.offset(last) + pieces.compressed(last);
    const files = [list, variant];
    const close = () => files.forEach((fd) => closeSync(fd));
    if (shard.index === 0) {
      if (membersStart !== headEnd) throw notJoinable(tree, 'its gzip variant does not start as a list does');
      return {
        identity: [{ fd: list, start: 0, end: tailStart }],
        gzip: [{ fd: variant, start: 0, end: membersEnd }],
        index: { memberBytes, crc: crc32Combine(crc32(HEAD), crc, memberBytes), length: tailStart, meta, identityLead: 0, gzipLead: 0 },
        close,
      };
    }
    const empty = memberBytes === 0;
    return {
      identity: empty ? [] : [{ bytes: LEAD }, { fd: list, start: HEAD.length, end: tailStart }],
      gzip: empty ? [] : [{ bytes: DEFLATED_LEAD }, { fd: variant, start: membersStart, end: membersEnd }],
      index: {
        memberBytes,
        crc,
        length: memberBytes,
        meta,
        identityLead: empty ? 0 : LEAD.length,
        gzipLead: empty ? 0 : DEFLATED_LEAD.length,
      },
      close,
    };
  } catch (error) {
    closeSync(list);
    if (variant !== undefined) closeSync(variant);
    throw error;
  }
}

/** Opens a list file of the tree, as the manifest describes it. */
function openChecked(tree: LocalTree, path: string): number {
  const fd = tree.reader.open(path);
  if (fd === undefined) throw notJoinable(tree, `${path} is missing`);
  const expected = fileStampOf(tree, path);
  if (expected !== undefined && expected !== stampOf(fstatSync(fd, { bigint: true }))) {
    closeSync(fd);
    throw notJoinable(tree, `${path} was changed since the build wrote it`);
  }
  return fd;
}

/** Where the list's members end, and its meta. */
function readEnvelope(tree: LocalTree, fd: number): { tailStart: number; meta: PartIndex['meta'] } {
  const size = fstatSync(fd).size;
  const head = Buffer.alloc(HEAD.length);
  readSync(fd, head, 0, head.length, 0);
  const window = Buffer.alloc(Math.min(TAIL_WINDOW, size));
  readSync(fd, window, 0, window.length, size - window.length);
  const at = window.lastIndexOf(']');
  if (!head.equals(HEAD) || at < 0) throw notJoinable(tree, `${CREATORS_FILE} is not a list envelope`);
  const tailStart = size - window.length + at;
  const { timestamp, executionTimeMs } = JSON.parse(window.subarray(at + META_AT, window.length - 1).toString('utf8')) as PartIndex['meta'];
  return { tailStart, meta: { timestamp, executionTimeMs } };
}

const notJoinable = (tree: LocalTree, why: string) =>
  outputError(
    `${tree.outDir} cannot be published as a shard: ${why}`,
    'rebuild it (profile-snapshot build --shard i/n --full), then publish again',
  );

/**
 * Uploads the shard's part (both objects, named by the publish `id`), then its index: from then on a
 * composition joins this part. Returns the index and the bytes sent.
 */
export async function publishPart(remote: Remote, tree: LocalTree, shard: Slice, id: string): Promise<{ index: PartIndex; bytes: number }> {
  const local = localParts(tree, shard);
  try {
    const key = `${partsFolder(shard)}${id}`;
    const none = { bytes: 0, etag: undefined };
    const [identity, gzip] = await Promise.all([
      local.identity.length === 0 ? none : putPieces(remote, key, local.identity),
      local.gzip.length === 0 ? none : putPieces(remote, `${key}.gz`, local.gzip),
    ]);
    const { identityLead, gzipLead, ...described } = local.index;
    const index: PartIndex = {
      tool: 'profile-snapshot',
      shard: formatSlice(shard),
      id,
      identity: { key, bytes: identity.bytes, lead: identityLead, etag: identity.etag },
      gzip: { key: `${key}.gz`, bytes: gzip.bytes, lead: gzipLead, etag: gzip.etag },
      ...described,
    };
    await writeObject(remote, partIndexKey(shard), `${JSON.stringify(index)}\n`, 'application/json', undefined);
    return { index, bytes: identity.bytes + gzip.bytes };
  } finally {
    local.close();
  }
}

/**
 * The shard's part index, or undefined when the shard has published none, or none that can be read
 * (damaged, written by hand): the shard's next publish writes it again (`partIsWhole`).
 */
export async function readPartIndex(remote: Remote, shard: Slice): Promise<PartIndex | undefined> {
  const stored = await readObject(remote, partIndexKey(shard));
  if (stored === undefined || stored === 'unchanged') return undefined;
  let index: PartIndex | null;
  try {
    index = JSON.parse(Buffer.from(stored.bytes).toString('utf8')) as PartIndex | null;
  } catch {
    return undefined;
  }
  return index?.tool === 'profile-snapshot' && index.shard === formatSlice(shard) ? index : undefined;
}

/**
 * Whether the bucket holds the shard's part whole: its index, each object it names at the version it
 * names, and (given the tree) the index describing the tree's list. A shard heals its own part: when
 * this says no, its publish uploads the part again, whatever its record says.
 */
export async function partIsWhole(remote: Remote, shard: Slice, tree?: LocalTree): Promise<boolean> {
  const index = await readPartIndex(remote, shard);
  if (index === undefined) return false;
  if (tree !== undefined && !describesTree(index, tree, shard)) return false;
  return (await brokenObjects(remote, index)).length === 0;
}

/** The part objects an index names that are gone from the bucket, or are another version now. */
export async function brokenObjects(remote: Remote, index: PartIndex): Promise<string[]> {
  const objects = [index.identity, index.gzip].filter((part) => part.bytes > 0);
  const versions = await Promise.all(objects.map((part) => versionOf(remote, objectKey(remote.options.prefix, part.key))));
  return objects
    .filter((part, i) => versions[i] === undefined || (part.etag !== undefined && part.etag !== versions[i]))
    .map((part) => part.key);
}

function describesTree(index: PartIndex, tree: LocalTree, shard: Slice): boolean {
  const local = localParts(tree, shard);
  local.close();
  const { memberBytes, crc, length, meta } = local.index;
  return (
    index.memberBytes === memberBytes &&
    index.crc === crc &&
    index.length === length &&
    index.meta.timestamp === meta.timestamp &&
    index.meta.executionTimeMs === meta.executionTimeMs
  );
}

/** Removes the shard's part objects other than `current`'s (older parts, and any a killed publish left). */
export async function removeOldParts(remote: Remote, shard: Slice, current: PartIndex, later: Later): Promise<void> {
  const { bucket, prefix } = remote.options;
  const folder = objectKey(prefix, partsFolder(shard));
  const keep = new Set([current.identity.key, current.gzip.key]);
  const old: string[] = [];
  let token: string | undefined;
  do {
    const page = await remote.call(
      () => remote.client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: folder, ContinuationToken: token })),
      'list the shard parts',
    );
    for (const object of page.Contents ?? []) {
      const key = object.Key!.slice(objectKey(prefix, '').length);
      if (!keep.has(key)) old.push(key);
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token !== undefined);
  await deleteObjects(remote, old, remote.options.concurrency, () => undefined, later);
}
