/**
 * The built tree a publish uploads, as its manifest describes it: every profile (under each alias
 * folder) and every other document, each with its data hash. Only a complete tree is publishable:
 * one that `verify` would refuse for its structure (no manifest, entries left pending by an
 * interrupted build, a document missing) never reaches the bucket.
 */
import { outputError, usageError } from '../../core/errors.js';
import { ROUTES } from '../../hosting/routes/routes.js';
import { CREATORS_FILE, CREATORS_GZIP_FILE, MANIFEST_FILE, PROFILE_DIRS } from '../../core/layout.js';
import type { TreeReader } from '../../output/pin.js';
import { readSettled } from '../../output/settled.js';
import {
  entryHash,
  fileEntryStamp,
  manifestBytes,
  manifestStamp,
  PENDING,
  readManifestRenderKey,
  scanManifest,
} from '../../output/manifest.js';
import { forEachRow, ProfileTable, TableBuilder } from './profile-table.js';
import { shardOfRenderKey } from '../../core/render-key.js';
import { formatSlice, type Slice } from '../../core/slice.js';

export interface LocalTree {
  outDir: string;
  /** Where the tree's documents are read: the out dir as it is, or a generation pinned by its writer (output/pin.ts). */
  reader: TreeReader;
  /** Lower-case username -> its data hash, in name order. */
  profiles: ProfileTable;
  /** Path relative to the out dir -> the manifest entry (hash, then the file's stamp). */
  files: Map<string, string>;
  /** The manifest's stamp when it was read: a build that commits meanwhile changes it. */
  manifestStamp: string | undefined;
  /** The manifest's own digest (undefined for one without): recorded in the state, for the quiet check. */
  digest: string | undefined;
}

/** Documents every snapshot has besides the profiles: the route table's files, the list's gzip variant and error documents. */
export const REQUIRED_FILES = [
  ...ROUTES.files.map((route) => route.file),
  CREATORS_GZIP_FILE,
  ...Object.values(ROUTES.errors).map((error) => error.file),
];

const REBUILD = 'run profile-snapshot build (or let the watcher finish its cycle), then publish again';

/**
 * The shard the tree was built for (its manifest says), undefined for a whole tree. With
 * `expected` (`--shard`), any other tree is refused (exit 2) before anything reaches the bucket.
 */
export function treeShard(reader: TreeReader, expected: Slice | undefined): Slice | undefined {
  const out = reader.outDir;
  const recorded = readManifestRenderKey(reader.root);
  const shard = recorded === undefined ? undefined : shardOfRenderKey(recorded);
  if (expected === undefined || (shard !== undefined && formatSlice(shard) === formatSlice(expected))) return shard;
  throw usageError(
    `${out} holds ${shard === undefined ? 'a tree built without --shard' : `shard ${formatSlice(shard)}`}, not shard ${formatSlice(expected)}`,
    `build it with --shard ${formatSlice(expected)} first, or publish it without --shard`,
  );
}

/**
 * Reads the tree's manifest (its out dir absolute: publish resolved it). Entries pending while a
 * build or watcher is committing are waited for (up to `waitMs`); pending with no live writer means
 * an interrupted build: not publishable (exit 5). A pinned generation never changes: read once.
 */
export function readLocalTree(reader: TreeReader, waitMs: number): LocalTree {
  const out = reader.outDir;
  const { value, pending } = readSettled(reader.root, waitMs, () => {
    const stamp = manifestStamp(reader.root);
    const profiles = new TableBuilder(undefined, tableRoom(reader.root));
    const files = new Map<string, string>();
    const scan = scanManifest(
      reader.root,
      (bytes, nameStart, tab, hashEnd) => profiles.addBytes(bytes, nameStart, tab, hashEnd),
      (path, entry) => files.set(path, entry),
    );
    if (stamp === undefined || scan === undefined) {
      throw outputError(`${out} holds no snapshot (no ${MANIFEST_FILE})`, `${REBUILD}; --out names the folder build wrote`);
    }
    const table = profiles.build();
    return { value: { profiles: table, files, digest: scan.digest, stamp }, pending: countPending(table, files) };
  });
  if (pending > 0) {
    throw outputError(
      `${out} is not publishable: ${pending} entries of its manifest are pending (an interrupted or unfinished build)`,
      REBUILD,
    );
  }
  const { profiles, files, digest, stamp } = value;
  return checked({ outDir: out, reader, profiles, files, manifestStamp: stamp, digest });
}

/**
 * Room for the manifest's profiles: no more bytes than the file's, and about as many rows as it has
 * lines (a size read apart from the scan: a hint, which the table grows past if it is wrong).
 */
function tableRoom(root: string): { rows: number; bytes: number } {
  const size = manifestBytes(root);
  return { rows: size / PROFILE_LINE_BYTES, bytes: size };
}

/** Fewer bytes than a settled profile line holds: `u`, a name, two 16-character hashes, tabs. */
const PROFILE_LINE_BYTES = 32;

function countPending(profiles: ProfileTable, files: Map<string, string>): number {
  let pending = 0;
  forEachRow(profiles, (table, row) => {
    if (table.hashIs(row, PENDING)) pending++;
  });
  for (const entry of files.values()) if (entry === PENDING) pending++;
  return pending;
}

/** Throws (exit 5) unless every document a snapshot must have is on disk. */
export function assertRequiredFiles(reader: TreeReader, listed: (path: string) => boolean = () => true): void {
  const missing = REQUIRED_FILES.filter((path) => !listed(path) || !reader.has(path));
  if (missing.length > 0) throw outputError(`${reader.outDir} is not publishable: ${missing.join(', ')} missing`, REBUILD);
}

function checked(tree: LocalTree): LocalTree {
  assertRequiredFiles(tree.reader, (path) => tree.files.has(path));
  // Both carry the hash of the list's members: a variant made from another list would serve it to gzip clients.
  if (fileHash(tree, CREATORS_GZIP_FILE) !== fileHash(tree, CREATORS_FILE))
    throw outputError(
      `${tree.outDir} is not publishable: ${CREATORS_GZIP_FILE} was made from another creators list than ${CREATORS_FILE}`,
      REBUILD,
    );
  return tree;
}

export const fileHash = (tree: LocalTree, path: string) => entryHash(tree.files.get(path)!);
export const fileStampOf = (tree: LocalTree, path: string) => fileEntryStamp(tree.files.get(path)!);

/** The document a profile's objects are uploaded from (every alias file holds the same bytes). */
export const profileDocument = (name: string) => `${PROFILE_DIRS[0]}/${name}`;

/** A profile's paths under the out dir (and keys under the prefix): one per alias folder. */
export const profilePaths = (name: string) => PROFILE_DIRS.map((dir) => `${dir}/${name}`);
