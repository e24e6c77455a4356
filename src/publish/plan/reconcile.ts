/**
 * With no remote state (a first publish, a bucket filled by hand or by an older run, --full), what is
 * live is found by listing the prefix and comparing each object with the tree by content: its ETag
 * (the MD5 of its bytes, for a single-part upload) and size against the local file's. Objects that
 * match count as live with the tree's hash; any other is uploaded again or, when the tree has no such
 * document, deleted.
 */
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { closeSync, fstatSync, readSync } from 'node:fs';
import { CANONICAL_USERNAME, PROFILE_DIRS, STATE_DIR } from '../../core/layout.js';
import { inSlice, type Slice } from '../../core/slice.js';
import type { Remote } from '../bucket/client.js';
import type { TreeReader } from '../../output/pin.js';
import { profileDocument, fileHash, type LocalTree } from './local.js';
import { TableBuilder } from './profile-table.js';
import { emptyLive, UNKNOWN, type LiveSet } from './live-set.js';
import { MULTIPART_PART_BYTES } from '../bucket/upload.js';

interface Listed {
  etag: string;
  size: number;
  /** The username, when the object is a profile under one of the alias folders. */
  profile: string | undefined;
}

/**
 * Every object under the prefix, by key relative to it (the tool's own state folder left out, and
 * the profiles `ours` refuses: another shard's, never held).
 */
async function listPrefix(
  remote: Remote,
  ours: (profile: string) => boolean,
  onListed: ((listed: number) => void) | undefined,
): Promise<Map<string, Listed>> {
  const { bucket, prefix } = remote.options;
  const start = prefix === '' ? '' : `${prefix}/`;
  const objects = new Map<string, Listed>();
  let token: string | undefined;
  let listed = 0;
  do {
    const page = await remote.call(
      () => remote.client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: start, ContinuationToken: token })),
      'list the bucket',
    );
    onListed?.((listed += page.KeyCount ?? page.Contents?.length ?? 0));
    for (const object of page.Contents ?? []) {
      const key = object.Key?.slice(start.length);
      if (key === undefined || key === '' || key === STATE_DIR || key.startsWith(`${STATE_DIR}/`)) continue;
      const profile = profileOf(key);
      if (profile !== undefined && !ours(profile)) continue;
      objects.set(key, { etag: (object.ETag ?? '').replaceAll('"', ''), size: object.Size ?? -1, profile });
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token !== undefined);
  return objects;
}

/**
 * What is live, by listing. A shard (`shard`) sees only its own users' profiles: every other
 * profile belongs to another shard, and is neither compared nor deleted.
 */
export async function listLive(remote: Remote, tree: LocalTree, shard?: Slice, onListed?: (listed: number) => void): Promise<LiveSet> {
  const live = emptyLive();
  const partBytes = remote.options.multipartPartBytes ?? MULTIPART_PART_BYTES;
  const listed = await listPrefix(remote, (profile) => shard === undefined || inSlice(profile, shard), onListed);
  const profileObjects = new Map<string, Listed[]>();
  for (const [key, object] of listed) {
    if (object.profile !== undefined) {
      const objects = profileObjects.get(object.profile) ?? [];
      objects.push(object);
      profileObjects.set(object.profile, objects);
    } else if (tree.files.has(key)) {
      const matches = LocalFile.compare(tree.reader, key, partBytes, (local) => local.matches(object));
      live.files.set(key, matches ? fileHash(tree, key) : UNKNOWN);
    } else {
      live.strays.add(key);
    }
  }
  const profiles = new TableBuilder();
  for (const [name, objects] of profileObjects) {
    const hash = objects.length === PROFILE_DIRS.length ? tree.profiles.get(name) : undefined;
    const complete =
      hash !== undefined &&
      LocalFile.compare(tree.reader, profileDocument(name), partBytes, (local) => objects.every((object) => local.matches(object)));
    profiles.add(name, complete ? hash : UNKNOWN);
  }
  return { ...live, profiles: profiles.build() };
}

/** The username of a profile object (a name under one of the alias folders); undefined for any other key. */
function profileOf(key: string): string | undefined {
  const slash = key.lastIndexOf('/');
  const name = key.slice(slash + 1);
  return (PROFILE_DIRS as readonly string[]).includes(key.slice(0, slash)) && CANONICAL_USERNAME.test(name) ? name : undefined;
}

const MULTIPART_ETAG = /^[0-9a-f]{32}-\d+$/;

/**
 * A local file compared with listed objects: stat once, and hashed at most once however many objects
 * (a profile's aliases) are compared with it.
 */
class LocalFile {
  private readonly size: number;
  private digest: string | undefined;

  private constructor(
    private readonly fd: number,
    private readonly partBytes: number,
  ) {
    this.size = fstatSync(fd).size;
  }

  /** `compare` with the tree's document at `path` open; false when the tree has none. */
  static compare(reader: TreeReader, path: string, partBytes: number, compare: (file: LocalFile) => boolean): boolean {
    const fd = reader.open(path);
    if (fd === undefined) return false;
    try {
      return compare(new LocalFile(fd, partBytes));
    } finally {
      closeSync(fd);
    }
  }

  /** Whether a listed object holds this file's bytes (by size, then ETag). */
  matches(object: Listed): boolean {
    if (this.size !== object.size) return false;
    if (MULTIPART_ETAG.test(object.etag)) return multipartEtag(this.fd, this.size, this.partBytes) === object.etag;
    this.digest ??= readRange(this.fd, 0, this.size, createHash('md5')).digest('hex');
    return this.digest === object.etag;
  }
}

/** S3's ETag of a multipart upload made with our part size: the MD5 of the parts' MD5s, then `-<parts>`. */
function multipartEtag(fd: number, size: number, partBytes: number): string {
  const whole = createHash('md5');
  let parts = 0;
  for (let from = 0; from < size; from += partBytes, parts++) {
    whole.update(readRange(fd, from, Math.min(partBytes, size - from), createHash('md5')).digest());
  }
  return `${whole.digest('hex')}-${parts}`;
}

function readRange<H extends { update(data: Uint8Array): unknown }>(fd: number, from: number, length: number, hash: H): H {
  const chunk = Buffer.allocUnsafe(Math.min(length, 1 << 20) || 1);
  for (let done = 0; done < length;) {
    const read = readSync(fd, chunk, 0, Math.min(chunk.length, length - done), from + done);
    if (read === 0) break;
    hash.update(chunk.subarray(0, read));
    done += read;
  }
  return hash;
}
