/**
 * Where every document lives under the out dir. The hosting route table reads these too, so a path
 * is spelled in exactly one place.
 */
import type { ErrorCode } from '../render/documents.js';

/**
 * A profile's file name: a publishable username (spec/profile-store.md: 1-64 of A-Z a-z 0-9 . _ -,
 * not starting with ".") in lower case. The route table and the output tree both rely on it: it can
 * never be a path other than one file in a users folder.
 */
export const CANONICAL_USERNAME = /^[a-z0-9_-][a-z0-9._-]{0,63}$/;

/** Each published profile is written, byte-identical, under every alias folder. */
export const PROFILE_DIRS = ['api/v1/users', 'service-api/v1/users'] as const;

export const CREATORS_FILE = 'service-api/v1/creators';

/** Error documents sit outside the users folders so a username can never collide with one. */
export const ERRORS_DIR = '_errors';
export function errorFile(code: ErrorCode): string {
  return `${ERRORS_DIR}/${code.toLowerCase().replaceAll('_', '-')}.json`;
}

/**
 * The tool's own bookkeeping (manifest, staging area, lock, status). A dot folder: the origin server
 * refuses dot paths and Netlify's deploy skips them, so it is never served or uploaded.
 */
export const STATE_DIR = '.profile-snapshot';
export const MANIFEST_FILE = `${STATE_DIR}/manifest`;
export const STAGING_DIR = `${STATE_DIR}/staging`;
