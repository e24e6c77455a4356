/**
 * The quiet check: whether the bucket already holds this very tree, learnt from the manifest's
 * header and the first bytes of the record, without reading a million entries on either side.
 *
 * Every state names the digest of the manifest its tree was read from (format.ts), and every manifest
 * carries its own digest in its header (output/manifest.ts), valid only while the file is the size it
 * records. The bucket holds this tree when the state is ours, names this digest, and has resolved the
 * last intent (none, or one with the state's id): then every object is as the tree says, and a
 * publish has nothing to write. Anything else (no digest, another tree, an intent left unresolved, a
 * record written by an older version) is for the full comparison to decide.
 */
import { readManifestDigest } from '../../output/manifest.js';
import type { TreeReader } from '../../output/pin.js';
import type { Remote } from '../bucket/client.js';
import { assertRequiredFiles } from '../plan/local.js';
import { readObject, type StoredObject } from '../bucket/objects.js';
import type { PublishScope } from '../keys.js';
import { HEAD_BYTES, parseIntentHead, parseStateHead } from './format.js';

/**
 * The tree's counts when the bucket already holds it (nothing to do); undefined when that is not
 * known so.
 */
export async function bucketHoldsTree(
  remote: Remote,
  reader: TreeReader,
  scope: PublishScope,
): Promise<{ profiles: number; files: number } | undefined> {
  const digest = readManifestDigest(reader.root);
  if (digest === undefined) return undefined;
  // No ETag is known here, so neither read answers 'unchanged'.
  const [state, intent] = (await Promise.all([
    readObject(remote, scope.state, undefined, HEAD_BYTES),
    readObject(remote, scope.intent, undefined, HEAD_BYTES),
  ])) as (StoredObject | undefined)[];
  const head = state === undefined ? undefined : parseStateHead(state.bytes);
  if (head === undefined || head.tree !== digest) return undefined;
  if (intent !== undefined && parseIntentHead(intent.bytes)?.id !== head.id) return undefined;
  // A tree that lost a document since is not publishable, quiet or not (as the full path says).
  assertRequiredFiles(reader);
  return { profiles: head.profiles, files: head.files };
}
