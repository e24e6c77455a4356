/**
 * ajv validators for the component schemas of contract/openapi.json (the one JSON Schema source,
 * compiled once by src/verify/schemas.ts for `verify` and the tests alike), and a function that
 * validates every document of a built tree against the schema for its path.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { contractText } from '../../src/core/contract.js';
import { CREATORS_FILE, CREATORS_GZIP_FILE, OPENAPI_FILE } from '../../src/core/layout.js';
import { describeErrors, validator } from '../../src/verify/schemas.js';
import { publishedFiles } from './output.js';

export { validator };

/** Which schema each published path must match (the contract itself is compared, not validated). */
export function schemaFor(path: string): string {
  if (/^(api|service-api)\/v1\/users\/[^/]+$/.test(path)) return 'ProfileResponse';
  if (path === 'service-api/v1/creators') return 'CreatorsResponse';
  if (/^_errors\/[a-z-]+\.json$/.test(path)) return 'ErrorResponse';
  if (path === OPENAPI_FILE) return 'the contract';
  if (path === CREATORS_GZIP_FILE) return 'the creators list, gzip';
  throw new Error(`unexpected published file ${path}`);
}

/** Every schema violation in the tree, as "path: message" strings (empty when all is valid). */
export function validateTree(out: string): string[] {
  const problems: string[] = [];
  for (const path of publishedFiles(out)) {
    if (path === CREATORS_GZIP_FILE) {
      const list = readFileSync(join(out, CREATORS_FILE));
      if (!gunzipSync(readFileSync(join(out, path))).equals(list)) problems.push(`${path}: does not decode to ${CREATORS_FILE}`);
      continue;
    }
    const text = readFileSync(join(out, path), 'utf8');
    if (path === OPENAPI_FILE) {
      if (text !== contractText()) problems.push(`${path}: differs from contract/openapi.json`);
      continue;
    }
    const validate = validator(schemaFor(path));
    if (!validate(JSON.parse(text))) problems.push(`${path}: ${describeErrors(validate.errors)}`);
  }
  return problems;
}
