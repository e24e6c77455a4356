/** Human-facing text: the one-line build summary, warnings, and a progress line on a terminal. */
import type { BuildReport } from '../build.js';
import { summaryCounts } from '../core/text.js';
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
