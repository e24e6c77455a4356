/**
 * The manifest records every file the tool wrote and a hash of its data (everything but meta). It is
 * how a rebuild knows, without re-reading a file, that a document is unchanged (keep its bytes),
 * which files are ours to replace or remove, and which belong to someone else (never touched).
 *
 * Format 2: a header line `profile-snapshot manifest 2<TAB><tool><TAB><base URL>` (who rendered the
 * documents, and for which base URL), a digest line `d<TAB><digest><TAB><bytes>` (below), then one
 * tab-separated line per entry:
 *   `f <path> <hash> <stamp>` for a document other than a profile, with the published file's inode,
 *     size and mtime;
 *   `u <name> <hash> <signature> <length>` for a profile (one entry for all its alias files): the row
 *     signature it was rendered from (empty when the row had warnings: always re-rendered) and, for a
 *     member of the creators list, the byte length of its data there. Members come first, in list
 *     order, so where each one's data sits in the list file follows from the lengths before it.
 * The value `-` marks an entry whose file may be half-way through a commit: ours, but to be
 * rewritten. A commit claims its files by appending such lines to the last manifest (see
 * writeClaims): a later line for the same key wins, and blank lines are skipped.
 * Format 1 (`u <name> <hash>`, `f <path> <hash>`) is still read: it has no signatures.
 *
 * The digest line (fixed width, filled in once the rest is written) holds a digest of every byte
 * after it and the file's size: a publish compares it with the digest its last state recorded, from
 * the header alone, instead of reading a million entries (publish/record/quiet.ts). It is the SHA-256
 * of those bytes, or, when the lines carried over were copied from the last manifest this process
 * wrote, chained from that one's digest (see WrittenDigest). Appended claims change the size, which
 * voids it. Readers that do not know the line skip it, as any line not `u` or `f`.
 */
import { closeSync, copyFileSync, fstatSync, lstatSync, openSync, readSync, statSync, writeSync, type BigIntStats } from 'node:fs';
import { dirname, join } from 'node:path';
import { outputError } from '../core/errors.js';
import { BufferedFileWriter } from './file-writer.js';
import { prepareDir, replaceFile } from './folders.js';
import { MANIFEST_FILE } from '../core/layout.js';
import { inSlice, type Slice } from '../core/slice.js';
import { EntryTableRecorder, HEADROOM, type RetiredTable } from './entry-table.js';
import { TableColumn, type ListOrder } from './list-order.js';
import { ProfileEntries } from './profile-entries.js';
import type { ReadonlyEntries } from './entry-map.js';
import { readInto } from '../core/read-into.js';
import { ProfileSectionWriter, type SectionRules } from './profile-section.js';
import { holdReplaced, releaseHeld } from './held-files.js';

const HEADER = 'profile-snapshot manifest 2';
const HEADER_V1 = 'profile-snapshot manifest 1';
export const PENDING = '-';
/** Bytes of the manifest read at a time: at a million profiles it is tens of megabytes, never held whole. */
const LINE_CHUNK = 512 * 1024;

export interface Manifest {
  /** The render key of the build that wrote it (core/render-key.ts; '' when unknown: format 1). */
  renderKey: string;
  /** lower-case username -> `hash<TAB>signature<TAB>length` (see profileEntry), or PENDING */
  profiles: ProfileEntries;
  /** path relative to the out dir -> `hash<TAB>stamp`, or PENDING */
  files: Map<string, string>;
  /**
   * The creators list's members in list order with the byte length of each one's data, when the
   * manifest lists them so (undefined otherwise: format 1, or entries out of order).
   */
  list: ListOrder | undefined;
  /** The digest line's digest, when the file has one and is still the size it records (see above). */
  digest?: string | undefined;
}

const emptyManifest = (): Manifest => ({ renderKey: '', profiles: new ProfileEntries(), files: new Map(), list: undefined });

/**
 * Entries are kept as the manifest line's own text, one string per profile: at a million profiles a
 * string costs far less than an object, and an unchanged entry is carried over without a copy.
 */
