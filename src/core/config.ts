/**
 * Validation of the values a caller supplies (flags, environment). The CLI decides where a value
 * comes from; these functions decide whether it is usable, and say how to fix it when not.
 */
import { usageError } from './errors.js';

/**
 * An absolute http(s) URL without query, fragment or credentials, returned without a trailing slash
 * so that `${base}/api/...` never doubles one. A path prefix is kept (the API may live under one).
 */
export function normalizeBaseUrl(input: string, source: string): string {
  let url: URL;
  try {
    url = new URL(input);
  } catch (cause) {
    throw usageError(
      `${source} is not an absolute URL: ${JSON.stringify(input)}`,
      'give an absolute http(s) URL such as https://profiles.example.com',
      cause,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw usageError(
      `${source} must use http or https, not ${url.protocol.slice(0, -1)}: ${JSON.stringify(input)}`,
      'give an absolute http(s) URL such as https://profiles.example.com',
    );
  }
  if (url.search !== '' || input.includes('?') || url.hash !== '' || input.includes('#')) {
    throw usageError(`${source} must not have a query or fragment: ${JSON.stringify(input)}`, 'drop everything from "?" or "#" on');
  }
  if (url.username !== '' || url.password !== '') {
    throw usageError(`${source} must not contain credentials`, 'drop the user:password@ part; published URLs are public');
  }
  return `${url.origin}${url.pathname}`.replace(/\/+$/, '');
}

/**
 * The snapshot time: SOURCE_DATE_EPOCH (whole seconds since the Unix epoch) when set, so a build can
 * be reproduced byte for byte; otherwise the wall clock.
 */
export function snapshotTime(sourceDateEpoch: string | undefined, now: () => number = Date.now): { ms: number; reproducible: boolean } {
  if (sourceDateEpoch === undefined || sourceDateEpoch === '') return { ms: now(), reproducible: false };
  if (!/^\d{1,12}$/.test(sourceDateEpoch)) {
    throw usageError(
      `SOURCE_DATE_EPOCH must be whole seconds since the Unix epoch, not ${JSON.stringify(sourceDateEpoch)}`,
      'unset it, or set it to e.g. $(git log -1 --format=%ct)',
    );
  }
  return { ms: Number(sourceDateEpoch) * 1000, reproducible: true };
}
