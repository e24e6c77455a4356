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
 * Both are gzipped tab-separated lines under a header line, which ends with the byte length of the
 * lines below it. The state's header also names the digest of the local tree (its manifest's) it
 * was made from, and its counts: a publish whose tree has that digest has nothing to do, which it
 * learns from the first bytes of the state alone (quiet.ts). No CDN route serves
 * `.profile-snapshot/`.
 */
import { randomBytes } from 'node:crypto';
import { constants, gunzipSync, gzipSync } from 'node:zlib';
import { emptyLive, UNKNOWN, type LiveSet } from '../plan/live-set.js';
import { forEachRow, ProfileTable, union, type RowSource } from '../plan/profile-table.js';
import { StateRows } from './state-rows.js';

const STATE_HEADER = 'profile-snapshot remote state 1';
const INTENT_HEADER = 'profile-snapshot remote intent 2';
/**
 * Where the intent's header says how many bytes of lines follow it: after the fields older versions
 * read. The state's says so too, last, for older versions: this one reads a state a member at a time.
 */
const INTENT_LENGTH_FIELD = 3;

/** The most text one byte of deflate can stand for (zlib's technical note: 1032 to 1). */
const MAX_DEFLATE_RATIO = 1032;

/** Enough of a gzipped record to inflate its header line. */
export const HEAD_BYTES = 4096;

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

/** An intent as a publish writes it: each key at most once, in any iterable (no set of a million names made for it). */
export type IntentToWrite = Pick<RemoteIntent, 'id' | 'base'> & Record<'profiles' | 'files' | 'strays', Iterable<string>>;

export const newPublishId = (): string => randomBytes(9).toString('base64url');

const TAB = 9;
const NEWLINE = Buffer.from('\n');
/** Each line's kind and its tab, as bytes: one copy per line, at a million lines a state. */
const LINE_KINDS = { f: Buffer.from('f\t'), k: Buffer.from('k\t'), p: Buffer.from('p\t') };

/** Text gathered before it is deflated: a state is written a batch at a time, never whole. */
const BATCH_BYTES = 1 << 20;

/** Room before the members for the header's own member, made last (its line is a few hundred bytes). */
const HEAD_ROOM = 1024;

/** No more than deflate makes of `bytes` in members of BATCH_BYTES: zlib's deflateBound, and gzip's own bytes. */
const gzipBound = (bytes: number): number => bytes + (bytes >>> 12) + (bytes >>> 14) + (Math.ceil(bytes / BATCH_BYTES) + 1) * 64;

/**
 * Lines written as gzip members of a batch each, one after the other: a valid gzip file (RFC 1952),
 * which gunzip reads whole, made without the text of a million lines in memory at once. The header
 * line is a member of its own, made last: it ends with the byte length of the lines below it, so a
 * reader that inflates the whole (an intent, or an older version's reader of a state) asks for one
 * buffer of that size (`inflatedLines`); this version reads a state a member at a time
 * (state-rows.ts), and each member holds at most a batch of text. Each member is copied
 * into one output buffer as it is made, its room asked for once when the lines' length is known:
 * the members kept apart and joined at the end held the gzip twice.
 */
class GzipLines {
  private out: Buffer;
  private written = HEAD_ROOM;
  private batch = Buffer.allocUnsafe(BATCH_BYTES);
  private used = 0;
  private bodyBytes = 0;

  /** `expectedBody`: about how many bytes of lines will follow the header (more grows the room). */
  constructor(
    private readonly header: string,
    expectedBody = 0,
  ) {
    this.out = Buffer.allocUnsafe(HEAD_ROOM + gzipBound(Math.max(expectedBody, BATCH_BYTES)));
  }

  /** A line of its kind, a tab, then `value` (a table's row, or text). */
  line(kind: keyof typeof LINE_KINDS, value: Uint8Array | string): void {
    this.raw(LINE_KINDS[kind]);
    if (typeof value === 'string') this.text(value);
    else this.raw(value);
    this.raw(NEWLINE);
  }

