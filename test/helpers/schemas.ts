/**
 * ajv validators for the component schemas of contract/openapi.json (the one JSON Schema source),
 * and a function that validates every document of a built tree against the schema for its path.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { publishedFiles } from './output.js';
import { REPO } from './store.js';

const openapi = JSON.parse(readFileSync(join(REPO, 'contract/openapi.json'), 'utf8'));
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

const ajv = new Ajv2020({ allErrors: true, strict: false });
addFormats(ajv);
ajv.addSchema(openapi, 'openapi');

export function validator(name: string) {
  const validate = ajv.getSchema(`openapi#/components/schemas/${name}`);
  if (!validate) throw new Error(`no schema ${name}`);
  return validate;
}

/** Which schema each published path must match. */
export function schemaFor(path: string): string {
  if (/^(api|service-api)\/v1\/users\/[^/]+$/.test(path)) return 'ProfileResponse';
  if (path === 'service-api/v1/creators') return 'CreatorsResponse';
  if (/^_errors\/[a-z-]+\.json$/.test(path)) return 'ErrorResponse';
  throw new Error(`unexpected published file ${path}`);
}

/** Every schema violation in the tree, as "path: message" strings (empty when all is valid). */
export function validateTree(out: string): string[] {
  const problems: string[] = [];
  for (const path of publishedFiles(out)) {
    const validate = validator(schemaFor(path));
    const document = JSON.parse(readFileSync(join(out, path), 'utf8'));
    if (!validate(document)) problems.push(`${path}: ${ajv.errorsText(validate.errors)}`);
  }
  return problems;
}
