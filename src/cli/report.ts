/** Human-facing text: the one-line build and publish summaries, warnings, and a progress line on a terminal. */
import type { BuildReport } from '../build.js';
import type { PublishReport } from '../publish/report.js';
import { count, summaryCounts } from '../core/text.js';
import type { RowWarning } from '../render/user.js';

/** e.g. "profile-snapshot: 25 profiles published (19 creators), 3 skipped; files 52 written, 0 unchanged, 0 removed; 4 warnings; 0.12 s" */
export function formatSummary(report: BuildReport): string {
  const unchanged = report.storeUnchanged ? 'store unchanged since the last build, no row read; ' : '';
  return `profile-snapshot: ${summaryCounts({ ...report, warnings: report.warnings.length })}; ${unchanged}${report.seconds.toFixed(2)} s`;
}

const SHOWN_WARNINGS = 20;

/** One line per warning (row id and reason only), the first few, then a count of the rest. */
export function formatWarnings(warnings: readonly RowWarning[]): string {
  const lines = warnings.slice(0, SHOWN_WARNINGS).map((w) => `warning: users.id ${w.id}: ${w.reason}\n`);
  if (warnings.length > SHOWN_WARNINGS) lines.push(`warning: ... and ${warnings.length - SHOWN_WARNINGS} more (--json lists them all)\n`);
  return lines.join('');
}

/** A self-overwriting status line, shown only on a terminal and only once work takes a while. */
export class ProgressLine {
  private readonly started = Date.now();
  private lastDrawn = 0;
  private visible = false;

  constructor(private readonly stream: NodeJS.WritableStream & { isTTY?: boolean }) {}

  /** `text` may be a function: it is then called only when the line is drawn (at most 5 times a second). */
  update(text: string | (() => string)): void {
    if (!this.stream.isTTY) return;
    const now = Date.now();
    if (now - this.started < 1000 || now - this.lastDrawn < 200) return;
    this.lastDrawn = now;
    this.visible = true;
    this.stream.write(`\r\x1b[2K${typeof text === 'function' ? text() : text}…`);
  }

  clear(): void {
    if (!this.visible) return;
    this.visible = false;
    this.stream.write('\r\x1b[2K');
  }
}

/** e.g. "profile-snapshot: published dist to s3://b/p at http://...: 12 objects put (5 profiles, the creators list), 2 deleted, 40 unchanged; 13 requests; 0.21 s" */
export function formatPublishSummary(report: PublishReport): string {
  const { objects, profiles } = report;
  const requests = Object.values(report.requests).reduce((a, b) => a + b, 0);
  const cost = `${count(requests)} requests${retried(report)}; ${report.seconds.toFixed(2)} s`;
  const what = `${count(objects.put)} objects put (${count(profiles.put)} profiles${report.list ? ', the creators list' : ''}), ${count(objects.deleted)} deleted (${count(profiles.deleted)} profiles), ${count(objects.unchanged)} unchanged`;
  const compared = report.compared === 'listing' ? ', compared by listing the prefix' : '';
  if (report.dryRun) return `profile-snapshot: dry run, nothing written: ${report.where} would get ${what}${compared}; ${cost}`;
  const joined = formatJoin(report);
  if (!report.changed)
    return `profile-snapshot: ${report.where} is up to date (${count(objects.unchanged)} objects${compared})${joined}; ${cost}`;
  return `profile-snapshot: published ${report.out} to ${report.where}: ${what}, ${(report.bytes / 1e6).toFixed(1)} MB${compared}${joined}; ${cost}`;
}

/** " (3 retried, 1 sent again later)": requests the SDK retried, and those set aside after its attempts (publish/bucket/later.ts). */
export function retried(report: Pick<PublishReport, 'retries' | 'sentLater'>): string {
  const words = [
    report.retries > 0 ? `${count(report.retries)} retried` : '',
    report.sentLater > 0 ? `${count(report.sentLater)} sent again later` : '',
  ];
  const said = words.filter((word) => word !== '');
  return said.length === 0 ? '' : ` (${said.join(', ')})`;
}

/** A shard's words on the joined list: ", shard 1/4, list joined (8 parts copied)". */
function formatJoin(report: PublishReport): string {
  if (report.shard === undefined) return '';
  const { shard, join, deferredProfiles } = report.shard;
  const deferred = deferredProfiles > 0 ? `, ${count(deferredProfiles)} removed profiles kept until it is` : '';
  if (join === undefined) return `, shard ${shard}`;
  if (join.missing.length > 0) return `, shard ${shard}, list not joined yet${deferred}`;
  return `, shard ${shard}, ${join.joined ? `list joined (${count(join.copiedParts)} parts copied, ${count(join.uploadedParts)} uploaded)` : 'list already joined'}`;
}
