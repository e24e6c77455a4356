/**
 * The one way tests start processes: the real CLI (bin/profile-snapshot.js over the compiled build/)
 * or a fixture script, run to its end (`runCli`, `runCliAsync`) or left running (`startCli`,
 * `startNode`), with its output collected and a clean environment.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { BIN, REPO } from './paths.js';

export { BIN };

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface CliResult extends Exit {
  stdout: string;
  stderr: string;
}

export interface ProcessOptions {
  /** Added to PATH and HOME, the only variables a child inherits (entries set to undefined are skipped). */
  env?: Record<string, string | undefined>;
  cwd?: string;
  /** Node's own options before the script (e.g. a preload). */
  nodeArgs?: string[];
}

/** A process left running, its output collected as it comes. */
export interface Proc {
  child: ChildProcess;
  pid: number;
  stdout: () => string;
  stderr: () => string;
  /** Settles once the process has exited and its output is read to the end. */
  exit: Promise<Exit>;
  /** The first match of `pattern` in stderr; fails if the process ends first or after `timeoutMs`. */
  waitForStderr: (pattern: RegExp, timeoutMs?: number) => Promise<RegExpExecArray>;
  /** SIGTERM, then SIGKILL after `graceMs`; settles with the exit. */
  stop: (graceMs?: number) => Promise<Exit>;
}

/**
 * A clean environment: the caller's PROFILE_*, BASE_URL, URL and SOURCE_DATE_EPOCH (vitest sets
 * BASE_URL=/ in its own) must not reach the CLI unless a test sets them.
 */
function childEnv(options: ProcessOptions): Record<string, string> {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' };
  for (const [k, v] of Object.entries(options.env ?? {})) if (v !== undefined) env[k] = v;
  return env;
}

const cliArgv = (args: string[], options: ProcessOptions) => [...(options.nodeArgs ?? []), BIN, ...args];

/** Runs the bin to its end, blocking this process. */
export function runCli(args: string[], options: ProcessOptions & { timeoutMs?: number } = {}): CliResult {
  const result = spawnSync(process.execPath, cliArgv(args, options), {
    cwd: options.cwd ?? REPO,
    env: childEnv(options),
    encoding: 'utf8',
    timeout: options.timeoutMs ?? 60_000,
  });
  return { code: result.status, signal: result.signal, stdout: result.stdout, stderr: result.stderr };
}

/** Runs the bin to its end without blocking this process (whose servers it may talk to). `onSpawn` gets the child. */
export async function runCliAsync(
  args: string[],
  options: ProcessOptions & { onSpawn?: (child: ChildProcess) => void } = {},
): Promise<CliResult> {
  const proc = startCli(args, options);
  options.onSpawn?.(proc.child);
  const exit = await proc.exit;
  return { ...exit, stdout: proc.stdout(), stderr: proc.stderr() };
}

/** Starts the bin and leaves it running. */
export const startCli = (args: string[], options: ProcessOptions = {}): Proc => start(cliArgv(args, options), options);

/** Starts Node with `args` (a fixture script and its arguments, or `-e` and code) and leaves it running. */
export const startNode = (args: string[], options: ProcessOptions = {}): Proc => start([...(options.nodeArgs ?? []), ...args], options);

/** Processes started here and still running: a timed-out wait shows their stderr, which usually says why. */
const running = new Set<Proc>();
export const runningProcesses = (): Proc[] => [...running];

function start(argv: string[], options: ProcessOptions): Proc {
  const child = spawn(process.execPath, argv, { cwd: options.cwd ?? REPO, env: childEnv(options), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exit = new Promise<Exit>((resolve) =>
    child.on('close', (code, signal) => {
      running.delete(proc);
      resolve({ code, signal });
    }),
  );
  const proc: Proc = {
    child,
    pid: child.pid ?? -1,
    stdout: () => stdout,
    stderr: () => stderr,
    exit,
    waitForStderr: (pattern, timeoutMs) => waitForStderr(proc, pattern, timeoutMs),
    stop: (graceMs) => stop(proc, graceMs),
  };
  running.add(proc);
  return proc;
}

function waitForStderr(proc: Proc, pattern: RegExp, timeoutMs = 30_000): Promise<RegExpExecArray> {
  const what = `pid ${proc.pid} to print ${pattern}`;
  return new Promise((resolve, reject) => {
    const settle = (outcome: () => void) => {
      clearTimeout(timer);
      proc.child.stderr!.off('data', check);
      proc.child.off('close', ended);
      outcome();
    };
    function check() {
      const match = pattern.exec(proc.stderr());
      if (match) settle(() => resolve(match));
    }
    function ended() {
      const match = pattern.exec(proc.stderr());
      settle(() => (match ? resolve(match) : reject(new Error(`waiting for ${what}, it exited: ${proc.stderr()}`))));
    }
    const timer = setTimeout(
      () => settle(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}: ${proc.stderr()}`))),
      timeoutMs,
    );
    proc.child.stderr!.on('data', check);
    proc.child.once('close', ended);
    check();
  });
}

async function stop(proc: Proc, graceMs = 10_000): Promise<Exit> {
  if (proc.child.exitCode !== null || proc.child.signalCode !== null) return proc.exit;
  proc.child.kill('SIGTERM');
  const timer = setTimeout(() => proc.child.kill('SIGKILL'), graceMs);
  try {
    return await proc.exit;
  } finally {
    clearTimeout(timer);
  }
}
