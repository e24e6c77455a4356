/**
 * If-None-Match as RFC 9110 defines it (13.1.2), for the origin's answers on every path: a list of
 * entity-tags, or `*`, compared weakly (8.8.3.2: `W/"x"` and `"x"` match).
 *
 * A field value outside the grammar matches nothing: the request is answered as if it had no
 * condition (a 200 with the document). A full answer is never wrong, where a 304 on a value we
 * read differently from the client could leave it with a document it does not hold.
 */

/**
 * One list element, sticky: optional whitespace, an entity-tag or nothing (the list syntax allows
 * empty elements), optional whitespace, then a comma or the end. `etagc` takes in commas, so the
 * list cannot be split on them. Shared: each call starts it at 0 and runs it to the end.
 */
const ELEMENT = /[\t ]*(?:((?:W\/)?"[\x21\x23-\x7e\x80-\xff]*")[\t ]*)?(?:,|$)/y;

/** Whether `header` (the If-None-Match value, several lines joined by ", ") matches `etag`. */
export function matchesIfNoneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  // The form a cache revalidating its copy sends.
  if (header === etag) return true;
  if (header.trim() === '*') return true;
  const wanted = opaque(etag);
  let matched = false;
  ELEMENT.lastIndex = 0;
  while (ELEMENT.lastIndex < header.length) {
    const found = ELEMENT.exec(header);
    if (found === null) return false;
    if (found[1] !== undefined && opaque(found[1]) === wanted) matched = true;
  }
  return matched;
}

/** An entity-tag's opaque part: what weak comparison compares. */
const opaque = (tag: string) => (tag.startsWith('W/') ? tag.slice(2) : tag);