  done(): Buffer {
    this.flush();
    const head = gzipSync(`${this.header}\t${this.bodyBytes}\n`, { level: 1 });
    if (head.length > HEAD_ROOM) throw new Error(`bug: a record's header line took ${head.length} bytes gzipped`);
    head.copy(this.out, HEAD_ROOM - head.length);
    return this.out.subarray(HEAD_ROOM - head.length, this.written);
  }

  private text(text: string): void {
    this.room(Buffer.byteLength(text));
    this.used += this.batch.write(text, this.used);
  }

  private raw(bytes: Uint8Array): void {
    this.room(bytes.length);
    this.batch.set(bytes, this.used);
    this.used += bytes.length;
  }

  private room(length: number): void {
    if (this.used + length > this.batch.length) this.flush();
    if (length > this.batch.length) this.batch = Buffer.allocUnsafe(length);
  }

  private flush(): void {
    if (this.used === 0) return;
    // Level 1: far faster than level 6 on a million-line state, for a little more size.
    this.append(gzipSync(this.batch.subarray(0, this.used), { level: 1 }));
    this.bodyBytes += this.used;
    this.used = 0;
  }

  private append(member: Buffer): void {
    if (this.written + member.length > this.out.length) {
      const grown = Buffer.allocUnsafe(Math.max(this.out.length * 2, this.written + member.length));
      this.out.copy(grown, 0, 0, this.written);
      this.out = grown;
    }
    this.written += member.copy(this.out, this.written);
  }
}

/**
 * The header line's fields, and the text under gunzip with the offset of the lines below the header
 * (throws for a file that is not one of ours). `lengthField`: where the header says how long those
 * lines are (absent in an older version's record).
 */
function gunzipped(bytes: Uint8Array, header: string, what: string, lengthField: number): { head: string[]; text: Buffer; body: number } {
  const { line, head } = ourHead(bytes, header, what);
  const text = inflatedLines(bytes, what, line, counted(head[lengthField]));
  return { head, text, body: Buffer.byteLength(line) + 1 };
}

/** The header line of a record of ours and its fields; throws for any other file. */
function ourHead(bytes: Uint8Array, header: string, what: string): { line: string; head: string[] } {
  const line = headLine(bytes.subarray(0, HEAD_BYTES));
  const head = line.split('\t');
  if (head[0] !== header || head[1] === undefined) throw new Error(`the remote ${what} is not one this version of profile-snapshot wrote`);
  return { line, head };
}

/**
 * The whole text, inflated into one buffer when its length is known: zlib's default fills chunks of
 * 16 KiB and then joins them, holding the text twice. The byte to spare keeps zlib from asking for
 * another buffer of that size once this one is full. A length no deflate stream of these bytes can
 * reach (a damaged header) is not trusted; a wrong one only costs the join again.
 */
function inflatedLines(bytes: Uint8Array, what: string, line: string, bodyLength: number | undefined): Buffer {
  const length = bodyLength === undefined ? undefined : Buffer.byteLength(line) + 1 + bodyLength;
  const known = length !== undefined && length <= bytes.length * MAX_DEFLATE_RATIO;
  try {
    return gunzipSync(bytes, known ? { chunkSize: Math.max(constants.Z_MIN_CHUNK, length + 1) } : {});
  } catch {
    throw new Error(`the remote ${what} is damaged: its gzip does not inflate`);
  }
}

/** Each line of `text` from `from` on, as `[start, end)`, with no string made for it. */
function forEachLine(text: Buffer, from: number, line: (start: number, end: number) => void): void {
  for (let start = from; start < text.length;) {
    const newline = text.indexOf(10, start);
    const end = newline === -1 ? text.length : newline;
    line(start, end);
    start = end + 1;
  }
}

/**
 * The summary travels in the header's later fields: versions that do not know them read the id and
 * stop. Profiles are written in name order (a table's rows are), so the next publish reads them back
 * as a table without sorting.
 */
