/** Counts as the tool prints them, in the build's summary line and the watcher's cycle line alike. */

/** 12,345 (null, a count a failed cycle does not have, as 0). */
export const count = (n: number | null): string => (n ?? 0).toLocaleString('en-US');

/** "1 profile", "12,345 profiles". */
export const plural = (n: number | null, word: string): string => `${count(n)} ${word}${n === 1 ? '' : 's'}`;

/** "files 2 written, 39 unchanged, 0 removed". */
export function filesLine(files: { written: number; unchanged: number; removed: number }): string {
  return `files ${count(files.written)} written, ${count(files.unchanged)} unchanged, ${count(files.removed)} removed`;
}

/** ", 3 repaired" after the file counts of a full build or cycle; nothing when it did not look. */
const repairedText = (repaired: number | null | undefined): string => (repaired == null ? '' : `, ${count(repaired)} repaired`);

/** What a build or a cycle did, as its summary line says it. */
export interface SummaryCounts {
  profiles: number | null;
  creators: number | null;
  skipped: number | null;
  files: { written: number; unchanged: number; removed: number };
  repaired?: number | null | undefined;
  warnings: number | null;
}

/**
 * The counts of the summary line that a build prints and a watcher logs per cycle: "25 profiles
 * published (19 creators), 3 skipped; files 52 written, 0 unchanged, 0 removed; 4 warnings".
 */
export function summaryCounts(counts: SummaryCounts): string {
  return (
    `${plural(counts.profiles, 'profile')} published (${plural(counts.creators, 'creator')}), ${count(counts.skipped)} skipped; ` +
    `${filesLine(counts.files)}${repairedText(counts.repaired)}; ${plural(counts.warnings, 'warning')}`
  );
}

/** `host:port` for a URL or a log line (an IPv6 host in brackets). */
export const hostPort = ({ host, port }: { host: string; port: number }): string => `${host.includes(':') ? `[${host}]` : host}:${port}`;
