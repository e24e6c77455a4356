/**
 * Load-test plumbing: real processes (the CLI's `serve` and `watch`, plain serve-handler, a store
 * writer) on 127.0.0.1 with ports chosen at run time, autocannon in this process, and /proc readings
 * of a process's memory and open file descriptors.
 */
import autocannon from 'autocannon';
import { readdirSync, readFileSync } from 'node:fs';
import { startCli, startNode, type Proc } from '../helpers/process.js';

export type { Proc };

/** A started process once its stderr matches `ready`; `match` is the pattern's first group (a port). */
async function whenReady(proc: Proc, ready: RegExp): Promise<Proc & { match: string }> {
  const match = await proc.waitForStderr(ready);
  return Object.assign(proc, { match: match[1] ?? match[0] });
}

const HEAP_PROBE = new URL('./fixtures/heap-probe.mjs', import.meta.url).pathname;
/** With the heap probe preloaded, so `liveHeap` can read it. */
const probed = { nodeArgs: ['--expose-gc', '--import', HEAP_PROBE] };
/** `serve` on a free port. */
export const serve = (out: string) =>
  whenReady(startCli(['serve', '--out', out, '--port', '0', '--host', '127.0.0.1'], probed), /on http:\/\/127\.0\.0\.1:(\d+)/);
export const watch = (args: string[]) => whenReady(startCli(['watch', ...args], probed), /cycle 1/);
/** A fixture script of this suite, running. */
export const fixture = (name: string, args: string[]) => startNode([new URL(`./fixtures/${name}`, import.meta.url).pathname, ...args]);

/** Bytes of live heap after a full collection, read through the heap probe (SIGUSR2). */
export async function liveHeap(proc: Proc): Promise<number> {
  const seen = (proc.stderr().match(/^heap \d+$/gm) ?? []).length;
  proc.child.kill('SIGUSR2');
  for (let i = 0; i < 100; i++) {
    const all = proc.stderr().match(/^heap (\d+)$/gm) ?? [];
    if (all.length > seen) return Number(all.at(-1)!.slice(5));
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('the heap probe did not answer');
}
export const plainServer = (out: string) => whenReady(fixture('plain-server.mjs', [out]), /listening on (\d+)/);

/** Resident memory (kB) and open descriptors of a live process. */
export function procStats(pid: number): { rssKb: number; fds: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
  return { rssKb, fds: readdirSync(`/proc/${pid}/fd`).length };
}

export interface LoadRequest {
  method: string;
  path: string;
  /** The statuses this request may be answered with. */
  statuses: number[];
  /** Further checks of a 200 body (e.g. that it is whole JSON of the right user); returns a problem or undefined. */
  checkBody?: (body: string) => string | undefined;
}

export interface LoadFigures {
  requests: number;
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  timeouts: number;
  /** Answers with a status the request does not allow, or failing its body check. */
  unexpected: number;
  /** Answers without X-Content-Type-Options: nosniff (only counted when asked). */
  withoutNosniff: number;
  examples: string[];
}

/** autocannon against `base` cycling through `requests` on `connections` connections for `seconds`. */
export async function load(
  base: string,
  requests: LoadRequest[],
  options: { seconds: number; connections?: number; nosniff?: boolean },
): Promise<LoadFigures> {
  let unexpected = 0,
    withoutNosniff = 0;
  const examples: string[] = [];
  const note = (what: string) => {
    if (examples.length < 10) examples.push(what);
  };
  const result = await autocannon({
    url: base,
    connections: options.connections ?? 100,
    duration: options.seconds,
    timeout: 10,
    requests: requests.map((r) => ({
      method: r.method as 'GET',
      path: r.path,
      onResponse: (status: number, body: string, _context: unknown, headers: Record<string, string>) => {
        if (!r.statuses.includes(status)) {
          unexpected++;
          note(`${r.method} ${r.path}: ${status}`);
        } else if (status === 200 && r.checkBody) {
          const problem = r.checkBody(body);
          if (problem) {
            unexpected++;
            note(`${r.method} ${r.path}: ${problem}`);
          }
        }
        const nosniff = Object.entries(headers).find(([k]) => k.toLowerCase() === 'x-content-type-options')?.[1];
        if (options.nosniff && nosniff !== 'nosniff') {
          withoutNosniff++;
          note(`${r.method} ${r.path}: no nosniff`);
        }
      },
    })),
  });
  return {
    requests: result.requests.total,
    reqPerSec: Math.round(result.requests.average),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    errors: result.errors,
    timeouts: result.timeouts,
    unexpected,
    withoutNosniff,
    examples,
  };
}
