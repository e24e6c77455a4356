/**
 * The profile pass of the audit: for each name found in the users folders, its alias files are read
 * (a hard link to the first alias is not read again), compared, parsed and validated once, and what
 * the creators list check needs is kept as one number (see `key`). Pure over its inputs, so a share
 * of the names can be audited in a worker thread (./profiles-worker.ts) while the rest is done here.
 */
import { closeSync, fstatSync, lstatSync, openSync, readFileSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { describeCause } from '../core/errors.js';
import { PROFILE_DIRS } from '../core/layout.js';
import { SUCCESS_HEAD } from '../render/documents.js';
import { isPublishableUsername } from '../render/user.js';
import type { Defect } from './audit.js';
import { describeErrors, validator } from './schemas.js';

/** What a users folder holds under a name (one byte per name and alias folder). */
export const ABSENT = 0, FILE = 1, FOLDER = 2, SYMLINK = 3, OTHER = 4;

/**
 * Per profile: fingerprint * FLAGS + flags (arithmetic, not bitwise: the fingerprint has 48 bits).
 * VALID: the document matched its schema, so a list entry with the very same bytes is a valid User.
 */
export const ACTIVE = 1, SEEN = 2, VALID = 4;
export const FLAGS = 8;
export const has = (key: number, flag: number) => Math.floor(key % FLAGS / flag) % 2 === 1;
export const fingerprint = (key: number) => Math.floor(key / FLAGS);

/**
 * A 48-bit fingerprint of a User object's JSON as the build writes it (JSON.stringify, no spaces):
 * what the creators list check keeps per profile. Two FNV-1a lanes; it only has to tell a changed
 * entry from its profile (a miss is 1 in 2^48), not resist an adversary.
 */
export function userKey(json: Buffer): number {
  let a = 0x811c9dc5, b = 0x9747b28c ^ json.length;
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

/**
 * Audits `names`; `types[i * PROFILE_DIRS.length + d]` says what alias folder `d` holds under
 * `names[i]` (ABSENT, FILE, ...).
 */
export function auditProfiles(out: string, names: readonly string[], types: Uint8Array): ProfilePass {
  const result: ProfilePass = { defects: [], names: [], keys: [], files: 0, threads: 1 };
  const defect = (kind: Defect['kind'], path: string, message: string) => result.defects.push({ kind, path, message });
  const profileValidator = validator('ProfileResponse');
  const dirs = PROFILE_DIRS.length;

  names.forEach((name, n) => {
    const present: { path: string; bytes: Buffer }[] = [];
    let firstFile: { bytes: Buffer; ino: number; dev: number } | undefined;
    for (let d = 0; d < dirs; d++) {
      const type = types[n * dirs + d]!;
      const path = `${PROFILE_DIRS[d]}/${name}`;
      if (type === ABSENT) {
        const have = PROFILE_DIRS.filter((_, j) => types[n * dirs + j] !== ABSENT).map((dir) => `${dir}/${name}`).join(', ');
        defect('alias-missing', path, `missing, while ${have} exists: every profile must be published under every alias path, or requests there answer 404`);
        continue;
      }
      if (type !== FILE) {
        defect('stray', path, `${type === FOLDER ? 'a folder' : type === SYMLINK ? 'a symbolic link' : 'not a regular file'} in a users folder: only profile files belong there${type === SYMLINK ? ' (Netlify deploys do not follow symbolic links)' : ''}`);
        continue;
      }
      result.files++;
      const file = join(out, path);
      if (firstFile === undefined) {
        firstFile = readWithInode(file);
        present.push({ path, bytes: firstFile.bytes });
        continue;
      }
      // Hard links to the first alias (how build writes them) hold its bytes: no second read.
      const stats = lstatSync(file);
      if (stats.ino === firstFile.ino && stats.dev === firstFile.dev) continue;
      present.push({ path, bytes: readFileSync(file) });
    }
    if (present.length === 0) return;
    const first = present[0]!;
    const differing = present.slice(1).filter((p) => !p.bytes.equals(first.bytes));
    for (const p of differing) {
      defect('alias-differs', p.path, `differs from ${first.path}: the alias paths must answer the same bytes (${p.bytes.length} vs ${first.bytes.length} bytes)`);
    }
    const key = auditProfile(first.path, name, first.bytes);
    for (const p of differing) auditProfile(p.path, name, p.bytes);
    if (key !== undefined) {
      result.names.push(name);
      result.keys.push(key);
    }
  });
  return result;

  function auditProfile(path: string, name: string, bytes: Buffer): number | undefined {
    let doc: any;
    try {
      doc = JSON.parse(bytes.toString('utf8'));
    } catch (cause) {
      defect('unparseable', path, `does not parse as JSON (${describeCause(cause)}; ${bytes.length} bytes): a truncated or corrupted profile`);
      return undefined;
    }
    const username: unknown = doc?.data?.username;
    let usernameReported = false;
    if (typeof username === 'string') {
      if (!isPublishableUsername(username)) {
        usernameReported = true;
        defect('unpublishable', path, `publishes the username ${JSON.stringify(username)}, which is not publishable (1-64 of A-Z a-z 0-9 . _ -, not starting with "."): it must not be served`);
      } else if (username.toLowerCase() !== name) {
        usernameReported = true;
        defect('file-name', path, `the file name ${JSON.stringify(name)} is not the lower-cased username inside it (${JSON.stringify(username)}): requests for ${JSON.stringify(name)} would answer another user's profile`);
      }
    }
    const valid = profileValidator(doc);
    if (!valid) {
      const errors = (profileValidator.errors ?? []).filter((e) => !(usernameReported && e.instancePath === '/data/username'));
      if (errors.length > 0) defect('schema', path, `does not match ProfileResponse: ${describeErrors(errors)}`);
    }
    if (typeof doc?.data !== 'object' || doc.data === null) return undefined;
    return userKey(dataBytes(bytes, doc)) * FLAGS + (doc.data.status === 'active' ? ACTIVE : 0) + (valid && !usernameReported ? VALID : 0);
  }
}
