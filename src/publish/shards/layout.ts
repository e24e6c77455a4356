/**
 * A sharded prefix's layout. A shard's publish (`--shard i/n`) keeps its record and leases in its
 * own folder (../keys.ts) and writes only its own users' profiles; the creators list is joined from
 * every shard's part (part.ts, join.ts).
 *
 * A prefix is either sharded or not, and sharded in one way: the first shard published into it
 * creates `.profile-snapshot/shards/layout` (a conditional create, so two first publishers agree),
 * and every publish checks it before it writes anything.
 */
import { shardCountError, shardLayoutError } from '../../core/errors.js';
import { formatSlice, type Slice } from '../../core/slice.js';
import type { Remote } from '../bucket/client.js';
import { readObject, writeObject } from '../bucket/objects.js';
import { SHARD_LAYOUT, WHOLE_TREE } from '../keys.js';

/** The shard count a sharded prefix was laid out with, or undefined when it is not sharded. */
export async function readShardCount(remote: Remote): Promise<number | undefined> {
  const stored = await readObject(remote, SHARD_LAYOUT);
  if (stored === undefined || stored === 'unchanged') return undefined;
  const body = JSON.parse(Buffer.from(stored.bytes).toString('utf8')) as { shards?: unknown };
  if (typeof body.shards !== 'number' || !Number.isSafeInteger(body.shards) || body.shards < 1) {
    throw shardLayoutError(
      `${remote.where}: ${SHARD_LAYOUT} is not a layout this version wrote`,
      'remove it only if no shard publishes there',
    );
  }
  return body.shards;
}

/**
 * Refuses (before anything is written) a whole tree published into a sharded prefix: exit 10. Asked
 * only when the prefix holds no record of whole trees, so an unsharded prefix pays no request for it.
 */
export async function assertNotSharded(remote: Remote): Promise<void> {
  const count = await readShardCount(remote);
  if (count === undefined) return;
  throw shardLayoutError(
    `${remote.where} holds the API as ${count} shards; a tree built without --shard would replace every shard's list and profiles`,
    `build and publish each shard with --shard i/${count}, or publish the whole tree to another prefix`,
  );
}

/**
 * Checks that the prefix is sharded as `shard` says, laying it out on its first shard's publish:
 * exit 9 when its shard count differs (the message names it), 10 when it holds whole trees.
 */
export async function claimShardLayout(remote: Remote, shard: Slice): Promise<void> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const count = await readShardCount(remote);
    if (count !== undefined) return assertSameCount(remote, shard, count);
    if ((await readObject(remote, WHOLE_TREE.state, undefined, 1)) !== undefined) {
      throw shardLayoutError(
        `${remote.where} holds the API built without shards; shard ${formatSlice(shard)} would replace its creators list with a joined one`,
        'publish shards to a prefix of their own, or publish the whole tree without --shard',
      );
    }
    const body = `${JSON.stringify({ tool: 'profile-snapshot', shards: shard.count })}\n`;
    if ((await writeObject(remote, SHARD_LAYOUT, body, 'application/json', { ifNoneMatch: '*' })) !== 'refused') return;
    // Another shard's first publish laid it out meanwhile: check against what it wrote.
  }
  throw shardLayoutError(`${remote.where}: ${SHARD_LAYOUT} kept changing while it was read`, 'publish again');
}

function assertSameCount(remote: Remote, shard: Slice, count: number): void {
  if (count === shard.count) return;
  throw shardCountError(
    `${remote.where} is split into ${count} shards, not ${shard.count}: shard ${formatSlice(shard)} does not fit it`,
    `build and publish with --shard i/${count}, or publish ${shard.count} shards to another prefix`,
  );
}
