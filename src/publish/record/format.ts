/**
 * What is live in the bucket, as the tool records it there, so that a publish compares its tree with
 * it instead of listing the bucket:
 *
 *   - the **state** (`.profile-snapshot/remote-state` under the prefix): every published profile and
 *     file with the data hash (the manifest's) of the document its objects hold. Written last, once
 *     every upload and deletion of a publish has succeeded.
 *   - the **intent** (`.profile-snapshot/remote-intent`): written before a publish touches any
 *     object, naming every profile, file and stray key it may upload or delete. A publish killed
 *     half-way leaves objects the state does not describe; the next one reads the intent and treats
 *     those entries as unknown (uploads them again, or deletes them), so nothing is left stale or
 *     orphaned. Each publish has an id; a state that carries the intent's id has resolved it. An
 *     intent also names the state it was planned over (its base): an intent whose base is not the
 *     state in the bucket means a writer changed the state outside the lease, and nothing of the
 *     record is trusted (see record.ts).
 *
 * Both are gzipped tab-separated lines under a header line. The state's header also names the
 * digest of the local tree (its manifest's) it was made from, and its counts: a publish whose tree
 * has that digest has nothing to do, which it learns from the first bytes of the state alone
 * (quiet.ts). No CDN route serves `.profile-snapshot/`.
 */
import { randomBytes } from 'node:crypto';
import { constants, gunzipSync, gzipSync } from 'node:zlib';
import { emptyLive, UNKNOWN, type LiveSet } from '../plan/live-set.js';

const STATE_HEADER = 'profile-snapshot remote state 1';
const INTENT_HEADER = 'profile-snapshot remote intent 2';

/** The base of an intent planned over no state the publisher could trust: never any state's id. */
export const NO_BASE = '-';

/** The tree digest of a state made from a manifest without one. */
const NO_TREE = '-';

export interface RemoteState {
  /** The publish that wrote it. */
  id: string;
  live: LiveSet;
  /** The digest of the manifest its tree was read from, if it names one. */
  tree: string | undefined;
}

/** What the state's header line says of the tree it records. */
export interface StateSummary {
  /** The digest of the manifest the tree was read from (undefined: it had none). */
  tree: string | undefined;
  profiles: number;
  files: number;
}

/** The state's header line: its id and summary, readable from the state's first bytes. */
export interface StateHead extends StateSummary {
  id: string;
}

export interface RemoteIntent {
  id: string;
  /** The id of the state it was planned over, or NO_BASE. */
  base: string;
  profiles: Set<string>;
  files: Set<string>;
  strays: Set<string>;
}

export const newPublishId = (): string => randomBytes(9).toString('base64url');

/** Lines joined in batches: one string per line of a million-profile state would be garbage galore. */
function gzipLines(header: string, each: (line: (text: string) => void) => void): Buffer {
  const parts: string[] = [];
  let batch = `${header}\n`,
    count = 0;
  each((text) => {
    batch += `${text}\n`;
    if (++count % 4096 === 0) {
      parts.push(batch);
      batch = '';
    }
  });
  parts.push(batch);
  // Level 1: far faster than level 6 on a million-line state, for a little more size.
  return gzipSync(Buffer.from(parts.join('')), { level: 1 });
}

/** Parses the lines under the header; returns the header's fields after its name (ids). */
function parseLines(bytes: Uint8Array, header: string, what: string, line: (fields: string[]) => void): string[] {
  let text: string;
  try {
    text = gunzipSync(bytes).toString('utf8');
  } catch {
    throw new Error(`the remote ${what} is not gzip`);
  }
  const lines = text.split('\n');
  const head = lines[0]!.split('\t');
  if (head[0] !== header || head[1] === undefined)
    throw new Error(`the remote ${what} was not written by this version of profile-snapshot`);
  for (let i = 1; i < lines.length; i++) if (lines[i] !== '') line(lines[i]!.split('\t'));
  return head.slice(1);
}

/** The summary travels in the header's later fields: versions that do not know them read the id and stop. */
export function serializeState(
  id: string,
  profiles: Iterable<[string, string]>,
  files: Iterable<[string, string]>,
  summary?: StateSummary,
): Buffer {
  const head = summary === undefined ? '' : `\t${summary.tree ?? NO_TREE}\t${summary.profiles}\t${summary.files}`;
  return gzipLines(`${STATE_HEADER}\t${id}${head}`, (line) => {
    for (const [path, hash] of files) line(`f\t${path}\t${hash}`);
    for (const [name, hash] of profiles) line(`p\t${name}\t${hash}`);
  });
}

