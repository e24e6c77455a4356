/**
 * The audit's check of the creators list, streamed and never held as one string: each entry must be
 * an active user's profile data, byte for byte or as the same object, in order, once; and every
 * active profile must be in it. What it needs from the profiles is one number each (./profiles.ts).
 */
import { join } from 'node:path';
import { CREATORS_FILE, PROFILE_DIRS } from '../core/layout.js';
import { isPublishableUsername } from '../render/user.js';
import type { Findings } from './defects.js';
import { fileExists } from './documents-check.js';
import { JsonStreamError, parseElement, scanEnvelope } from './json-stream.js';
import { ACTIVE, canonicalKey, fingerprint, has, SEEN, userKey, VALID } from './profiles.js';
import { describeErrors, validator } from './schemas.js';

const USERNAME_HEAD = Buffer.from('{"username":"');
const FIRST_DIR = PROFILE_DIRS[0];

/** The username of a list entry written by build (its first member), without parsing it; else undefined. */
function quickUsername(raw: Buffer): string | undefined {
  if (!raw.subarray(0, USERNAME_HEAD.length).equals(USERNAME_HEAD)) return undefined;
  const end = raw.indexOf(0x22, USERNAME_HEAD.length);
  if (end === -1 || end - USERNAME_HEAD.length > 64) return undefined;
  const name = raw.toString('latin1', USERNAME_HEAD.length, end);
  return isPublishableUsername(name) ? name : undefined;
}

/**
 * Checks the list against `profiles` (lower-cased name -> key), marking each profile it names as
 * SEEN. Returns the number of entries.
 */
export function checkCreatorsList(out: string, profiles: Map<string, number>, findings: Findings): number {
  const listPath = join(out, CREATORS_FILE);
  if (!fileExists(listPath)) {
    findings.defect('missing', CREATORS_FILE, 'the creators list (operation 2) is missing: /service-api/v1/creators would answer 404');
    return 0;
  }
  const entries = new EntryCheck(profiles, findings);
  try {
    const scan = scanEnvelope(listPath, (raw, index, offset) => entries.check(raw, index, offset));
    const envelope = Object.fromEntries(scan.members);
    if (scan.dataArray) envelope.data = [];
    const listValidator = validator('CreatorsResponse');
    if (!listValidator(envelope))
      findings.defect('schema', CREATORS_FILE, `does not match CreatorsResponse: ${describeErrors(listValidator.errors)}`);
  } catch (cause) {
    if (!(cause instanceof JsonStreamError)) throw cause;
    findings.defect('unparseable', CREATORS_FILE, `does not parse as JSON (${cause.message}): a truncated or corrupted creators list`);
    return entries.count;
  }
  checkEveryActiveListed(profiles, findings);
  return entries.count;
}

function checkEveryActiveListed(profiles: Map<string, number>, findings: Findings): void {
  for (const [name, key] of profiles) {
    if (has(key, ACTIVE) && !has(key, SEEN)) {
      findings.defect(
        'creators-missing',
        CREATORS_FILE,
        `does not name the active profile ${JSON.stringify(name)} (${FIRST_DIR}/${name}): every active user belongs in the list`,
      );
    }
  }
}

/** The list's entries, one at a time, in order. */
class EntryCheck {
  count = 0;
  private previous: string | undefined;
  private readonly userValidator = validator('User');

  constructor(
    private readonly profiles: Map<string, number>,
    private readonly findings: Findings,
  ) {}

  check(raw: Buffer, index: number, offset: number): void {
    this.count++;
    if (this.isProfileBytes(raw, index)) return;
    const entry = parseElement(raw, offset) as any;
    const username: unknown = entry?.username;
    const label = `entry ${index}${typeof username === 'string' ? ` (${JSON.stringify(username)})` : ''}`;
    if (!this.userValidator(entry))
      this.findings.defect(
        'schema',
        CREATORS_FILE,
        `${label} does not match User: ${describeErrors(this.userValidator.errors, `/data/${index}`)}`,
      );
    if (entry?.status !== 'active') {
      this.findings.defect(
        'creators-status',
        CREATORS_FILE,
        `${label} has status ${JSON.stringify(entry?.status)}: only active users belong in the creators list (suspended, banned, inactive and deleted accounts never appear)`,
      );
    }
    if (typeof username === 'string') this.checkAgainstProfile(username.toLowerCase(), label, raw, entry);
  }

  /** The fast path: the entry's bytes are those of a valid active profile's data (how build writes it). */
  private isProfileBytes(raw: Buffer, index: number): boolean {
    const quick = quickUsername(raw);
    if (quick === undefined) return false;
    const lower = quick.toLowerCase();
    const key = this.profiles.get(lower);
    if (key === undefined || !has(key, VALID) || !has(key, ACTIVE) || fingerprint(key) !== userKey(raw)) return false;
    this.checkOrder(lower, `entry ${index} (${JSON.stringify(quick)})`);
    this.markSeen(lower, key);
    return true;
  }

  private checkAgainstProfile(lower: string, label: string, raw: Buffer, entry: unknown): void {
    this.checkOrder(lower, label);
    const key = this.profiles.get(lower);
    if (key === undefined) {
      this.findings.defect(
        'creators-unknown',
        CREATORS_FILE,
        `${label} has no profile (${FIRST_DIR}/${lower} is missing or broken): the list names a user that answers 404`,
      );
      return;
    }
    this.markSeen(lower, key);
    if (fingerprint(key) !== userKey(raw) && fingerprint(key) !== canonicalKey(entry)) {
      this.findings.defect(
        'creators-differs',
        CREATORS_FILE,
        `${label} differs from its profile ${FIRST_DIR}/${lower}: both come from one snapshot and must hold the same User object`,
      );
    }
  }

  private markSeen(lower: string, key: number): void {
    if (!has(key, SEEN)) this.profiles.set(lower, key + SEEN);
  }

  private checkOrder(lower: string, label: string): void {
    const previous = this.previous;
    if (previous !== undefined && !(previous < lower)) {
      this.findings.defect(
        'creators-order',
        CREATORS_FILE,
        previous === lower
          ? `${label} repeats the username ${JSON.stringify(lower)} (ignoring case): each creator appears once`
          : `${label} comes after ${JSON.stringify(previous)}: the list must be ordered by lower-cased username, ascending`,
      );
    }
    this.previous = lower;
  }
}
