/**
 * The documents the API answers with: the success envelope around one User or the creators list,
 * and the error documents. Serialisation is split into the data part and the meta part because a
 * document whose data did not change must keep its old meta (and so its bytes) exactly.
 */
import { isoMillis } from './dates.js';

export const API_VERSION = 'v1';

export interface Meta {
  timestamp: string;
  version: typeof API_VERSION;
  executionTimeMs: number;
}

/** Every document of a build shares one timestamp: format it once, not once per profile. */
let lastTimestamp = { ms: Number.NaN, iso: '' };

export function meta(producedAtMs: number, executionTimeMs: number): Meta {
  if (lastTimestamp.ms !== producedAtMs) lastTimestamp = { ms: producedAtMs, iso: isoMillis(producedAtMs) };
  return { timestamp: lastTimestamp.iso, version: API_VERSION, executionTimeMs: Math.max(0, Math.floor(executionTimeMs)) };
}

/** `{"success":true,"data":` - the envelope up to its data. */
export const SUCCESS_HEAD = '{"success":true,"data":';

/** Closes an envelope whose data JSON has been written: `,"meta":{...}}`. */
export function envelopeTail(m: Meta): string {
  return `,"meta":${JSON.stringify(m)}}`;
}

/** The success envelope (docs/api.md, "The envelope") around data that is already JSON. */
export function successDocument(dataJson: string, m: Meta): string {
  return SUCCESS_HEAD + dataJson + envelopeTail(m);
}

const META_KEY = ',"meta":';
const ISO_MILLIS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/**
 * The data JSON of a success document exactly as `successDocument` writes it, or undefined for any
 * other text (truncated, edited, another shape): what a --full build uses to tell whether a profile
 * file on disk still holds the data its manifest entry was hashed from. The data is a User object,
 * which has no "meta" key and whose strings escape every quote, so the last `,"meta":` is the tail's.
 */
export function successDocumentData(text: string): string | undefined {
  const metaAt = text.lastIndexOf(META_KEY);
  if (!text.startsWith(SUCCESS_HEAD) || metaAt < SUCCESS_HEAD.length || !text.endsWith('}')) return undefined;
  let m: Partial<Meta>;
  try {
    m = JSON.parse(text.slice(metaAt + META_KEY.length, -1)) as Partial<Meta>;
  } catch {
    return undefined;
  }
  const { timestamp, version, executionTimeMs } = m ?? {};
  const written =
    typeof timestamp === 'string' &&
    ISO_MILLIS.test(timestamp) &&
    version === API_VERSION &&
    Number.isSafeInteger(executionTimeMs) &&
    executionTimeMs! >= 0 &&
    text.endsWith(envelopeTail({ timestamp, version, executionTimeMs: executionTimeMs! }));
  return written ? text.slice(SUCCESS_HEAD.length, metaAt) : undefined;
}

export interface ErrorSpec {
  status: number;
  code: string;
  message: string;
}

/**
 * The error answers (docs/api.md, "Errors"). Static files, so they never echo the request. The file name is the
 * code in kebab case; hosting config points at these names.
 */
export const ERRORS = {
  USER_NOT_FOUND: { status: 404, code: 'USER_NOT_FOUND', message: 'No active or suspended profile has this username.' },
  USERNAME_REQUIRED: { status: 400, code: 'USERNAME_REQUIRED', message: 'The username query parameter is required and must not be empty.' },
  NOT_FOUND: { status: 404, code: 'NOT_FOUND', message: 'No API resource exists at this path.' },
  METHOD_NOT_ALLOWED: { status: 405, code: 'METHOD_NOT_ALLOWED', message: 'Only GET and OPTIONS are allowed.' },
} as const satisfies Record<string, ErrorSpec>;
export type ErrorCode = keyof typeof ERRORS;

/** The data part of an error document (everything but meta), used for change detection. */
export function errorBody(spec: ErrorSpec): string {
  return JSON.stringify({ status: spec.status, code: spec.code, message: spec.message });
}

export function errorDocument(spec: ErrorSpec, m: Meta): string {
  return `{"success":false,"error":${errorBody(spec)},"meta":${JSON.stringify(m)}}`;
}
