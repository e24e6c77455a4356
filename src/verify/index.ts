/**
 * `verify`: audits a built tree (see ./audit.ts) and decides whether it may be deployed.
 *
 * It may run beside a writer: `watch --exec 'profile-snapshot verify ... && deploy'` runs while the
 * watcher's next cycle may already be building. Verify never takes the out dir's lock (a watcher
 * holds it for life) and never writes. Instead:
 *   - while a live profile-snapshot process holds the lock, staged and temporary files are that
 *     writer's work in progress, not leftovers;
 *   - a build's commit rewrites the manifest before and after it moves files into place, so an audit
 *     during which the manifest changed, or that found entries pending while a writer is live, saw
 *     the tree between two snapshots: it is run again (waiting up to `waitMs` for the commit to end).
 * Without a live writer, pending entries are an interrupted build: a defect.
 */
import { performance } from 'node:perf_hooks';
import { SnapshotError } from '../core/errors.js';
import { plural } from '../core/text.js';
import { DEFAULT_COMMIT_WAIT_MS, readSettled } from '../output/settled.js';
import { MANIFEST_FILE, resolveOutDir } from '../core/layout.js';
import { audit, type AuditOptions, type AuditResult } from './audit.js';
import { DEFECT_KINDS, type Defect, type DefectKind } from './defects.js';

export { audit } from './audit.js';
export { DEFECT_KINDS, type Defect, type DefectKind } from './defects.js';
export { contractText, contractDocument, CONTRACT_PATH } from '../core/contract.js';
export { OPENAPI_FILE } from '../core/layout.js';
export { validator, describeErrors, type SchemaName } from './schemas.js';

export interface VerifyOptions extends Omit<AuditOptions, 'writerActive'> {
  /** How long to wait for a live writer's commit to end before reporting what is there (default DEFAULT_COMMIT_WAIT_MS). */
  waitMs?: number;
}

export interface VerifyReport {
  out: string;
  ok: boolean;
  defects: Defect[];
  /** Defects per kind (kinds without defects omitted). */
  summary: Partial<Record<DefectKind, number>>;
  warnings: string[];
  profiles: number;
  creators: number;
  files: number;
  netlify: boolean;
  /** Audits run: more than 1 when a writer changed the tree meanwhile. */
  attempts: number;
  /** Threads the profile pass ran on (2 for large trees, see ./parallel.ts). */
  threads: number;
  seconds: number;
}

/** Thrown (exit 5, "output unusable") when the tree has defects; carries the report. */
export class VerifyFailedError extends SnapshotError {
  constructor(readonly report: VerifyReport) {
    super(
      'output',
      `${report.out} must not be deployed: ${plural(report.defects.length, 'defect')} (${Object.entries(report.summary)
        .map(([k, c]) => `${c} ${k}`)
        .join(', ')})`,
      {
        hint:
          'repair it with "profile-snapshot build --full" (it rewrites every file of its build that is missing, truncated or altered) ' +
          'and verify again; never deploy a snapshot that fails verify',
      },
    );
    this.name = 'VerifyFailedError';
  }
}

export function verify(outDir: string, options: VerifyOptions = {}): VerifyReport {
  const started = performance.now();
  const out = resolveOutDir(outDir);
  const { result, attempts } = auditSettled(out, options);
  const defects = sortDefects(result.defects);
  const summary: Partial<Record<DefectKind, number>> = {};
  for (const d of defects) summary[d.kind] = (summary[d.kind] ?? 0) + 1;
  return {
    out,
    ok: defects.length === 0,
    defects,
    summary,
    warnings: result.warnings,
    profiles: result.profiles,
    creators: result.creators,
    files: result.files,
    netlify: Boolean(options.netlify),
    attempts,
    threads: result.threads,
    seconds: (performance.now() - started) / 1000,
  };
}

/**
 * Audits until an audit saw one snapshot: no writer committed or came and went meanwhile. When the
 * wait runs out first, the last audit stands with a defect that says why it cannot be trusted.
 */
function auditSettled(out: string, options: VerifyOptions): { result: AuditResult; attempts: number } {
  const waitMs = options.waitMs ?? DEFAULT_COMMIT_WAIT_MS;
  let attempts = 0;
  const settled = readSettled(out, waitMs, (writerActive) => {
    attempts++;
    const result = audit(out, { ...options, writerActive });
    return { value: result, pending: result.pending };
  });
  const { value: result, inCommit, changed } = settled;
  if (inCommit) {
    result.defects.push({
      kind: 'manifest',
      path: MANIFEST_FILE,
      message: `${result.pending} entries stayed pending for ${(waitMs / 1000).toFixed(0)} s while a profile-snapshot process holds the out dir: its commit did not finish; verify again once it has`,
    });
  } else if (changed) {
    result.defects.push({
      kind: 'manifest',
      path: MANIFEST_FILE,
      message: 'a profile-snapshot process kept publishing while verify read the tree: what was read may mix two snapshots; verify again',
    });
  }
  return { result, attempts };
}

/** Stable order: by kind as listed in DEFECT_KINDS, then path (file order within the creators list kept). */
function sortDefects(defects: readonly Defect[]): Defect[] {
  const order = Object.keys(DEFECT_KINDS);
  return defects
    .map((d, i) => ({ d, i }))
    .sort((a, b) => order.indexOf(a.d.kind) - order.indexOf(b.d.kind) || (a.d.path < b.d.path ? -1 : a.d.path > b.d.path ? 1 : a.i - b.i))
    .map(({ d }) => d);
}
