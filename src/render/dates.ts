/**
 * Store dates are UTC in one of two shapes (docs/store.md): SQLite's `YYYY-MM-DD HH:MM:SS`
 * or ISO 8601 `YYYY-MM-DDTHH:MM:SS[.fff]Z`. Anything else, or an impossible calendar date, is
 * rejected rather than guessed, so `Date`'s lenient parser never decides what we publish.
 */
import { DAY_MS } from '../core/time.js';

const STORE_DATE = /^(\d{4})-(\d{2})-(\d{2})(?: |T)(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z?)$/;

export interface StoreDate {
  /** Milliseconds since the epoch. */
  ms: number;
  /** ISO 8601 UTC with milliseconds, e.g. 2024-03-01T12:00:00.000Z. */
  iso: string;
}

/** The date, or undefined when the value is not a valid store date. */
export function parseStoreDate(value: unknown): StoreDate | undefined {
  if (typeof value !== 'string') return undefined;
  const m = STORE_DATE.exec(value);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, fraction, zone] = m as unknown as [
    string,
    string,
    string,
    string,
    string,
    string,
    string,
    string | undefined,
    string,
  ];
  // The space form is SQLite's datetime() and never carries a zone; the T form must say Z.
  const isoForm = value.charCodeAt(10) === 84; // 'T'
  if (isoForm !== (zone === 'Z')) return undefined;
  if (!isoForm && fraction !== undefined) return undefined;
  const year = Number(y),
    month = Number(mo),
    day = Number(d);
  const hour = Number(h),
    minute = Number(mi),
    second = Number(s);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  const millis = fraction === undefined ? '000' : fraction.padEnd(3, '0').slice(0, 3);
  const date = new Date(0);
  // setUTCFullYear, unlike Date.UTC, does not map years 0-99 to 1900-1999.
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, Number(millis));
  // Built from the validated parts: the same text toISOString gives for years 0-9999, for less work.
  return { ms: date.getTime(), iso: `${y}-${mo}-${d}T${h}:${mi}:${s}.${millis}Z` };
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** ISO 8601 UTC with milliseconds, e.g. 2024-03-01T12:00:00.000Z. */
export function isoMillis(epochMs: number): string {
  return new Date(epochMs).toISOString();
}

/** Whole days from `createdMs` to `snapshotMs`, rounded down; 0 for a date after the snapshot. */
export function wholeDaysBetween(createdMs: number, snapshotMs: number): number {
  return Math.max(0, Math.floor((snapshotMs - createdMs) / DAY_MS));
}

/** The first snapshot time after `snapshotMs` at which wholeDaysBetween(createdMs, ·) changes. */
export function nextAgeChangeMs(createdMs: number, snapshotMs: number): number {
  // Before the creation date the age is held at 0, so it first moves a day after that date too.
  return createdMs + (wholeDaysBetween(createdMs, snapshotMs) + 1) * DAY_MS;
}
