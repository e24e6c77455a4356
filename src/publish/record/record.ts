/**
 * The record a publish keeps in the bucket (state and intent, see format.ts), read with the versions
 * (ETags) that its writes must replace, and judged before it is trusted:
 *
 *   - a state whose last intent it resolved (same id), or no intent at all: trusted as it is;
 *   - an intent planned over this very state (its base) that no state resolved: a publish stopped
 *     half-way; what the intent names is unknown, the rest trusted;
 *   - anything else (no state, an unreadable one, an intent planned over another state: a writer
 *     changed the state outside the lease): nothing is trusted, the prefix is listed and compared by
 *     content.
 *
 * Both are written only over the version read (`If-Match`, or `If-None-Match: *` when absent): a
 * publisher whose lease passed on, or whose record changed under it, never overwrites another's.
 */
import { prefixHeldError } from '../../core/errors.js';
import type { Remote } from '../bucket/client.js';
import type { PublishScope } from '../keys.js';
import { readObject, unchangedSince, writeObject, type StoredObject } from '../bucket/objects.js';
import {
  applyIntent,
  NO_BASE,
  parseIntent,
  parseState,
  serializeIntent,
  serializeState,
  type IntentToWrite,
  type RemoteIntent,
  type RemoteState,
  type StateSummary,
} from './format.js';
import type { LiveSet } from '../plan/live-set.js';
import type { RowSource } from '../plan/profile-table.js';

export interface RemoteRecord {
  /** What is live as the record says, unknowns marked; undefined when the record is not trusted (list instead). */
  live: LiveSet | undefined;
  /** Trusted, and no intent left unresolved: an empty plan has nothing to write. */
  settled: boolean;
  /** The trusted state's id, the next intent's base; NO_BASE when nothing is trusted. */
  base: string;
  stateEtag: string | undefined;
  intentEtag: string | undefined;
  /** The digest of the tree the trusted state was made from (see quiet.ts), if it names one. */
  tree?: string | undefined;
  /** Where the record is kept: a whole tree's, or a shard's (../keys.ts). */
  scope: PublishScope;
}

/**
 * Whether a settled record already names this tree, so that an empty plan has nothing to write. A
 * record made from another manifest with the same data (a build that rewrote it) is written again,
 * once, so that the next quiet check needs only the headers.
 */
export const namesTree = (record: RemoteRecord, digest: string | undefined): boolean =>
  record.settled && (digest === undefined || record.tree === digest);

/** Reads state and intent. With `previous`, an object unchanged since costs no body and no parse. */
export async function readRecord(remote: Remote, scope: PublishScope, previous?: RemoteRecord): Promise<RemoteRecord> {
  const [state, intent] = await Promise.all([
    readObject(remote, scope.state, previous?.stateEtag),
    readObject(remote, scope.intent, previous?.intentEtag),
  ]);
  if (previous !== undefined && state === 'unchanged' && intent === 'unchanged') return previous;
  // One changed under us: read both afresh, so they are judged as one record.
  if (state === 'unchanged' || intent === 'unchanged') return readRecord(remote, scope);
  return { ...judge(state, intent), scope };
}

/** The rules above, on the objects as read. */
export function judge(state: StoredObject | undefined, intent: StoredObject | undefined): Omit<RemoteRecord, 'scope'> {
  const untrusted = { live: undefined, settled: false, base: NO_BASE, stateEtag: state?.etag, intentEtag: intent?.etag };
  if (state === undefined) return untrusted;
  let parsedState: RemoteState, parsedIntent: RemoteIntent | undefined;
  try {
    parsedState = parseState(state.bytes);
    parsedIntent = intent === undefined ? undefined : parseIntent(intent.bytes);
  } catch {
    return untrusted; // another version's, or damaged: the listing tells what is there
  }
  const trusted = { ...untrusted, live: parsedState.live, base: parsedState.id, tree: parsedState.tree };
  if (parsedIntent === undefined || parsedIntent.id === parsedState.id) return { ...trusted, settled: true };
  if (parsedIntent.base !== parsedState.id) return untrusted;
  applyIntent(parsedState.live, parsedIntent);
  return trusted;
}

/** Writes the intent over the version read; returns the record with the intent's new version. */
export async function writeIntent(remote: Remote, record: RemoteRecord, intent: IntentToWrite): Promise<RemoteRecord> {
  const etag = await writeObject(
    remote,
    record.scope.intent,
    serializeIntent(intent),
    'application/gzip',
    unchangedSince(record.intentEtag),
  );
  if (etag === 'refused') throw changedUnder(remote, 'intent');
  return { ...record, intentEtag: etag };
}

/** Writes the state over the version read (the publish's last write, or a checkpoint's); returns its ETag. */
export async function writeState(
  remote: Remote,
  record: RemoteRecord,
  id: string,
  profiles: RowSource,
  files: Iterable<readonly [string, string]>,
  summary: StateSummary,
): Promise<string> {
  const etag = await writeObject(
    remote,
    record.scope.state,
    serializeState(id, profiles, files, summary),
    'application/gzip',
    unchangedSince(record.stateEtag),
  );
  if (etag === 'refused') throw changedUnder(remote, 'state');
  return etag;
}

function changedUnder(remote: Remote, what: string) {
  return prefixHeldError(
    `the publish ${what} in ${remote.where} was changed by another writer during this publish; it was not overwritten`,
    'publish again: the next publish re-checks whatever either writer may have touched',
  );
}