export function profileEntry(hash: string, signature: string, listLength: number | undefined): string {
  // join() gives one flat string; a template literal would keep a tree of pieces alive per entry,
  // and there is one entry per profile (BENCHMARKS.md measures the resident memory).
  return [hash, signature, listLength ?? ''].join('\t');
}

/** The data hash of a profile or file entry (PENDING stays PENDING). */
export function entryHash(entry: string): string {
  const tab = entry.indexOf('\t');
  return tab === -1 ? entry : entry.slice(0, tab);
}

/** Whether a profile entry was rendered from a row with this signature (never for an empty one). */
export function hasSignature(entry: string, signature: string): boolean {
  const at = entry.indexOf('\t') + 1;
  return signature !== '' && at > 0 && entry.startsWith(signature, at) && entry.charCodeAt(at + signature.length) === 9;
}

/** Whether a profile entry was rendered from a row that had warnings (it records no signature). */
export function isUnsigned(entry: string): boolean {
  const at = entry.indexOf('\t');
  return at === -1 || entry.charCodeAt(at + 1) === 9;
}

/** The byte length of a profile's data in the creators list, if the entry says it is a member. */
export function listLength(entry: string): number | undefined {
  const second = entry.indexOf('\t', entry.indexOf('\t') + 1);
  if (second === -1 || second === entry.length - 1) return undefined;
  const length = Number(entry.slice(second + 1));
  return Number.isSafeInteger(length) && length > 0 ? length : undefined;
}

/**
 * Whether listLength(entry) is defined, without cutting the length out in the common case (the
 * manifest is written with a million member entries every watch cycle).
 */
function hasListLength(entry: string): boolean {
  const second = entry.indexOf('\t', entry.indexOf('\t') + 1);
  const digits = entry.length - second - 1;
  if (second === -1 || digits === 0) return false;
  if (digits > 15) return listLength(entry) !== undefined;
  let positive = false;
  for (let i = second + 1; i < entry.length; i++) {
    const code = entry.charCodeAt(i);
    if (!isDigit(code)) return listLength(entry) !== undefined;
    positive ||= code !== 48;
  }
  return positive;
}

/** The stamp of a file entry, if it has one. */
export function fileEntryStamp(entry: string): string | undefined {
  const tab = entry.indexOf('\t');
  return tab === -1 ? undefined : entry.slice(tab + 1);
}

export function fileEntry(hash: string, stamp: string | undefined): string {
  return stamp === undefined ? hash : `${hash}\t${stamp}`;
}

/**
 * Which profiles a thread sharing a pass keeps from the manifest: its slice's, and the list's
 * members of that slice only, or all of them (`wholeList`: the owner's, which writes the whole list).
 * The list is judged usable or not on all of its members, as a whole read would.
 */
export interface ManifestSlice {
  slice: Slice;
  wholeList: boolean;
}

/**
 * Reads the manifest `chunkBytes` at a time (tests pass small chunks to cross every line boundary),
 * every profile's entry, or with `part` only those of one slice of the users.
 */
export function readManifest(outDir: string, chunkBytes = LINE_CHUNK, part?: ManifestSlice): Manifest {
  return withManifest(outDir, emptyManifest, (fd, path) => parseManifest(fd, path, chunkBytes, part));
}

/** `read` on the open manifest of `outDir`; `absent()` when it has none. */
function withManifest<T>(outDir: string, absent: () => T, read: (fd: number, path: string) => T): T {
  const path = join(outDir, MANIFEST_FILE);
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'ENOENT') return absent();
    throw unreadable(path, cause);
  }
  try {
    return read(fd, path);
  } finally {
    closeSync(fd);
  }
}

const unreadable = (path: string, cause: unknown) =>
  outputError(`cannot read the tool's manifest ${path}`, "check the out dir's permissions", cause);

/** One entry line as found: its key `[keyStart, tab)` and value `(tab, end)` in `text` (= `bytes`, latin1). */
type EntryVisitor = (kind: 'u' | 'f', text: string, bytes: Buffer, keyStart: number, tab: number, end: number) => void;

