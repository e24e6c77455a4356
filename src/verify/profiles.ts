/**
 * The profile pass of the audit: for each name found in the users folders, its alias files are read
 * (a hard link to the first alias is not read again), compared, parsed and validated once, and what
 * the creators list check needs is kept as one number (see `key`). Pure over its inputs, so a share
 * of the names can be audited in a worker thread (./profiles-worker.ts) while the rest is done here.
 */
import type { ValidateFunction } from 'ajv/dist/2020.js';
import { closeSync, fstatSync, lstatSync, openSync, readFileSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { describeCause } from '../core/errors.js';
import { PROFILE_DIRS } from '../core/layout.js';
import { SUCCESS_HEAD } from '../render/documents.js';
import { isPublishableUsername } from '../render/user.js';
import type { Defect, DefectKind } from './defects.js';
import { describeErrors, validator } from './schemas.js';

/** What a users folder holds under a name (one byte per name and alias folder). */
export const ABSENT = 0,
  FILE = 1,
  FOLDER = 2,
  SYMLINK = 3,
  OTHER = 4;

/**
 * Per profile: fingerprint * FLAGS + flags (arithmetic, not bitwise: the fingerprint has 48 bits).
 * VALID: the document matched its schema, so a list entry with the very same bytes is a valid User.
 */
export const ACTIVE = 1,
  SEEN = 2,
  VALID = 4;
export const FLAGS = 8;
export const has = (key: number, flag: number) => Math.floor((key % FLAGS) / flag) % 2 === 1;
export const fingerprint = (key: number) => Math.floor(key / FLAGS);

/**
 * A 48-bit fingerprint of a User object's JSON as the build writes it (JSON.stringify, no spaces):
 * what the creators list check keeps per profile. Two FNV-1a lanes; it only has to tell a changed
 * entry from its profile (a miss is 1 in 2^48), not resist an adversary.
 */
export function userKey(json: Buffer): number {
  let a = 0x811c9dc5,
    b = 0x9747b28c ^ json.length;
  for (let i = 0; i < json.length; i++) {
    const byte = json[i]!;
    a = Math.imul(a ^ byte, 0x01000193);
    b = Math.imul(b ^ byte, 0x5bd1e995);
  }
  return (a >>> 0) * 0x10000 + ((b ^ (b >>> 15)) & 0xffff);
}
export const canonicalKey = (user: unknown) => userKey(Buffer.from(JSON.stringify(user)));

const SUCCESS_HEAD_BYTES = Buffer.from(SUCCESS_HEAD);
const META_MEMBER = Buffer.from(',"meta":');

/** The data member's bytes of a profile document written by build, else its canonical JSON. */
function dataBytes(bytes: Buffer, doc: { data: unknown }): Buffer {
  if (bytes.subarray(0, SUCCESS_HEAD_BYTES.length).equals(SUCCESS_HEAD_BYTES)) {
    const end = bytes.lastIndexOf(META_MEMBER);
    // A schema-valid User cannot hold `,"meta":` outside a string (inside one the quotes are escaped).
    if (end > SUCCESS_HEAD_BYTES.length) return bytes.subarray(SUCCESS_HEAD_BYTES.length, end);
  }
  return Buffer.from(JSON.stringify(doc.data));
}

/** Reads a file with its inode, so an alias that is a hard link to it need not be read again. */
function readWithInode(path: string): { bytes: Buffer; ino: number; dev: number } {
  const fd = openSync(path, 'r');
  try {
    const stats = fstatSync(fd);
    const bytes = Buffer.allocUnsafe(stats.size);
    let n = 0;
    while (n < stats.size) {
      const read = readSync(fd, bytes, n, stats.size - n, null);
      if (read === 0) break;
      n += read;
    }
    return { bytes: n === stats.size ? bytes : bytes.subarray(0, n), ino: stats.ino, dev: stats.dev };
  } finally {
    closeSync(fd);
  }
}

export interface ProfilePass {
  defects: Defect[];
  /** Names with a parsed document, and their keys (same order). */
  names: string[];
  keys: number[];
  /** Regular files looked at. */
  files: number;
  /** Threads that did the pass (2 when a worker took a share). */
  threads: number;
}

/** Reports a defect found in a profile file. */
type Report = (kind: DefectKind, path: string, message: string) => void;

/**
 * Audits `names`; `types[i * PROFILE_DIRS.length + d]` says what alias folder `d` holds under
 * `names[i]` (ABSENT, FILE, ...).
 */
export function auditProfiles(out: string, names: readonly string[], types: Uint8Array): ProfilePass {
  const result: ProfilePass = { defects: [], names: [], keys: [], files: 0, threads: 1 };
  const report: Report = (kind, path, message) => result.defects.push({ kind, path, message });
  const profileValidator = validator('ProfileResponse');
  names.forEach((name, n) => {
    const aliases = readAliases(out, name, types.subarray(n * PROFILE_DIRS.length, (n + 1) * PROFILE_DIRS.length), report);
    result.files += aliases.files;
    if (aliases.present.length === 0) return;
    const first = aliases.present[0]!;
    const differing = aliases.present.slice(1).filter((p) => !p.bytes.equals(first.bytes));
    for (const p of differing) {
      report(
        'alias-differs',
        p.path,
        `differs from ${first.path}: the alias paths must answer the same bytes (${p.bytes.length} vs ${first.bytes.length} bytes)`,
      );
    }
    const key = auditProfile(first.path, name, first.bytes, profileValidator, report);
    for (const p of differing) auditProfile(p.path, name, p.bytes, profileValidator, report);
    if (key !== undefined) {
      result.names.push(name);
      result.keys.push(key);
    }
  });
  return result;
}

/**
 * The alias files of one name that are regular files, read once each: a hard link to the first
 * (how build writes them) holds its bytes and is not read again. `types` holds one byte per alias.
 */
function readAliases(
  out: string,
  name: string,
  types: Uint8Array,
  report: Report,
): { present: { path: string; bytes: Buffer }[]; files: number } {
  const present: { path: string; bytes: Buffer }[] = [];
  let files = 0;
  let firstFile: { bytes: Buffer; ino: number; dev: number } | undefined;
  PROFILE_DIRS.forEach((dir, d) => {
    const type = types[d]!;
    const path = `${dir}/${name}`;
    if (type === ABSENT) {
      const have = PROFILE_DIRS.filter((_, j) => types[j] !== ABSENT)
        .map((other) => `${other}/${name}`)
        .join(', ');
      report(
        'alias-missing',
        path,
        `missing, while ${have} exists: every profile must be published under every alias path, or requests there answer 404`,
      );
      return;
    }
    if (type !== FILE) {
      report(
        'stray',
        path,
        `${type === FOLDER ? 'a folder' : type === SYMLINK ? 'a symbolic link' : 'not a regular file'} in a users folder: only profile files belong there${type === SYMLINK ? ' (Netlify deploys do not follow symbolic links)' : ''}`,
      );
      return;
    }
    files++;
    const file = join(out, path);
    if (firstFile === undefined) {
      firstFile = readWithInode(file);
      present.push({ path, bytes: firstFile.bytes });
      return;
    }
    const stats = lstatSync(file);
    if (stats.ino === firstFile.ino && stats.dev === firstFile.dev) return;
    present.push({ path, bytes: readFileSync(file) });
  });
  return { present, files };
}

/** Parses and validates one profile file; its key (see `key` above) when it has a data object. */
function auditProfile(path: string, name: string, bytes: Buffer, profileValidator: ValidateFunction, report: Report): number | undefined {
  let doc: any;
  try {
    doc = JSON.parse(bytes.toString('utf8'));
  } catch (cause) {
    report(
      'unparseable',
      path,
      `does not parse as JSON (${describeCause(cause)}; ${bytes.length} bytes): a truncated or corrupted profile`,
    );
    return undefined;
  }
  const usernameReported = checkUsername(path, name, doc?.data?.username, report);
  const valid = profileValidator(doc);
  if (!valid) {
    const errors = (profileValidator.errors ?? []).filter((e) => !(usernameReported && e.instancePath === '/data/username'));
    if (errors.length > 0) report('schema', path, `does not match ProfileResponse: ${describeErrors(errors)}`);
  }
  if (typeof doc?.data !== 'object' || doc.data === null) return undefined;
  return userKey(dataBytes(bytes, doc)) * FLAGS + (doc.data.status === 'active' ? ACTIVE : 0) + (valid && !usernameReported ? VALID : 0);
}

/** Whether the published username is wrong for its file (reported here, not again as a schema error). */
function checkUsername(path: string, name: string, username: unknown, report: Report): boolean {
  if (typeof username !== 'string') return false;
  if (!isPublishableUsername(username)) {
    report(
      'unpublishable',
      path,
      `publishes the username ${JSON.stringify(username)}, which is not publishable (1-64 of A-Z a-z 0-9 . _ -, not starting with "."): it must not be served`,
    );
    return true;
  }
  if (username.toLowerCase() !== name) {
    report(
      'file-name',
      path,
      `the file name ${JSON.stringify(name)} is not the lower-cased username inside it (${JSON.stringify(username)}): requests for ${JSON.stringify(name)} would answer another user's profile`,
    );
    return true;
  }
  return false;
}
