/**
 * If-None-Match for the origin's answers on every path. The rule itself lives in the routing module
 * (../routes/routing.js, RFC 9110 13.1.2), plain JavaScript that the Cloudflare Worker embeds as
 * written: the origin and the Worker decide a 304 by the same code.
 */
export { matchesIfNoneMatch } from '../routes/routing.js';
