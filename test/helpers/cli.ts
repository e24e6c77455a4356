/** Runs the real CLI (bin/profile-snapshot.js over the compiled build/) in a child process. */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO } from './store.js';

export const BIN = join(REPO, 'bin/profile-snapshot.js');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runCli(args: string[], options: { env?: Record<string, string | undefined>; cwd?: string } = {}): CliResult {
  // A clean environment: the caller's PROFILE_*/BASE_URL/URL must not leak into tests.
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' };
  for (const [k, v] of Object.entries(options.env ?? {})) if (v !== undefined) env[k] = v;
  const result = spawnSync(process.execPath, [BIN, ...args], { cwd: options.cwd ?? REPO, env, encoding: 'utf8', timeout: 60_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}