/**
 * Walks the manifest's entry lines in file order; returns its render key and its digest (when the
 * digest line is there and the file is still the size it records).
 */
function forEachEntry(
  fd: number,
  path: string,
  chunkBytes: number,
  entry: EntryVisitor,
): { renderKey: string; digest: string | undefined } {
  let renderKey: string | undefined,
    afterHeader = false,
    recorded: { digest: string; bytes: number } | undefined;
  const size = forEachLine(fd, path, chunkBytes, (text, bytes, start, end) => {
    if (renderKey === undefined) {
      const headerLine = bytes.toString('utf8', start, end);
      const fields = headerLine.split('\t');
      if (fields[0] !== HEADER && headerLine !== HEADER_V1) throw unrecognised(path);
      renderKey = fields[0] === HEADER ? fields.slice(1).join('\t') : '';
      afterHeader = true;
      return;
    }
    if (afterHeader) {
      afterHeader = false;
      recorded = parseDigestLine(text.slice(start, end));
      if (recorded !== undefined) return;
    }
    // A line the tool wrote starts with its kind and a tab. Any other (a blank one) is skipped at
    // once: searching it for a tab would run on through the lines after it.
    const kind = text.charCodeAt(start);
    if (end - start < 2 || text.charCodeAt(start + 1) !== TAB || (kind !== PROFILE_LINE && kind !== FILE_LINE)) return;
    // Names and paths never hold a tab: the key ends at the second one, the value is the rest.
    const tab = text.indexOf('\t', start + 2);
    if (tab === -1 || tab >= end) return;
    entry(kind === PROFILE_LINE ? 'u' : 'f', text, bytes, start + 2, tab, end);
  });
  if (renderKey === undefined) throw unrecognised(path); // an empty file
  return { renderKey, digest: recorded !== undefined && recorded.bytes === size ? recorded.digest : undefined };
}

function parseManifest(fd: number, path: string, chunkBytes: number, part: ManifestSlice | undefined): Manifest {
  const manifest = emptyManifest();
  // List members come first, in list order; any that do not are not used as a list.
  const list = { names: [] as string[], lengths: [] as number[], entries: [] as string[] };
  const inPart = (name: string) => part === undefined || inSlice(name, part.slice);
  const wholeList = part === undefined || part.wholeList;
  let membersInOrder = true,
    membersEnded = false,
    lastMember = '';
  const { renderKey, digest } = forEachEntry(fd, path, chunkBytes, (kind, text, bytes, keyStart, tab, end) => {
    const key = own(text, bytes, keyStart, tab),
      value = own(text, bytes, tab + 1, end);
    if (kind === 'f') {
      manifest.files.set(key, value);
      return;
    }
    const kept = inPart(key);
    if (kept) manifest.profiles.set(key, value);
    const length = membersInOrder ? listLength(value) : undefined;
    if (length === undefined) {
      membersEnded = true;
    } else if (membersEnded || (lastMember !== '' && !(lastMember < key))) {
      membersInOrder = false;
    } else {
      lastMember = key;
      if (kept || wholeList) {
        list.names.push(key);
        list.lengths.push(length);
        list.entries.push(value);
      }
    }
  });
  manifest.renderKey = renderKey;
  manifest.list = membersInOrder && renderKey !== '' ? list : undefined;
  manifest.digest = digest;
  return manifest;
}

/**
 * The manifest's entries without keeping them: each profile's name and data hash as ranges of
 * `bytes` (valid during the call only), each file's path and entry, in file order (a later line for
 * the same key wins). Returns the manifest's digest (see readManifest); undefined when there is none.
 */
export function scanManifest(
  outDir: string,
  profile: (bytes: Buffer, nameStart: number, tab: number, hashEnd: number) => void,
  file: (path: string, entry: string) => void,
): { digest: string | undefined } | undefined {
  return withManifest<{ digest: string | undefined } | undefined>(
    outDir,
    () => undefined,
    (fd, path) => {
      const { digest } = forEachEntry(fd, path, LINE_CHUNK, (kind, text, bytes, keyStart, tab, end) => {
        if (kind === 'f') return file(own(text, bytes, keyStart, tab), own(text, bytes, tab + 1, end));
        // The entry's data hash: up to its next tab (entryHash).
        const hashEnd = text.indexOf('\t', tab + 1);
        profile(bytes, keyStart, tab, hashEnd === -1 || hashEnd > end ? end : hashEnd);
      });
      return { digest };
    },
  );
}

