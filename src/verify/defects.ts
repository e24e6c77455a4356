/**
 * Every kind of defect `verify` reports, and the list the checks add them to.
 */

export const DEFECT_KINDS = {
  unparseable: 'a document that is not well-formed JSON',
  schema: 'a document that does not match its JSON Schema (contract/openapi.json)',
  'alias-differs': 'a profile whose alias files differ',
  'alias-missing': 'a profile that is missing under one alias folder',
  'creators-unknown': 'a creators list entry without a profile',
  'creators-status': 'a creators list entry whose status is not active',
  'creators-order': 'a creators list entry out of order (lower-cased username, ascending) or repeated',
  'creators-differs': 'a creators list entry that differs from its profile',
  'creators-missing': 'an active profile that the creators list does not name',
  'creators-gzip': "the creators list's gzip variant is missing or does not decode to exactly the list",
  unpublishable: 'a published profile whose username is not publishable',
  'file-name': 'a profile file whose name is not the lower-cased username inside it',
  missing: 'a document every snapshot must have (error documents, creators list, contract)',
  'error-document': 'an error document holding another error than its file name says',
  contract: "a published contract that differs from this version's contract/openapi.json",
  leftover: 'a temporary or staging file left by an interrupted run',
  bookkeeping: "the tool's bookkeeping where it would be served (outside .profile-snapshot/)",
  stray: 'a file where the API would serve it that is not a document of the API',
  shard: 'a tree of another shard than --shard names, or a profile outside its shard',
  manifest: "the tool's manifest disagrees with the tree (an interrupted build)",
  'netlify-folder-limit': 'a folder with more files than Netlify deploys (--netlify)',
  'netlify-config': 'netlify.toml differs from what the route table renders (--netlify)',
} as const;
export type DefectKind = keyof typeof DEFECT_KINDS;

export interface Defect {
  kind: DefectKind;
  /** Relative to the out dir (or, for netlify-config, to the repository root). */
  path: string;
  message: string;
}

/** What the checks found: defects refuse a deploy, warnings do not. */
export class Findings {
  readonly defects: Defect[] = [];
  readonly warnings: string[] = [];

  defect(kind: DefectKind, path: string, message: string): void {
    this.defects.push({ kind, path, message });
  }

  warn(message: string): void {
    this.warnings.push(message);
  }
}
