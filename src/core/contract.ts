/**
 * The contract document (contract/openapi.json) as shipped with this version of profile-snapshot:
 * the source of the JSON Schemas `verify` validates with, and the bytes `build` publishes at
 * api/v1/openapi.json. Resolved relative to this module, so it works from src/ (tests) and from the
 * compiled build/ alike (both sit one level below the package root, this file two).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const CONTRACT_URL = new URL('../../contract/openapi.json', import.meta.url);
export const CONTRACT_PATH = fileURLToPath(CONTRACT_URL);

let text: string | undefined;

/** The contract's exact text (read once per process). */
export function contractText(): string {
  text ??= readFileSync(CONTRACT_URL, 'utf8');
  return text;
}

/** The contract, parsed (a fresh copy each call). */
export function contractDocument(): Record<string, unknown> {
  return JSON.parse(contractText()) as Record<string, unknown>;
}