/**
 * `text.slice(from, to)` as a string of its own. V8 makes a slice of 13 characters or more a view that
 * keeps its whole parent alive, and every kept entry is carried into the next manifest: sliced from
 * one text, they kept the whole manifest text alive to the end of the build. Shorter slices are
 * copies anyway.
 */
const own = (text: string, bytes: Buffer, from: number, to: number) =>
  to - from < 13 ? text.slice(from, to) : bytes.toString('latin1', from, to);

/** Character codes that open a manifest line: `u<TAB>`, `f<TAB>`. */
const PROFILE_LINE = 117,
  FILE_LINE = 102,
  TAB = 9;

const unrecognised = (path: string) =>
  outputError(
    `unrecognised manifest ${path}`,
    `it was not written by this version of profile-snapshot; delete the out dir's ${MANIFEST_FILE} and the files it listed, then rebuild`,
  );

/**
 * Calls `line` for each line of the file (its last one too, if it has no newline) with `[start, end)`
 * in `text`, which is `bytes` read one latin1 character per byte, so positions in one are positions
 * in the other. Past the header every byte is ASCII (names and paths are, by the store's rules and
 * ours). Lines are scanned in place, a chunk at a time: one string per line was
 * megabytes of garbage promoted to the old generation, and the whole file as one string (and its
 * bytes beside it) was as large again as the manifest's entries at their peak. Returns the bytes read.
 */
function forEachLine(
  fd: number,
  path: string,
  chunkBytes: number,
  line: (text: string, bytes: Buffer, start: number, end: number) => void,
): number {
  let bytes = Buffer.allocUnsafe(chunkBytes);
  let held = 0; // the start of a line the last chunk ended in, moved to the front
  let total = 0;
  for (;;) {
    // A line longer than a chunk (not one the tool writes) grows it.
    if (held === bytes.length) bytes = Buffer.concat([bytes, Buffer.allocUnsafe(bytes.length)]);
    let read: number;
    try {
      read = readSync(fd, bytes, held, bytes.length - held, null);
    } catch (cause) {
      throw unreadable(path, cause);
    }
    const filled = held + read;
    total += read;
    const text = bytes.toString('latin1', 0, filled);
    let start = 0;
    for (let end = text.indexOf('\n'); end !== -1; end = text.indexOf('\n', start)) {
      line(text, bytes, start, end);
      start = end + 1;
    }
    if (read === 0) {
      if (start < filled) line(text, bytes, start, filled);
      return total;
    }
    bytes.copy(bytes, 0, start, filled);
    held = filled - start;
  }
}

/**
 * Replaces the manifest atomically (temporary file, then rename), streaming it out. Profile lines
 * that are rows of `manifest.profiles`' table (carried over unchanged) are copied from there in runs.
 * With `keep`, returns the manifest as written, for a watcher's next build to take back (see
 * WrittenManifest); undefined when it cannot be held so (no creators list: the lines are then in no
 * order a table can search).
 */
