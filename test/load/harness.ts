/**
 * Load-test plumbing: real processes (the CLI's `serve` and `watch`, plain serve-handler, a store
 * writer) on 127.0.0.1 with ports chosen at run time, autocannon in this process, and /proc readings
 * of a process's memory and open file descriptors.
 */
import autocannon from 'autocannon';
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { BIN } from '../helpers/cli.js';

export interface Proc {
  child: ChildProcess;
  pid: number;
  stderr: () => string;
  stop: () => Promise<number | null>;
}

/** Starts a process and waits until its stderr matches `ready` (the first group is returned). */
export async function startProc(args: string[], env: Record<string, string>, ready?: RegExp): Promise<Proc & { match: string }> {
  const child = spawn(process.execPath, args, {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d) => {
    stderr += d;
  });
  child.stdout!.resume();
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const match =
    ready === undefined
      ? ''
      : await new Promise<string>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`${args.join(' ')} not ready: ${stderr}`)), 30_000);
          const onData = () => {
            const m = ready.exec(stderr);
            if (m) {
              clearTimeout(timer);
              child.stderr!.off('data', onData);
              resolve(m[1] ?? m[0]);
            }
          };
          child.stderr!.on('data', onData);
          child.once('exit', () => reject(new Error(`${args.join(' ')} exited: ${stderr}`)));
        });
  return {
    child,
    pid: child.pid!,
    match,
    stderr: () => stderr,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

const HEAP_PROBE = new URL('./fixtures/heap-probe.mjs', import.meta.url).pathname;
/** `serve` on a free port; with the heap probe preloaded, so `liveHeap` can read it. */
export const serve = (out: string) =>
  startProc(
    ['--expose-gc', '--import', HEAP_PROBE, BIN, 'serve', '--out', out, '--port', '0', '--host', '127.0.0.1'],
    {},
    /on http:\/\/127\.0\.0\.1:(\d+)/,
  );
export const watch = (args: string[]) => startProc(['--expose-gc', '--import', HEAP_PROBE, BIN, 'watch', ...args], {}, /cycle 1/);

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
export const plainServer = (out: string) =>
  startProc([new URL('./fixtures/plain-server.mjs', import.meta.url).pathname, out], {}, /listening on (\d+)/);

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