export function serializeState(
  id: string,
  profiles: RowSource | Iterable<readonly [string, string]>,
  files: Iterable<readonly [string, string]>,
  summary?: StateSummary,
): Buffer {
  // Always every field: the lines' length comes after them (GzipLines).
  const head = `\t${summary?.tree ?? NO_TREE}\t${summary?.profiles ?? '-'}\t${summary?.files ?? '-'}`;
  const rows = 'rows' in profiles ? profiles : ProfileTable.of(profiles);
  // Each profile's line is `p<TAB>`, its row, a newline; the few files' lines need no room of their
  // own, the gzip of all being well under the room asked for (the bound of text that does not deflate).
  const out = new GzipLines(`${STATE_HEADER}\t${id}${head}`, rows.rowsByteLength + 3 * rows.size);
  for (const [path, hash] of files) out.line('f', `${path}\t${hash}`);
  forEachRow(rows, (table, row) => out.line('p', table.rowBytes(row)));
  return out.done();
}

/** The state's profiles are read from its gzip as they are walked (state-rows.ts): no string per line, no text held. */
export function parseState(bytes: Uint8Array): RemoteState {
  const { head } = ourHead(bytes, STATE_HEADER, 'state');
  const live = emptyLive();
  live.profiles = StateRows.read(bytes, (path, hash) => live.files.set(path, hash));
  return { id: head[1]!, live, tree: head[2] === undefined || head[2] === NO_TREE ? undefined : head[2] };
}

export function serializeIntent(intent: IntentToWrite): Buffer {
  const out = new GzipLines(`${INTENT_HEADER}\t${intent.id}\t${intent.base}`);
  for (const path of intent.files) out.line('f', path);
  for (const key of intent.strays) out.line('k', key);
  for (const name of intent.profiles) out.line('p', name);
  return out.done();
}

export function parseIntent(bytes: Uint8Array): RemoteIntent {
  const { head, text, body } = gunzipped(bytes, INTENT_HEADER, 'intent', INTENT_LENGTH_FIELD);
  const intent: RemoteIntent = { id: head[1]!, base: head[2] ?? NO_BASE, profiles: new Set(), files: new Set(), strays: new Set() };
  forEachLine(text, body, (start, end) => {
    if (end - start < 3 || text[start + 1] !== TAB) return;
    const key = text.toString('utf8', start + 2, end);
    if (text[start] === 112 /* p */) intent.profiles.add(key);
    else if (text[start] === 102 /* f */) intent.files.add(key);
    else if (text[start] === 107 /* k */) intent.strays.add(key);
  });
  return intent;
}

/** The state's header from its first bytes (a ranged read) or all of them; undefined when it is not one of ours. */
export function parseStateHead(bytes: Uint8Array): StateHead | undefined {
  const [name, id, tree, profiles, files] = headLine(bytes).split('\t');
  if (name !== STATE_HEADER || id === undefined) return undefined;
  const [p, f] = [counted(profiles), counted(files)];
  if (tree === undefined || tree === NO_TREE || p === undefined || f === undefined) return { id, tree: undefined, profiles: 0, files: 0 };
  return { id, tree, profiles: p, files: f };
}

/** The intent's header (id, base) from its first bytes or all of them. */
export function parseIntentHead(bytes: Uint8Array): { id: string; base: string } | undefined {
  const [name, id, base] = headLine(bytes).split('\t');
  return name === INTENT_HEADER && id !== undefined && base !== undefined ? { id, base } : undefined;
}

const counted = (text: string | undefined): number | undefined => (text !== undefined && /^\d+$/.test(text) ? Number(text) : undefined);

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
  live.profiles = union(live.profiles, ProfileTable.of(Array.from(intent.profiles, (name) => [name, UNKNOWN] as const)));
  for (const path of intent.files) live.files.set(path, UNKNOWN);
  for (const key of intent.strays) live.strays.add(key);
}