export function writeManifest(outDir: string, manifest: Manifest, keep = false): WrittenManifest | undefined {
  let kept: WrittenManifest | undefined;
  // A watcher writes it into the memory of the one it replaced last cycle (held-files.ts).
  if (keep) releaseHeld(outDir, MANIFEST_FILE);
  replaceManifest(outDir, 'new', (out, temporary) => {
    const header = `${HEADER}\t${manifest.renderKey}\n`;
    out.write(header);
    out.write(digestLine('0'.repeat(DIGEST_HEX), 0));
    const digest = out.digestFromHere(manifest.profiles.base.origin);
    // Each line is encoded straight into the writer's buffer: a string per line was tens of
    // megabytes of garbage every watch cycle at a million profiles.
    for (const [key, entry] of manifest.files) out.writeTabbedLine('f', key, entry);
    // List members first, in list order (see the format above), then every other profile.
    const { list, profiles } = manifest;
    const members = list?.names.length ?? 0;
    const sectionAt = out.bytesWritten;
    // Its rows are noted into the columns of the table retired a cycle ago, when the last one has them.
    const recorder = keep && members > 0 ? new EntryTableRecorder(profiles.size, members, profiles.base.takeSpareColumns()) : undefined;
    const section = new ProfileSectionWriter(out, profiles, SECTION_RULES, recorder);
    if (list !== undefined) section.members(list);
    section.others(members === 0);
    out.close();
    const hex = digest.hex();
    fillDigestLine(temporary, Buffer.byteLength(header), hex);
    if (recorder !== undefined) kept = new WrittenManifest(join(outDir, MANIFEST_FILE), sectionAt, recorder, manifest, list!, hex);
    // Written whole, it is renamed over the current manifest, which is held for the next cycle as
    // a commit holds the list it renames over. Only the replaced file gets a second link: the next
    // commit's claims still append in place to the file written here (appendInPlace).
    if (keep) holdReplaced(outDir, MANIFEST_FILE);
  });
  return kept;
}

/**
 * A manifest as this process wrote it, for its next build to take back: everything but its profile
 * lines, and where each of those lines is in the file. The lines are read back when taken, once the
 * build that wrote them is gone: a watcher holds one copy of them at a time, and between its cycles
 * (while a publish runs) none.
 */
export class WrittenManifest {
  private readonly renderKey: string;
  private readonly files: Map<string, string>;
  private readonly hashes: Buffer | undefined;
  private readonly pieceMarks: Uint8Array | undefined;
  private readonly made: number | undefined;

  constructor(
    private readonly file: string,
    private readonly sectionAt: number,
    private readonly lines: EntryTableRecorder,
    written: Manifest,
    list: ListOrder,
    /** The digest its digest line holds. */
    private readonly digest: string,
  ) {
    this.renderKey = written.renderKey;
    this.files = written.files;
    this.hashes = list.hashes;
    this.pieceMarks = list.pieceMarks;
    this.made = list.made;
  }

  /**
   * The manifest, its profile lines read back from the file (the caller knows it is the one written:
   * same inode, size and mtime) into `spare`'s bytes when they are large enough (a retired table's,
   * see EntryTable.retire), its columns kept for the next manifest's rows; undefined when the lines
   * are not where they were written.
   */
  read(spare?: RetiredTable): Manifest | undefined {
    const length = this.lines.bytes;
    // Room to grow into: the next cycle's lines go into the same memory.
    const into = spare !== undefined && spare.bytes.length >= length ? spare.bytes : Buffer.allocUnsafeSlow(Math.ceil(length * HEADROOM));
    const origin = `${this.digest}\t${this.sectionAt}`;
    const table = this.lines.table(readRange(this.file, this.sectionAt, into.subarray(0, length)), origin, spare?.columns);
    if (table === undefined) return undefined;
    const count = table.memberCount;
    const list: ListOrder = {
      names: new TableColumn(table, 'name', count),
      entries: new TableColumn(table, 'entry', count),
      lengths: table.memberLengths,
      table,
      ...(this.hashes && { hashes: this.hashes }),
      ...(this.pieceMarks && { pieceMarks: this.pieceMarks }),
      ...(this.made !== undefined && { made: this.made }),
    };
    return { renderKey: this.renderKey, files: this.files, profiles: new ProfileEntries(table), list };
  }
}

/** Whether a profile entry records no list length: the profile is not a member. */
// A member's entry ends in its length, any other in a tab (or its hash: format 1).
const isOther = (entry: string): boolean => !isDigit(entry.charCodeAt(entry.length - 1)) || !hasListLength(entry);

/**
 * isOther for an entry an EntryMap keeps as bytes, told from them when it ends in a tab or has a
 * member's shape as this tool writes it; any other by the rule above, from a string made for it
 * (every changed profile's entry is looked at so, each watch cycle).
 */
