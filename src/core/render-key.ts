/**
 * The render key: what a tree was rendered with, the tool and the base URL, and the shard when the
 * tree holds one shard's users (its list holds only theirs). Equal keys and equal rows make equal
 * documents, so everything a build may reuse from the last one (row signatures, the
 * last-pass record, a session's selection) is trusted only under an equal key. One shape, written in
 * the manifest's header, recorded by the last pass and the session, and compared by `sameRenderKey`.
 */
import { ALL_USERS, formatSlice, type Slice } from './slice.js';
import { toolIdentity } from './version.js';

export type RenderKey = string & { readonly renderKey: unique symbol };

/** The key of a build by this tool at `baseUrl` (already normalised: see normalizeBaseUrl), of `users`. */
export function renderKeyOf(baseUrl: string, tool: string = toolIdentity(), users: Slice = ALL_USERS): RenderKey {
  const shard = users.count === 1 ? '' : `\t${SHARD_FIELD}${formatSlice(users)}`;
  return `${tool}\t${baseUrl}${shard}` as RenderKey;
}

const SHARD_FIELD = 'shard ';

/** The shard a recorded key names (a tree built with a shard), or undefined for all users. */
export function shardOfRenderKey(recorded: string): Slice | undefined {
  const field = recorded.split('\t').find((part) => part.startsWith(SHARD_FIELD));
  const match = field === undefined ? null : /^(\d+)\/(\d+)$/.exec(field.slice(SHARD_FIELD.length));
  return match === null ? undefined : { index: Number(match[1]), count: Number(match[2]) };
}

/** Whether a recorded key (a manifest's, or a record's) is `key`; an unknown ('') one never is. */
export function sameRenderKey(recorded: string | undefined, key: RenderKey): boolean {
  return recorded !== undefined && recorded !== '' && recorded === key;
}
