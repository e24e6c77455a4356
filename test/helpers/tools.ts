/**
 * The machine's tools that some tests need (moto_server, promtool, podman...). Where a tool is
 * missing its tests skip and say so; where CI requires it (`.ci/run` sets the tool's
 * PROFILE_SNAPSHOT_REQUIRE_* variable to 1), a missing tool fails them instead of skipping.
 */
import { spawnSync } from 'node:child_process';

/**
 * Whether every command runs (each probed with its arguments, exit 0). Throws when one does not and
 * `requireEnv` is 1; says on stderr which tests skip otherwise.
 */
export function toolsPresent(probes: Record<string, string[]>, requireEnv: string, install: string): boolean {
  const missing = Object.entries(probes)
    .filter(([command, args]) => spawnSync(command, args, { stdio: 'ignore' }).status !== 0)
    .map(([command]) => command);
  if (missing.length === 0) return true;
  if (process.env[requireEnv] === '1') {
    throw new Error(`${missing.join(', ')} not installed, and ${requireEnv}=1 forbids skipping the tests that need it (${install})`);
  }
  console.warn(`skipping the tests that need ${missing.join(', ')}: not installed (${install})`);
  return false;
}