function isOtherRow(entries: ReadonlyEntries, row: number): boolean {
  const length = entries.entryLength(row);
  if (length > 0) {
    const bytes = entries.slotChunk(row);
    const start = entries.slotStart(row);
    if (bytes[start + length - 1] === TAB) return true;
    if (hasMemberShape(bytes, start, start + length)) return false;
  }
  return isOther(entries.entryAt(row));
}

/**
 * Whether bytes [start, end) are `hash<TAB>signature<TAB>length`, the length 1 to 15 digits and not
 * zero, with no other tab: an entry hasListLength accepts (it accepts a few more shapes besides).
 */
function hasMemberShape(bytes: Uint8Array, start: number, end: number): boolean {
  let at = end - 1;
  let positive = false;
  for (; at >= start && isDigit(bytes[at]!); at--) positive ||= bytes[at] !== 48;
  if (!positive || end - 1 - at > 15 || at < start || bytes[at] !== TAB) return false;
  let tabs = 0;
  for (let i = start; i < at; i++) if (bytes[i] === TAB) tabs++;
  return tabs === 1;
}

/** Which entries are members' (manifest.ts's rules, for the profile section's writer). */
const SECTION_RULES: SectionRules = { isOtherRow, pending: PENDING };

/** Fills `into` with the bytes of `path` from `at`. */
function readRange(path: string, at: number, into: Buffer): Buffer {
  const fd = openSync(path, 'r');
  try {
    readInto(fd, at, into);
  } finally {
    closeSync(fd);
  }
  return into;
}

const DIGEST_HEX = 64;
const SIZE_DIGITS = 15;

/** The digest line, fixed width (written as a placeholder first, filled in at the end). */
const digestLine = (hex: string, bytes: number) => `d\t${hex}\t${String(bytes).padStart(SIZE_DIGITS, '0')}\n`;

function parseDigestLine(line: string): { digest: string; bytes: number } | undefined {
  const [kind, digest, bytes] = line.split('\t');
  if (kind !== 'd' || digest?.length !== DIGEST_HEX || bytes?.length !== SIZE_DIGITS) return undefined;
  return { digest, bytes: Number(bytes) };
}

/** Fills in the digest line of a closed manifest file: the digest of every byte after it, and the file's size. */
function fillDigestLine(path: string, at: number, digest: string): void {
  const fd = openSync(path, 'r+');
  try {
    writeSync(fd, digestLine(digest, fstatSync(fd).size), at);
  } finally {
    closeSync(fd);
  }
}

/**
 * The manifest's digest from its first two lines only, when it has one and is still the size the
 * digest line records (claims appended since void it); undefined otherwise (no manifest, format 1,
 * a build's claims pending).
 */
export function readManifestDigest(outDir: string): string | undefined {
  const head = readHead(outDir);
  if (head === undefined) return undefined;
  const recorded = parseDigestLine(head.digestLine);
  return recorded !== undefined && recorded.bytes === head.size ? recorded.digest : undefined;
}

/** The render key in the manifest's header (core/render-key.ts), without reading its entries. */
export function readManifestRenderKey(outDir: string): string | undefined {
  return readHead(outDir)?.renderKey;
}

/** The manifest's first two lines (format 2 only) and its size. */
function readHead(outDir: string): { renderKey: string; digestLine: string; size: number } | undefined {
  let fd: number;
  try {
    fd = openSync(join(outDir, MANIFEST_FILE), 'r');
  } catch {
    return undefined;
  }
  try {
    const head = Buffer.alloc(8192);
    const text = head.toString('latin1', 0, readSync(fd, head, 0, head.length, 0));
    const first = text.indexOf('\n');
    const second = text.indexOf('\n', first + 1);
    if (first === -1 || second === -1 || !text.startsWith(`${HEADER}\t`)) return undefined;
    return { renderKey: text.slice(HEADER.length + 1, first), digestLine: text.slice(first + 1, second), size: fstatSync(fd).size };
  } finally {
    closeSync(fd);
  }
}

