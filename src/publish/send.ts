/**
 * The order of sending, which keeps the API whole for its readers whenever a publish stops: every
 * profile and document first (in chunks, each followed by a checkpoint of the record), then the
 * creators list and its variant, which name them; a shard's list goes up as its part of the joined
 * one. A document the plan needs is checked before anything is written, and read as the manifest
 * describes it: a file a later build wrote is not this publish's to send.
 */
import { fstatSync } from 'node:fs';
import { outputError } from '../core/errors.js';
import { CREATORS_GZIP_FILE } from '../core/layout.js';
import { manifestStamp, stampOf } from '../output/manifest.js';
import type { Remote } from './bucket/client.js';
import { closeFile, putFile } from './bucket/upload.js';
import type { PublishScope } from './keys.js';
import { fileStampOf, profileDocument, profilePaths, type LocalTree } from './plan/local.js';
import { uploadCount, type PublishPlan } from './plan/plan.js';
import type { Checkpoints } from './record/checkpoint.js';
import type { Run } from './run.js';
import { publishPart } from './shards/part.js';

/** A build committed while the publish read the tree: start over on the new one. */
export class TreeChanged extends Error {}

/** A document the plan uploads is missing: the tree changed under us, or it is damaged (exit 5). */
function missing(tree: LocalTree, path: string): Error {
  if (manifestStamp(tree.reader.root) !== tree.manifestStamp) return new TreeChanged();
  return outputError(
    `${tree.outDir} is not publishable: ${path} is missing although the manifest lists it`,
    'rebuild (profile-snapshot build --full), then publish again',
  );
}

/** Checked before anything is written: a tree missing documents is never half published. */
export function assertPresent(tree: LocalTree, plan: Record<'profiles' | 'files', Iterable<string>>): void {
  for (const name of plan.profiles) if (!tree.reader.has(profileDocument(name))) throw missing(tree, profileDocument(name));
  for (const path of plan.files) if (!tree.reader.has(path)) throw missing(tree, path);
}

/** Profiles and documents first, the creators list and its variant last. Returns the bytes uploaded. */
export async function sendInOrder(
  remote: Remote,
  tree: LocalTree,
  plan: PublishPlan,
  options: Run,
  scope: PublishScope,
  checkpoints: Checkpoints,
): Promise<number> {
  const total = uploadCount(plan);
  let done = 0,
    bytes = 0;
  const progress = (count: number) => options.onProgress?.({ phase: 'upload', done: (done += count), total, bytes });
  // The plan is made, the reads behind it done: a watcher's next cycle waits for this (watch/publisher.ts).
  progress(0);
  const send = async (path: string, keys: readonly string[]) => {
    const fd = tree.reader.open(path);
    if (fd === undefined) throw missing(tree, path);
    try {
      // Read after the await: `bytes += await ...` would add to the total as it was before the upload.
      const sent = await putFile(remote, keys, fd);
      bytes += sent;
      progress(keys.length);
    } finally {
      closeFile(fd);
    }
  };
  const concurrency = remote.options.concurrency;
  // In chunks, each followed by a checkpoint of the record but the last: a takeover re-sends only what came after.
  for (let from = 0; from < plan.profiles.length; from += checkpoints.every) {
    const chunk = plan.profiles.names(from, from + checkpoints.every);
    await options.later.inPool(chunk, concurrency, (name) => send(profileDocument(name), profilePaths(name)));
    if (from + chunk.length < plan.profiles.length) await checkpoints.after(chunk.length);
  }
  await options.later.inPool(plan.files, concurrency, (path) => send(path, [path]));
  if (scope.shard !== undefined && plan.listFiles.length > 0) {
    // A shard's list is a part of the joined one (shards/part.ts): never uploaded as the list itself.
    await options.later.once(async () => {
      const part = await publishPart(remote, tree, scope.shard!, checkpoints.id);
      bytes += part.bytes;
    });
    progress(plan.listFiles.length);
    return bytes;
  }
  for (const path of plan.listFiles)
    await options.later.once(() =>
      sendListFile(remote, tree, path, (size) => {
        bytes += size;
        progress(1);
      }),
    );
  return bytes;
}

/**
 * The creators list or its gzip variant (stored with `Content-Encoding: gzip`), as the manifest
 * describes it: a file written by a later build is not ours to send.
 */
async function sendListFile(remote: Remote, tree: LocalTree, path: string, sent: (bytes: number) => void): Promise<void> {
  const fd = tree.reader.open(path);
  if (fd === undefined) throw missing(tree, path);
  try {
    const expected = fileStampOf(tree, path);
    const stats = fstatSync(fd, { bigint: true });
    if (expected !== undefined && expected !== stampOf(stats)) {
      if (manifestStamp(tree.reader.root) !== tree.manifestStamp) throw new TreeChanged();
      throw outputError(
        `${tree.outDir}/${path} was changed since the build wrote it`,
        'rebuild (profile-snapshot build --full), then publish again',
      );
    }
    sent(await putFile(remote, [path], fd, path === CREATORS_GZIP_FILE ? 'gzip' : undefined));
  } finally {
    closeFile(fd);
  }
}
