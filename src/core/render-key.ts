/**
 * The render key: what a tree was rendered with, the tool and the base URL. Equal keys and equal
 * rows make equal documents, so everything a build may reuse from the last one (row signatures, the
 * last-pass record, a session's selection) is trusted only under an equal key. One shape, written in
 * the manifest's header, recorded by the last pass and the session, and compared by `sameRenderKey`.
 */
import { toolIdentity } from './version.js';

export type RenderKey = string & { readonly renderKey: unique symbol };

/** The key of a build by this tool at `baseUrl` (already normalised: see normalizeBaseUrl). */
export function renderKeyOf(baseUrl: string, tool: string = toolIdentity()): RenderKey {
  return `${tool}\t${baseUrl}` as RenderKey;
}

/** Whether a recorded key (a manifest's, or a record's) is `key`; an unknown ('') one never is. */
export function sameRenderKey(recorded: string | undefined, key: RenderKey): boolean {
  return recorded !== undefined && recorded !== '' && recorded === key;
}