const isDigit = (code: number) => code >= 48 && code <= 57;

/**
 * Claims files for a commit: the manifest on disk as it is, with a line per file appended that marks
 * it pending (a later line wins). Appended in place when the file is the out dir's alone
 * (`appendInPlace`), else onto a copy that replaces it atomically like `writeManifest`. False, with
 * nothing written, when there is no manifest file to extend.
 */
export function writeClaims(outDir: string, claims: { profiles: readonly string[]; files: readonly string[] }): boolean {
  const write = (out: BufferedFileWriter) => {
    // A blank line first: it ends a last line that has no newline (a claim cut short by a crash).
    out.write('\n');
    for (const key of claims.files) out.write(`f\t${key}\t${PENDING}\n`);
    for (const key of claims.profiles) out.write(`u\t${key}\t${PENDING}\n`);
  };
  return appendInPlace(outDir, write) || replaceManifest(outDir, 'extended', write);
}

/**
 * Appends to the manifest file itself when nothing else shares it: a regular file with one link (a
 * pin links the manifest of the generation it keeps, pin.ts, which must not change). Copying the
 * whole manifest first was a second manifest write in every commit. An append cut short leaves a
 * last claim cut short, read as an entry of no known hash, or not at all when its key is cut: the
 * file it names is rewritten, or was not touched yet (files move only once the claims are written).
 * False when it cannot append this way.
 */
function appendInPlace(outDir: string, write: (out: BufferedFileWriter) => void): boolean {
  const path = join(outDir, MANIFEST_FILE);
  prepareDir(outDir, dirname(path));
  let stats;
  try {
    stats = lstatSync(path);
  } catch {
    return false;
  }
  if (!stats.isFile() || stats.nlink !== 1) return false;
  writeThrough(new BufferedFileWriter(path, undefined, 'a'), write);
  return true;
}

/**
 * Replaces the manifest atomically: `write` fills a temporary file, a new one or (`extended`) a copy
 * of the manifest as it is, which is then renamed over it. A failed write (disk full) leaves no
 * partial temporary file behind, and the manifest intact. False when there is no manifest to extend.
 */
function replaceManifest(outDir: string, start: 'new' | 'extended', write: (out: BufferedFileWriter, temporary: string) => void): boolean {
  const path = join(outDir, MANIFEST_FILE);
  return replaceFile(outDir, path, (temporary) => {
    if (start === 'extended' && !copyIfPresent(path, temporary)) return false;
    writeThrough(new BufferedFileWriter(temporary, undefined, start === 'extended' ? 'a' : 'w'), (out) => write(out, temporary));
  });
}

/** Runs `write` on `out`, then closes it; a failed write's error is the one thrown. */
function writeThrough(out: BufferedFileWriter, write: (out: BufferedFileWriter) => void): void {
  try {
    write(out);
  } catch (error) {
    try {
      out.close();
    } catch {
      // the write already failed; the descriptor is closed either way
    }
    throw error;
  }
  out.close();
}

/** Copies `from` to `to`; false when there is no `from`. */
function copyIfPresent(from: string, to: string): boolean {
  try {
    copyFileSync(from, to);
    return true;
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw cause;
  }
}

/** Identifies one written file (inode, size, mtime): any rewrite, by anyone, changes it. */
export function fileStamp(path: string): string | undefined {
  try {
    return stampOf(statSync(path, { bigint: true }));
  } catch {
    return undefined;
  }
}

/** The same stamp from the file's stats (an open file's, say). */
export const stampOf = (stats: BigIntStats): string => `${stats.ino}:${stats.size}:${stats.mtimeNs}`;

/** The size of the out dir's manifest (0 when there is none): how many profiles the last build published, roughly. */
export function manifestBytes(outDir: string): number {
  try {
    return statSync(join(outDir, MANIFEST_FILE)).size;
  } catch {
    return 0;
  }
}

export function manifestStamp(outDir: string): string | undefined {
  return fileStamp(join(outDir, MANIFEST_FILE));
}
