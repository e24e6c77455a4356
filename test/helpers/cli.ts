/** Runs the real CLI (bin/profile-snapshot.js over the compiled build/) in a child process. */
import { spawnSync } from 'node:child_process';
import { BIN, REPO } from './paths.js';

export { BIN };

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  env?: Record<string, string | undefined>;
  cwd?: string;
  /** Node's own options before the bin (e.g. a preload). */
  nodeArgs?: string[];
  timeoutMs?: number;
}

/** Runs the bin to its end. */
export function runCli(args: string[], options: CliOptions = {}): CliResult {
  // A clean environment: the caller's PROFILE_*/BASE_URL/URL must not leak into tests.
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' };
  for (const [k, v] of Object.entries(options.env ?? {})) if (v !== undefined) env[k] = v;
  const argv = [...(options.nodeArgs ?? []), BIN, ...args];
  const result = spawnSync(process.execPath, argv, {
    cwd: options.cwd ?? REPO,
    env,
    encoding: 'utf8',
    timeout: options.timeoutMs ?? 60_000,
  });
  return { code: result.status, signal: result.signal, stdout: result.stdout, stderr: result.stderr };
}
