/**
 * The audit's checks of the documents every snapshot must hold besides its profiles: the error
 * documents (each must hold the error its file name says) and the published contract (the bytes of
 * this version's contract/openapi.json).
 */
import { lstatSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { contractText } from '../core/contract.js';
import { describeCause } from '../core/errors.js';
import { CREATORS_FILE, errorFile, OPENAPI_FILE } from '../core/layout.js';
import { ERRORS, type ErrorCode } from '../render/documents.js';
import type { Findings } from './defects.js';
import { describeErrors, validator } from './schemas.js';

/** Each error document's path, and the error it must hold. */
export const ERROR_FILES = new Map((Object.keys(ERRORS) as ErrorCode[]).map((code) => [errorFile(code), code]));
/** The API's documents other than profiles. */
export const API_DOCUMENTS = new Set([CREATORS_FILE, OPENAPI_FILE]);

export function checkErrorDocuments(out: string, findings: Findings): void {
  const errorValidator = validator('ErrorResponse');
  for (const [path, code] of ERROR_FILES) {
    const { code: expectedCode, status } = ERRORS[code];
    const bytes = readIfFile(join(out, path));
    if (bytes === undefined) {
      findings.defect(
        'missing',
        path,
        `the ${expectedCode} error document is missing: the hosting rules answer ${status} with this file, and would answer the CDN's own page instead`,
      );
      continue;
    }
    let doc: any;
    try {
      doc = JSON.parse(bytes.toString('utf8'));
    } catch (cause) {
      findings.defect('unparseable', path, `does not parse as JSON (${describeCause(cause)})`);
      continue;
    }
    if (!errorValidator(doc)) findings.defect('schema', path, `does not match ErrorResponse: ${describeErrors(errorValidator.errors)}`);
    const error = doc?.error;
    if (error?.code !== expectedCode || error?.status !== status) {
      findings.defect(
        'error-document',
        path,
        `holds ${JSON.stringify(error?.status)} ${JSON.stringify(error?.code)}, but this file answers ${status} ${expectedCode}`,
      );
    }
  }
}

export function checkContract(out: string, findings: Findings): void {
  const published = readIfFile(join(out, OPENAPI_FILE));
  if (published === undefined) {
    findings.defect('missing', OPENAPI_FILE, 'the contract (OpenAPI document) is missing: build publishes contract/openapi.json there');
  } else if (!published.equals(Buffer.from(contractText()))) {
    if (parses(published)) {
      findings.defect(
        'contract',
        OPENAPI_FILE,
        'differs from the contract of this profile-snapshot version (contract/openapi.json): clients would generate code from another contract; rebuild',
      );
    } else {
      findings.defect('unparseable', OPENAPI_FILE, 'does not parse as JSON: a truncated or corrupted contract; rebuild');
    }
  }
}

function parses(bytes: Buffer): boolean {
  try {
    JSON.parse(bytes.toString('utf8'));
    return true;
  } catch {
    return false;
  }
}

export function fileExists(path: string): boolean {
  try {
    return lstatSync(path).isFile();
  } catch {
    return false;
  }
}

export function readIfFile(path: string): Buffer | undefined {
  if (!fileExists(path)) return undefined;
  return readFileSync(path);
}
