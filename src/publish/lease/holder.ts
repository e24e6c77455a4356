/**
 * Who holds a lease: enough for an operator to find the process, never a credential.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';

/** Who holds a lease: enough for an operator to find it, never a credential. */
export interface LeaseHolder {
  host: string;
  pid: number;
  /** The holder's id: a publish's, or a watcher's. */
  id: string;
  /** When the holder process started. */
  startedAt: string;
}

/** This process as a lease holder, under `id`. */
export function thisHolder(id: string = randomBytes(6).toString('base64url')): LeaseHolder {
  return { host: hostname(), pid: process.pid, id, startedAt: new Date(Date.now() - process.uptime() * 1000).toISOString() };
}

export function describeHolder(holder: LeaseHolder): string {
  return `host ${holder.host}, pid ${holder.pid} (${holder.id})`;
}