export function parseState(bytes: Uint8Array): RemoteState {
  const live = emptyLive();
  let text: string;
  try {
    text = gunzipSync(bytes).toString('utf8');
  } catch {
    throw new Error('the remote state is not gzip');
  }
  // One pass with indexOf: no array of a million lines, no array of fields per line.
  let end = text.indexOf('\n');
  const head = text.slice(0, end === -1 ? text.length : end).split('\t');
  if (head[0] !== STATE_HEADER || head[1] === undefined)
    throw new Error('the remote state was not written by this version of profile-snapshot');
  for (let start = end + 1; end !== -1 && start < text.length; start = end + 1) {
    end = text.indexOf('\n', start);
    const stop = end === -1 ? text.length : end;
    const tab1 = text.indexOf('\t', start);
    const tab2 = tab1 === -1 ? -1 : text.indexOf('\t', tab1 + 1);
    if (tab2 === -1 || tab2 > stop || tab1 - start !== 1) continue;
    const kind = text.charCodeAt(start);
    const third = text.indexOf('\t', tab2 + 1);
    const hash = text.slice(tab2 + 1, third === -1 || third > stop ? stop : third);
    if (kind === 112 /* p */) live.profiles.set(text.slice(tab1 + 1, tab2), hash);
    else if (kind === 102 /* f */) live.files.set(text.slice(tab1 + 1, tab2), hash);
  }
  return { id: head[1], live, tree: head[2] === undefined || head[2] === NO_TREE ? undefined : head[2] };
}

export function serializeIntent(intent: RemoteIntent): Buffer {
  return gzipLines(`${INTENT_HEADER}\t${intent.id}\t${intent.base}`, (line) => {
    for (const path of intent.files) line(`f\t${path}`);
    for (const key of intent.strays) line(`k\t${key}`);
    for (const name of intent.profiles) line(`p\t${name}`);
  });
}

export function parseIntent(bytes: Uint8Array): RemoteIntent {
  const intent: RemoteIntent = { id: '', base: NO_BASE, profiles: new Set(), files: new Set(), strays: new Set() };
  [intent.id = '', intent.base = NO_BASE] = parseLines(bytes, INTENT_HEADER, 'intent', ([kind, key]) => {
    if (key === undefined) return;
    if (kind === 'p') intent.profiles.add(key);
    else if (kind === 'f') intent.files.add(key);
    else if (kind === 'k') intent.strays.add(key);
  });
  return intent;
}

/** The state's header from its first bytes (a ranged read) or all of them; undefined when it is not one of ours. */
export function parseStateHead(bytes: Uint8Array): StateHead | undefined {
  const [name, id, tree, profiles, files] = headLine(bytes).split('\t');
  if (name !== STATE_HEADER || id === undefined) return undefined;
  const counted = (text: string | undefined) => (text !== undefined && /^\d+$/.test(text) ? Number(text) : undefined);
  const [p, f] = [counted(profiles), counted(files)];
  if (tree === undefined || tree === NO_TREE || p === undefined || f === undefined) return { id, tree: undefined, profiles: 0, files: 0 };
  return { id, tree, profiles: p, files: f };
}

/** The intent's header (id, base) from its first bytes or all of them. */
export function parseIntentHead(bytes: Uint8Array): { id: string; base: string } | undefined {
  const [name, id, base] = headLine(bytes).split('\t');
  return name === INTENT_HEADER && id !== undefined && base !== undefined ? { id, base } : undefined;
}

/** The first line of a gzipped record, from as many of its first bytes as were read ('' if none). */
function headLine(bytes: Uint8Array): string {
  let text: string;
  try {
    text = gunzipSync(bytes, { finishFlush: constants.Z_SYNC_FLUSH }).toString('utf8');
  } catch {
    return '';
  }
  const end = text.indexOf('\n');
  return end === -1 ? '' : text.slice(0, end);
}

/** Marks what an unresolved intent may have touched as unknown: uploaded again, or deleted. */
export function applyIntent(live: LiveSet, intent: RemoteIntent): void {
  for (const name of intent.profiles) live.profiles.set(name, UNKNOWN);
  for (const path of intent.files) live.files.set(path, UNKNOWN);
  for (const key of intent.strays) live.strays.add(key);
}
